/**
 * Strict option parsing for the `armada` commands: `--help`/`-h` asks for the command's help, and a bad option is one
 * line naming it and pointing at `armada <command> --help` (exit 2). Nothing runs before the options are known good.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** A usage error: one line naming the problem and where the help is (`helpCommand`, default `command`), exit 2. */
export class UsageError extends Error {
  constructor(
    readonly command: string,
    problem: string,
    helpCommand = command,
  ) {
    super(`armada ${command}: ${problem}; run armada ${helpCommand} --help`);
    this.name = 'UsageError';
  }
}

/** Whether `err` is one of node:util parseArgs's errors (their `code` starts with ERR_PARSE_ARGS). */
export function isParseArgsError(err: unknown): err is Error {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}

/** parseArgs's message, first sentence only and lower-cased: "Unknown option '--x'. To specify …" → "unknown option '--x'". */
export function parseArgsProblem(err: Error): string {
  const first = err.message.split(/\.\s/)[0] ?? err.message;
  return first.charAt(0).toLowerCase() + first.slice(1);
}

/** Whether the arguments ask for help (before a `--`). */
export function asksForHelp(args: string[]): boolean {
  for (const a of args) {
    if (a === '--') return false;
    if (a === '--help' || a === '-h') return true;
  }
  return false;
}

/**
 * The values of `args` for `command`, parsed strictly (no positionals); `undefined` when the arguments ask for help.
 * Throws UsageError for an unknown option, a missing value or a stray argument.
 */
export function parseCommandOptions<O extends Options>(command: string, args: string[], options: O): ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: false }>>['values'] | undefined {
  if (asksForHelp(args)) return undefined;
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    if (isParseArgsError(err)) throw new UsageError(command, parseArgsProblem(err));
    throw err;
  }
}

/**
 * The options and positionals of a command with subcommands (`armada sources list …`), parsed strictly; a bad option
 * is a UsageError of `command`, whose --help covers its subcommands.
 */
export function parseSubcommandArgs<O extends Options>(command: string, args: string[], options: O): ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: true }>> {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: true });
  } catch (err) {
    if (isParseArgsError(err)) throw new UsageError(command, parseArgsProblem(err));
    throw err;
  }
}

/**
 * Throws the UsageError of `command` naming the first of `positionals` past the `max` it takes (parseArgs's own
 * wording for a command that takes none): an extra argument is a mistake to point out, never something to ignore.
 */
export function refuseExtraArguments(command: string, positionals: readonly string[], max: number, helpCommand = command): void {
  const extra = positionals[max];
  if (extra !== undefined) throw new UsageError(command, `unexpected argument '${extra}'`, helpCommand);
}
