/** `armada worktrees prune [--dry-run]`: the worktree janitor of this host, run once by an operator. */
import { pruneOrphanWorktrees } from '../activities/git/worktreeJanitor';
import { ConfigError, configWarning, loadConfig } from '../lib/config';
import { createPool } from '../lib/db/pool';
import { createLogger } from '../lib/logger';
import { asksForHelp, parseSubcommandArgs, refuseExtraArguments, UsageError } from './options';

export const WORKTREES_HELP = `armada worktrees — attempt worktrees of this host ($ARMADA_HOME/worktrees)

Usage:
  armada worktrees prune [--dry-run]
      Removes worktrees whose attempt no longer exists in the database (task or project deleted) and that are
      older than 10 minutes: the directory, its registration in the repository and its managed branch
      (<branchPrefix>/task-<taskId>-attempt-<n>). Prints one JSON line per worktree removed (--dry-run: that
      would be removed, nothing is touched). Workers do the same every attempts.janitorIntervalMs.
      Needs DATABASE_URL (the database this ARMADA_HOME belongs to). Exit 1 when an entry could not be removed.
`;

export async function runWorktrees(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined) {
    process.stderr.write(WORKTREES_HELP); // like armada without a command: the usage on stderr, exit 2
    return 2;
  }
  if (sub === 'help' || asksForHelp(argv)) {
    process.stdout.write(WORKTREES_HELP);
    return 0;
  }
  if (sub !== 'prune') throw new UsageError('worktrees', `unknown subcommand '${sub}'`);
  const { values, positionals } = parseSubcommandArgs('worktrees', rest, { 'dry-run': { type: 'boolean' } });
  refuseExtraArguments('worktrees prune', positionals, 0, 'worktrees');
  const config = loadConfig();
  if (!config.databaseUrl) throw new ConfigError('DATABASE_URL is required for `armada worktrees prune` (the database this ARMADA_HOME belongs to)');
  // stdout carries the JSON lines; logs go to stderr
  const logger = createLogger(config.logLevel, 'armada', process.stderr);
  const warning = configWarning(config);
  if (warning) logger.warn({ configPath: config.missingConfigFile }, warning);
  const db = createPool(config.databaseUrl, logger, { max: 2 });
  try {
    const { pruned, failed } = await pruneOrphanWorktrees({ db, config, logger }, { dryRun: values['dry-run'] });
    for (const p of pruned) process.stdout.write(`${JSON.stringify(p)}\n`);
    return failed.length ? 1 : 0;
  } finally {
    await db.end();
  }
}
