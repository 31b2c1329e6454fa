/** `armada sources list|add|update|delete|health|flows`: the scheduler's sources over HTTP. */
import fs from 'node:fs';
import { hideSecretArguments } from '../lib/secretText';
import { isUuid } from '../lib/ids';
import { parseSubcommandArgs, refuseExtraArguments, UsageError } from './options';
import { CliError, pathSegment, processIo, runSchedulerCommand, schedulerRequest, table, type CliIo } from './schedulerClient';

export const SOURCES_HELP = `armada sources — manage the scheduler's sources (external workflow platforms)

Usage:
  armada sources list [--status active|inactive] [--limit N] [--offset N] [--json]
  armada sources add --type TYPE --url URL [--name NAME] [--api-key-file PATH | --api-key KEY] [--json]
  armada sources update SOURCE [--name NAME] [--type TYPE] [--url URL] [--api-key-file PATH | --api-key KEY] [--status active|inactive] [--force] [--json]
  armada sources delete SOURCE       (also deletes the workflows and schedules that use it)
  armada sources health SOURCE       (checks the platform now)
  armada sources flows [SOURCE]      (the platform's runnable flows; without SOURCE, those of every source)

SOURCE is a source's id or its name (a name several sources share must be given as an id).
TYPE: flow-builder (alias langflow), automagik-hive, automagik-agents.
A flow task's "flow" may be any of a flow's ID, ENDPOINT or NAME as listed by "armada sources flows".
update --url/--type/--api-key is refused (HTTP 409, naming them) when the platform then named lacks flows the
source's workflows run; --force makes the change anyway (a planned move: those runs fail until the flows are there).

The platform's API key: --api-key-file PATH (recommended) reads it from a file, or from stdin with "-"
(pass show langflow | armada sources add … --api-key-file -), so it is on no command line; a trailing line break is
dropped. --api-key KEY also works, but a command line can be read by every local user (ps, /proc/<pid>/cmdline)
until armada masks it as it starts, and stays in your shell's history. An empty --api-key "" clears the key.

Environment: ARMADA_SCHEDULER_URL (default: where armada start serves it, ARMADA_HOST and ARMADA_SCHEDULER_PORT,
http://127.0.0.1:8883), ARMADA_API_KEY or ARMADA_SCHEDULER_API_KEY (default: the key in $ARMADA_HOME/api-key).
See docs/scheduler.md#cli.
`;

interface SourceView {
  id: string;
  name: string;
  source_type: string;
  url: string;
  status: string;
  has_api_key: boolean;
}

interface FlowView {
  id: string;
  name: string;
  endpoint_name: string | null;
  description: string;
  updated_at: string | null;
}

/** The most `--api-key-file` reads: the scheduler takes keys of at most 4096 characters; a device is not read whole. */
const KEY_FILE_MAX_BYTES = 16 * 1024;

/**
 * The key `--api-key-file` names: the text of the file (`-`: stdin) without its trailing line break(s), so the key is
 * never an argument of any process. stdin must not be a terminal (the key would be shown as it is typed), and the
 * text must be one line: a file of several lines (a private key given by mistake) is not sent anywhere.
 */
async function keyFromFile(file: string, io: CliIo): Promise<string> {
  const stdin = io.stdin ?? process.stdin;
  const from = `--api-key-file ${file}`;
  if (file === '-' && stdin.isTTY) throw new CliError(`${from}: stdin is a terminal, which would show the key as it is typed; pipe the key in (… | armada sources …) or give a file`, 2);
  const stream: NodeJS.ReadableStream = file === '-' ? stdin : fs.createReadStream(file);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
      size += bytes.length;
      if (size > KEY_FILE_MAX_BYTES) throw new CliError(`${from}: more than ${KEY_FILE_MAX_BYTES} bytes, longer than any key; give a file that holds only the key`, 2);
      chunks.push(bytes);
    }
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`${from}: cannot read it (${(err as Error).message})`, 2);
  }
  const key = Buffer.concat(chunks).toString('utf8').replace(/[\r\n]+$/, '');
  if (!key) throw new CliError(`${from}: it holds no key (to clear a source's key, give --api-key "")`, 2);
  if (/[\r\n]/.test(key)) throw new CliError(`${from}: it holds more than one line; give a file that holds only the key`, 2);
  return key;
}

const flowCells = (f: FlowView) => [f.id, f.name, f.endpoint_name ?? '-', f.updated_at ?? '-', f.description];

/** The id of the source `v` names: an id as it is, else the one source of that name (the API takes ids only). */
async function sourceId(env: NodeJS.ProcessEnv, v: string): Promise<string> {
  if (isUuid(v)) return v;
  const matches: SourceView[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await schedulerRequest<{ items: SourceView[]; has_more: boolean }>(env, 'GET', `/api/v1/sources?limit=100&offset=${offset}`, undefined, ['items']);
    matches.push(...page.items.filter((s) => s.name === v));
    if (!page.has_more) break;
  }
  if (matches.length === 1) return (matches[0] as SourceView).id;
  if (!matches.length) throw new CliError(`no source is named "${v}" (armada sources list shows them)`);
  throw new CliError(`${matches.length} sources are named "${v}" (${matches.map((s) => s.id).join(', ')}): give the id`);
}

const sourceRows = (items: SourceView[]) =>
  table([['ID', 'NAME', 'TYPE', 'STATUS', 'URL'], ...items.map((s) => [s.id, s.name, s.source_type, s.status, s.url])]);

/** The arguments (positionals) each subcommand takes at most: SOURCE for those that name one. */
const ARGUMENTS: Record<string, number> = { list: 0, add: 0, update: 1, delete: 1, health: 1, flows: 1 };

export function runSources(argv: string[], io: CliIo = processIo()): Promise<number> {
  return runSchedulerCommand(SOURCES_HELP, argv, io, (sub, args) => sources(sub, args, io));
}

async function sources(sub: string, args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseSubcommandArgs('sources', args, {
    status: { type: 'string' },
    limit: { type: 'string' },
    offset: { type: 'string' },
    type: { type: 'string' },
    url: { type: 'string' },
    name: { type: 'string' },
    'api-key': { type: 'string' },
    'api-key-file': { type: 'string' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  // --api-key KEY is on the command line, which every user of the host reads in ps: shown as *** while this runs
  hideSecretArguments();
  if (Object.hasOwn(ARGUMENTS, sub)) refuseExtraArguments(`sources ${sub}`, positionals, ARGUMENTS[sub] as number, 'sources');
  const usage = (problem: string) => new UsageError(`sources ${sub}`, problem, 'sources');
  const show = (value: unknown, human: string) => io.stdout(values.json ? `${JSON.stringify(value, null, 2)}\n` : human);
  if (values['api-key'] !== undefined && values['api-key-file'] !== undefined) throw usage('give --api-key-file or --api-key, not both');
  // read before anything is sent: a file that cannot be read stops the command with nothing changed
  const apiKey = values['api-key-file'] !== undefined && (sub === 'add' || sub === 'update') ? await keyFromFile(values['api-key-file'], io) : values['api-key'];
  const id = async () => {
    const v = positionals[0];
    if (!v) throw usage('the SOURCE (id or name) is required');
    return pathSegment('source', await sourceId(io.env, v));
  };
  switch (sub) {
    case 'list': {
      const q = new URLSearchParams();
      if (values.status) q.set('status', values.status);
      if (values.limit) q.set('limit', values.limit);
      if (values.offset) q.set('offset', values.offset);
      const page = await schedulerRequest<{ items: SourceView[]; total: number; has_more: boolean }>(io.env, 'GET', `/api/v1/sources${q.size ? `?${q}` : ''}`, undefined, ['items']);
      show(page, `${sourceRows(page.items)}${page.items.length} of ${page.total} source(s)${page.has_more ? ' (more with --offset)' : ''}\n`);
      return 0;
    }
    case 'add': {
      if (!values.type || !values.url) throw usage('--type and --url are required');
      const body: Record<string, unknown> = { source_type: values.type, url: values.url };
      if (values.name) body.name = values.name;
      if (apiKey) body.api_key = apiKey;
      const s = await schedulerRequest<SourceView>(io.env, 'POST', '/api/v1/sources', body);
      show(s, `created source ${s.name} (${s.id}), ${s.source_type} at ${s.url}, ${s.status}\n`);
      return 0;
    }
    case 'update': {
      const body: Record<string, unknown> = {};
      if (values.name !== undefined) body.name = values.name;
      if (values.type !== undefined) body.source_type = values.type;
      if (values.url !== undefined) body.url = values.url;
      if (apiKey !== undefined) body.api_key = apiKey === '' ? null : apiKey;
      if (values.status !== undefined) body.status = values.status;
      if (!Object.keys(body).length) throw usage('give at least one of --name, --type, --url, --api-key, --status');
      const s = await schedulerRequest<SourceView>(io.env, 'PATCH', `/api/v1/sources/${await id()}${values.force ? '?force=true' : ''}`, body);
      show(s, `updated source ${s.name} (${s.id}), ${s.source_type} at ${s.url}, ${s.status}\n`);
      return 0;
    }
    case 'delete': {
      const r = await schedulerRequest<{ id: string; deleted_workflows: string[] }>(io.env, 'DELETE', `/api/v1/sources/${await id()}`, undefined, ['deleted_workflows']);
      show(r, `deleted source ${r.id}${r.deleted_workflows.length ? ` and workflows ${r.deleted_workflows.join(', ')}` : ''}\n`);
      return 0;
    }
    case 'health': {
      const r = await schedulerRequest<{ id: string; healthy: boolean; status: string; error: string | null }>(io.env, 'POST', `/api/v1/sources/${await id()}/health`);
      show(r, `${r.healthy ? 'healthy' : `unhealthy: ${r.error}`} (status ${r.status})\n`);
      return r.healthy ? 0 : 1;
    }
    case 'flows': {
      if (positionals[0] === undefined) {
        type Listed = FlowView & { source_name: string };
        const all = await schedulerRequest<{ flows: Listed[]; sources: { name: string; error: string | null }[] }>(io.env, 'GET', '/api/v1/flows', undefined, ['flows', 'sources']);
        show(all, table([['SOURCE', 'ID', 'NAME', 'ENDPOINT', 'UPDATED', 'DESCRIPTION'], ...all.flows.map((f) => [f.source_name, ...flowCells(f)])]));
        for (const s of all.sources) if (s.error && !values.json) io.stderr(`armada: source ${s.name}: ${s.error}\n`);
        return all.sources.some((s) => s.error) ? 1 : 0;
      }
      const r = await schedulerRequest<{ flows: FlowView[] }>(io.env, 'GET', `/api/v1/sources/${await id()}/flows`, undefined, ['flows']);
      show(r, table([['ID', 'NAME', 'ENDPOINT', 'UPDATED', 'DESCRIPTION'], ...r.flows.map(flowCells)]));
      return 0;
    }
    default:
      throw new UsageError('sources', `unknown subcommand '${sub}'`);
  }
}
