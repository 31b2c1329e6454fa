/**
 * HTTP client of the scheduler for the CLI, configured like `armada start` (lib/config.ts): URL from
 * ARMADA_SCHEDULER_URL, else ARMADA_HOST and ARMADA_SCHEDULER_PORT; key from ARMADA_SCHEDULER_API_KEY /
 * ARMADA_API_KEY, else $ARMADA_HOME/api-key.
 */
import { fetchFailure } from '../lib/http/fetchFailure';
import { fetchFollowingRedirects, RedirectElsewhere, RedirectError } from '../lib/http/redirects';
import { clientApiKey, missingClientKeyAdvice } from '../lib/keys';
import { asksForHelp, UsageError } from './options';

export interface CliIo {
  env: NodeJS.ProcessEnv;
  /** where `--api-key-file -` reads the key (default process.stdin) */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export const processIo = (): CliIo => ({
  env: process.env,
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
});

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/**
 * `name` as one segment of a request path. `.` and `..` cannot be one: every URL parser resolves them (and their
 * %2E forms) away, so `/workflows/../schedules` would ask for `/schedules`; no workflow can have such a name.
 */
export function pathSegment(what: string, name: string): string {
  if (name === '.' || name === '..') throw new CliError(`no ${what} is named "${name}": . and .. are never names (a URL path cannot carry them)`);
  return encodeURIComponent(name);
}

/**
 * Calls the scheduler; a non-2xx answer becomes a CliError carrying the API's `detail`. A 2xx answer must be a JSON
 * object whose `arrays` fields are arrays (what the command then lists): anything else is the answer of something
 * other than the scheduler (a proxy's page, another service on that port) and a CliError saying so, never a
 * TypeError and its stack when the command reads it (until session 53).
 */
export async function schedulerRequest<T>(
  env: NodeJS.ProcessEnv,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  arrays: readonly string[] = [],
): Promise<T> {
  // loaded here, not at the top, so a usage error is told before the config's schema is built
  const { loadConfig } = require('../lib/config') as typeof import('../lib/config');
  const config = loadConfig(env);
  const key = clientApiKey(config, 'scheduler');
  if (!key) {
    throw new CliError(`no scheduler API key: ${missingClientKeyAdvice(config, 'scheduler')}`);
  }
  const base = config.serviceUrls.scheduler;
  const url = `${base}${path}`;
  let res: Response;
  try {
    // a redirect is followed within the scheduler's origin only (docs/scheduler.md, "CLI"): the key, and the request,
    // go nowhere else. Until session 53 one to another origin was followed without the key (a 401 from whoever
    // answered there, or their data printed as the scheduler's).
    res = await fetchFollowingRedirects(
      url,
      {
        method,
        headers: { 'x-api-key': key, accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      },
      ['x-api-key'],
      { otherOrigins: 'refuse' },
    );
  } catch (err) {
    if (err instanceof RedirectElsewhere) {
      throw new CliError(
        `the scheduler at ${base} answered ${method} ${path} with HTTP ${err.status}, a redirect to another origin (${err.origin}), which is not followed: armada calls the scheduler's own origin only; if the scheduler has moved there, set ARMADA_SCHEDULER_URL to its URL`,
      );
    }
    // an answer came: not a scheduler that cannot be reached
    if (err instanceof RedirectError) throw new CliError(`the scheduler at ${base} answered ${method} ${path} with a redirect that is not followed: ${err.message}`);
    const failure = fetchFailure(err);
    throw new CliError(
      `cannot reach the scheduler at ${base}: ${failure.code ?? failure.reason}; is armada running? If the scheduler is elsewhere, set ARMADA_SCHEDULER_URL (or ARMADA_HOST and ARMADA_SCHEDULER_PORT as for armada start)`,
    );
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  if (!res.ok) {
    const detail = json && typeof json === 'object' && 'detail' in json ? String((json as { detail: unknown }).detail) : `HTTP ${res.status}`;
    throw new CliError(`${detail} (HTTP ${res.status})`);
  }
  const notObject = json === null ? !!arrays.length : typeof json !== 'object' || Array.isArray(json);
  const missing = notObject ? undefined : arrays.find((field) => !Array.isArray((json as Record<string, unknown>)[field]));
  if (notObject || missing !== undefined) {
    const type = res.headers.get('content-type') ?? 'no content type';
    throw new CliError(
      `the answer to ${method} ${path} from ${base} (HTTP ${res.status}, ${type.slice(0, 100)}) is not the scheduler's: ${notObject ? 'not a JSON object' : `no "${missing}" list in it`}; ` +
        'check that ARMADA_SCHEDULER_URL (or ARMADA_HOST and ARMADA_SCHEDULER_PORT) names the Armada scheduler, of the same version as this armada',
    );
  }
  return json as T;
}

/**
 * Runs `armada <group> <sub> …` (sources, workflows, schedules) with `run`: without a subcommand the group's help goes
 * to stderr with exit 2 (like `armada` without a command), --help/-h prints it (exit 0); a UsageError is its one line,
 * exit 2, and a CliError its message with its exit code.
 */
export async function runSchedulerCommand(help: string, argv: string[], io: CliIo, run: (sub: string, args: string[]) => Promise<number>): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined) {
    io.stderr(help);
    return 2;
  }
  if (sub === 'help' || asksForHelp(argv)) {
    io.stdout(help);
    return 0;
  }
  try {
    return await run(sub, rest);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`${err.message}\n`);
      return 2;
    }
    if (!(err instanceof CliError)) throw err;
    io.stderr(`armada: ${err.message}\n`);
    return err.exitCode;
  }
}

/** Left-aligned columns, for list output. */
export function table(rows: string[][]): string {
  if (!rows.length) return '';
  const widths = (rows[0] as string[]).map((_c, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return `${rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n')}\n`;
}
