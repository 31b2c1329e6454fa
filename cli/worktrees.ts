/** `armada worktrees prune [--dry-run]`: the worktree janitor of this host, run once by an operator. */
import { parseArgs } from 'node:util';
import { pruneOrphanWorktrees } from '../activities/git/worktreeJanitor';
import { ConfigError, configWarning, loadConfig } from '../lib/config';
import { createPool } from '../lib/db/pool';
import { createLogger } from '../lib/logger';

export const WORKTREES_HELP = `armada worktrees — attempt worktrees of this host ($ARMADA_HOME/worktrees)

Usage:
  armada worktrees prune [--dry-run]
      Removes worktrees whose attempt no longer exists in the database (task or project deleted) and that are
      older than 10 minutes: the directory, its registration in the repository and its managed branch
      (<branchPrefix>/task-<taskId>-attempt-<n>). Prints one JSON line per worktree removed (--dry-run: that
      would be removed, nothing is touched). Workers do the same every attempts.janitorIntervalMs.
      Needs DATABASE_URL (the database this ARMADA_HOME belongs to). Exit 1 when an entry could not be removed.
`;

const out = (s: string) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`);
const err = (s: string) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`);

export async function runWorktrees(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === 'help' || sub === '--help' || sub === '-h') {
    out(WORKTREES_HELP);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'prune') {
    err(`armada worktrees: unknown subcommand "${sub}" (armada worktrees --help)`);
    return 2;
  }
  let values: { 'dry-run'?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({ args: rest, options: { 'dry-run': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (e) {
    err(`armada worktrees prune: ${(e as Error).message} (usage: armada worktrees prune [--dry-run])`);
    return 2;
  }
  if (values.help) {
    out(WORKTREES_HELP);
    return 0;
  }
  const config = loadConfig();
  if (!config.databaseUrl) throw new ConfigError('DATABASE_URL is required for `armada worktrees prune` (the database this ARMADA_HOME belongs to)');
  // stdout carries the JSON lines; logs go to stderr
  const logger = createLogger(config.logLevel, 'armada', process.stderr);
  const warning = configWarning(config);
  if (warning) logger.warn({ configPath: config.missingConfigFile }, warning);
  const db = createPool(config.databaseUrl, logger, { max: 2 });
  try {
    const { pruned, failed } = await pruneOrphanWorktrees({ db, config, logger }, { dryRun: values['dry-run'] });
    for (const p of pruned) out(JSON.stringify(p));
    return failed.length ? 1 : 0;
  } finally {
    await db.end();
  }
}
