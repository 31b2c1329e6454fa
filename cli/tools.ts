/** `armada tools …`: MCP tool servers (an OpenAPI converter, Armada's own services) and editor configuration. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { clientApiKey, missingClientKeyAdvice } from '../lib/keys';
import { addServer, EDITORS, EditorConfigError, listServers, maskContentSecrets, maskServerSecrets, removeServer, type Editor, type EditResult, type Location, type Scope, type ServerEntry } from '../lib/mcp/editorConfig';
import { headerValueProblem } from '../lib/mcp/requestValues';
import { hideSecretArguments } from '../lib/secretText';
import type { ServedTool } from '../lib/mcp/toolServer';
import { asksForHelp, parseSubcommandArgs, refuseExtraArguments, UsageError } from './options';

/**
 * The base URL of `--base-url` (or OPENAPI_BASE_URL, `tools serve`'s `--task-url` / `--scheduler-url`; named by
 * `from`), refused (exit 2) unless fetch can send requests to it: an http(s) URL without a user name or password
 * (fetch refuses those, and each tool error showed the URL, the password with it, to the model). Before, anything was
 * taken and every tool call failed.
 */
function baseUrlOption(value: string, from: string, keyFrom = '--api-key, --header or OPENAPI_API_KEY'): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new EditorConfigError(`${from} "${value}" is not an http(s) URL; give the service's URL, such as http://127.0.0.1:8080/v1`);
  if (url.username || url.password) throw new EditorConfigError(`${from} holds a user name or password, which fetch does not send from a URL; give the key with ${keyFrom} instead`);
  return value;
}

/**
 * What `tools config add --openapi` writes for the editor to run: an http(s) URL as given, or the absolute path of a
 * file that exists (the editor starts the server in a directory of its own, so a relative path would not be found
 * there). Anything else is refused now, instead of being written and failing when the editor starts the server.
 */
function openapiSource(value: string, cwd: string): string {
  if (/^https?:\/\/[^\s/?#]+/i.test(value)) return value;
  let file: string | undefined;
  try {
    file = value.startsWith('file:') ? fileURLToPath(value) : path.resolve(cwd, value);
  } catch {
    file = undefined;
  }
  if (!file || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    throw new EditorConfigError(`--openapi "${value}" is neither an http(s) URL nor a file that exists; give the document's URL or the path of its file`);
  }
  return file;
}

export const TOOLS_HELP = `armada tools — MCP tool servers for code editors

Usage:
  armada tools openapi <openapi-url-or-file> [--base-url URL] [--api-key KEY | --header 'Name: value']...
                       [--include OP]... [--exclude OP]... [--max-response-chars N] [--timeout SECONDS] [--list]
      An MCP server over stdio whose tools are the document's operations (OpenAPI 3.x or Swagger 2.0).
      --base-url overrides the document's server; --api-key goes where the document's security scheme says
      (default header X-API-Key); --include/--exclude take operationIds (repeatable or comma-separated);
      tools are named by operationId and described by summary + description; --timeout bounds the wait for the
      document and for each call's answer (default 30 s for the document, 60 s for a call);
      --list prints the tools (name, description, method, path, input schema) as JSON and exits. Env fallbacks: OPENAPI_BASE_URL, OPENAPI_API_KEY.

  armada tools serve [--task-url URL] [--scheduler-url URL] [--max-response-chars N] [--allow-partial]
      Armada's own services as MCP tools over stdio (tasks, attempts, logs, diffs, approvals; workflows and
      executions), from the running services' OpenAPI documents; tools are named by operationId. At start each
      service must answer with the key accepted, else one line names the service and reason and the exit code is
      1; --allow-partial serves the tools of the services that answered instead. It listens on no port (MCP over
      stdio); it calls the services where armada start serves them. Env: ARMADA_TASK_URL and ARMADA_SCHEDULER_URL
      (default: ARMADA_HOST, 127.0.0.1 for 0.0.0.0/::, and ARMADA_TASK_PORT / ARMADA_SCHEDULER_PORT, i.e.
      http://127.0.0.1:8887 and http://127.0.0.1:8883), ARMADA_API_KEY (scheduler X-API-Key; also the task
      service's bearer unless ARMADA_TASK_API_KEY is set). Without ARMADA_API_KEY or ARMADA_SCHEDULER_API_KEY the
      scheduler gets the key in $ARMADA_HOME/api-key, as armada sources does.

  armada tools config add <name> --editor EDITOR [--scope user|project] [--env KEY=VALUE]... [--dry-run [--show-secrets]] -- <command> [args…]
  armada tools config add <name> --editor EDITOR --openapi URL [--base-url URL] [--env KEY=VALUE]... [--dry-run [--show-secrets]]
  armada tools config list [--editor EDITOR] [--scope user|project] [--json] [--show-secrets]
  armada tools config remove <name> --editor EDITOR [--scope user|project] [--dry-run [--show-secrets]]
      EDITOR: ${EDITORS.join(', ')}. Default scope: user; project writes under the current directory.
      list --json prints the files and their servers as JSON (for scripts); without it, one line per server.
      list, and the file --dry-run prints, show env and headers values, --api-key/--header values and URL
      passwords as ***; --show-secrets shows them as the file holds (or would hold) them.
`;

const out = (s: string) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`);
const err = (s: string) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`);

function list(values: string[] | undefined): string[] {
  return (values ?? []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}

// The modules that read documents and serve tools (the MCP SDK, YAML, the config's schema) load once a command's
// arguments have parsed: a usage error or a bad flag is told without them, at once.
const openapiModule = () => require('../lib/mcp/openapiToTools') as typeof import('../lib/mcp/openapiToTools');
const serverModule = () => require('../lib/mcp/toolServer') as typeof import('../lib/mcp/toolServer');

/** A positive integer flag; undefined when not given (the tool server's default applies). */
function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new EditorConfigError(`${flag} must be a positive integer`);
  return n;
}

/** `--timeout SECONDS` in milliseconds: a positive number of seconds, at most an hour; undefined when not given. */
function timeoutOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !(seconds > 0) || seconds > 3600) throw new EditorConfigError('--timeout must be a number of seconds above 0 and at most 3600, such as 30 or 2.5');
  return Math.max(1, Math.round(seconds * 1000));
}

function version(): string {
  return (require('../package.json') as { version: string }).version;
}

async function runOpenapi(args: string[]): Promise<number> {
  const { values, positionals } = parseSubcommandArgs('tools', args, {
    'base-url': { type: 'string' },
    'api-key': { type: 'string' },
    header: { type: 'string', multiple: true },
    include: { type: 'string', multiple: true },
    exclude: { type: 'string', multiple: true },
    'max-response-chars': { type: 'string' },
    timeout: { type: 'string' },
    list: { type: 'boolean' },
  });
  // a key on the command line is there for every user of the host to read (ps, /proc/<pid>/cmdline) for as long as
  // the server runs, which is as long as the editor does
  hideSecretArguments();
  const source = positionals[0];
  if (!source) throw new UsageError('tools openapi', 'give exactly one OpenAPI document URL or file', 'tools');
  refuseExtraArguments('tools openapi', positionals, 1, 'tools');
  const maxResponseChars = positiveInt(values['max-response-chars'], '--max-response-chars');
  const timeoutMs = timeoutOption(values.timeout);
  const { loadOpenApiDocument, OpenApiDocumentError, openapiToTools } = openapiModule();
  const headers: Record<string, string> = {};
  for (const h of values.header ?? []) {
    const i = h.indexOf(':');
    if (i <= 0) throw new UsageError('tools openapi', `--header "${h}" is not "Name: value"`, 'tools');
    const name = h.slice(0, i).trim();
    const value = h.slice(i + 1).trim();
    // refused here, without the value (it may be a key): fetch's refusal read as a document that cannot be fetched
    const problem = headerValueProblem(value);
    if (problem) throw new UsageError('tools openapi', `--header ${name}: its value is not allowed in an HTTP header: ${problem}`, 'tools');
    headers[name.toLowerCase()] = value;
  }
  // refused before the document is fetched: a wrong --base-url is known at once
  const given = values['base-url'] !== undefined ? baseUrlOption(values['base-url'], '--base-url') : process.env.OPENAPI_BASE_URL ? baseUrlOption(process.env.OPENAPI_BASE_URL, 'OPENAPI_BASE_URL') : undefined;
  const docSource = /^https?:\/\//i.test(source) || source.startsWith('file://') ? source : path.resolve(source);
  let doc: Awaited<ReturnType<typeof loadOpenApiDocument>>;
  try {
    doc = await loadOpenApiDocument(docSource, headers, timeoutMs);
  } catch (e) {
    if (!(e instanceof OpenApiDocumentError)) throw e;
    err(`armada tools openapi: ${e.message}`);
    return 1;
  }
  const api = openapiToTools(doc, { include: list(values.include), exclude: list(values.exclude), documentUrl: docSource });
  // a name that selects nothing is most often a typo: said, or the tool would be missing without a word
  for (const flag of ['include', 'exclude'] as const) {
    for (const x of api.unmatched[flag]) err(`armada tools openapi: --${flag} ${x} names no operation of the document (neither an operationId nor a tool name that --list shows)`);
  }
  for (const s of api.skipped) err(`armada tools openapi: left out ${s.method ? `${s.method} ${s.path}` : `the operations of ${s.path}`}, which the document describes in a shape that cannot be read (${s.reason}); fix it there to serve it`);
  const baseUrl = given ?? api.serverUrl;
  if (!baseUrl) {
    err(`armada tools openapi: ${api.serverUrlUnusable ? `the document's server URL ${api.serverUrlUnusable}` : 'the document names no server URL'}; give --base-url`);
    return 2;
  }
  const apiKey = values['api-key'] ?? process.env.OPENAPI_API_KEY;
  const query: Record<string, string> = {};
  if (apiKey) {
    if (api.apiKey.in === 'query') query[api.apiKey.name] = apiKey;
    else headers[api.apiKey.name.toLowerCase()] = api.apiKey.bearer ? `Bearer ${apiKey}` : apiKey;
  }
  // the key, however it is sent, is taken out of every answer the model sees (a service may echo it)
  const tools: ServedTool[] = api.tools.map((tool) => ({ tool, target: { baseUrl, headers, query, secrets: apiKey ? [apiKey] : [] } }));
  if (values.list) {
    out(JSON.stringify(api.tools.map((t) => ({ name: t.name, description: t.description, method: t.method, path: t.path, inputSchema: t.inputSchema })), null, 2));
    return 0;
  }
  await serverModule().serveStdio(tools, { name: api.title, version: version(), maxResponseChars, timeoutMs });
  return 0;
}

async function runServe(args: string[]): Promise<number> {
  const { values, positionals } = parseSubcommandArgs('tools', args, {
    'task-url': { type: 'string' },
    'scheduler-url': { type: 'string' },
    'max-response-chars': { type: 'string' },
    'allow-partial': { type: 'boolean' },
  });
  refuseExtraArguments('tools serve', positionals, 0, 'tools');
  const maxResponseChars = positiveInt(values['max-response-chars'], '--max-response-chars');
  const { armadaTools, ServiceUnavailableError } = require('../lib/mcp/armadaTools') as typeof import('../lib/mcp/armadaTools');
  const { loadConfig } = require('../lib/config') as typeof import('../lib/config');
  const env = process.env;
  const config = loadConfig(env);
  // the keys as the scheduler CLI finds them: the variables, else the key armada start stored in $ARMADA_HOME/api-key.
  // That file holds the scheduler's (agents', traces') key, never the task service's, so it is not sent there.
  const taskKey = config.apiKeys.task ?? config.apiKeys.default;
  const schedulerKey = clientApiKey(config, 'scheduler');
  let tools: ServedTool[];
  try {
    tools = await armadaTools(
      [
        // where armada start serves them (ARMADA_HOST and the services' ports) unless a URL says otherwise
        { service: 'task', baseUrl: values['task-url'] !== undefined ? baseUrlOption(values['task-url'], '--task-url', 'ARMADA_TASK_API_KEY') : config.serviceUrls.task, headers: taskKey ? { authorization: `Bearer ${taskKey}` } : {} },
        {
          service: 'scheduler',
          baseUrl: values['scheduler-url'] !== undefined ? baseUrlOption(values['scheduler-url'], '--scheduler-url', 'ARMADA_API_KEY or ARMADA_SCHEDULER_API_KEY') : config.serviceUrls.scheduler,
          headers: schedulerKey ? { 'x-api-key': schedulerKey } : {},
          missingKeyAdvice: schedulerKey ? undefined : missingClientKeyAdvice(config, 'scheduler'),
        },
      ],
      { allowPartial: values['allow-partial'], warn: err },
    );
  } catch (e) {
    if (!(e instanceof ServiceUnavailableError)) throw e;
    // one line, exit 1: serving fewer tools silently would only surface later as "unknown tool"
    err(`armada tools serve: ${e.message} (use --allow-partial to serve the other services' tools)`);
    return 1;
  }
  if (!tools.length) {
    err('armada tools serve: no Armada service answered; start them (armada start), or set ARMADA_TASK_URL / ARMADA_SCHEDULER_URL (or ARMADA_HOST and the ports, as for armada start)');
    return 1;
  }
  await serverModule().serveStdio(tools, { name: 'armada', version: version(), maxResponseChars });
  return 0;
}

function editorOf(value: string | undefined, required: boolean): Editor | undefined {
  if (value === undefined) {
    if (required) throw new EditorConfigError(`--editor is required (${EDITORS.join(', ')})`);
    return undefined;
  }
  if (!(EDITORS as readonly string[]).includes(value)) throw new EditorConfigError(`--editor: "${value}" is not one of ${EDITORS.join(', ')}`);
  return value as Editor;
}

function scopeOf(value: string | undefined): Scope {
  if (value === undefined) return 'user';
  if (value !== 'user' && value !== 'project') throw new EditorConfigError(`--scope: "${value}" is not user or project`);
  return value;
}

function location(): Location {
  const os = require('node:os') as typeof import('node:os');
  return { home: os.homedir(), cwd: process.cwd(), appData: process.env.APPDATA };
}

/** The command that runs this CLI from an editor: this node binary and bin/armada, by absolute path. */
export function armadaCommand(): { command: string; args: string[] } {
  return { command: process.execPath, args: [path.resolve(__dirname, '..', 'bin', 'armada')] };
}

/**
 * What `--dry-run` prints: the file's name, then its text as it would be written, with the servers' secrets as `***`
 * the way `list` shows them (a terminal's scrollback, a screen shared, a CI log), and a line saying so; the text as
 * it is with --show-secrets. Before session 52 it printed the values just typed (`--env OPENAPI_API_KEY=…`) as given.
 */
function dryRunOutput(r: EditResult, showSecrets: boolean | undefined): string {
  if (showSecrets) return `# ${r.file}\n${r.content}`;
  const masked = maskContentSecrets(r.content, r.key);
  if (masked === r.content) return `# ${r.file}\n${r.content}`;
  const note = '# secret values (env and headers values, --api-key/--header values, URL passwords) are shown as ***; --show-secrets shows them';
  return `# ${r.file}\n${note}\n${masked ?? '(the text could not be read back to mask its secrets; --show-secrets shows it)\n'}`;
}

function runConfig(argv: string[]): number {
  const dashdash = argv.indexOf('--');
  const args = dashdash === -1 ? argv : argv.slice(0, dashdash);
  const command = dashdash === -1 ? [] : argv.slice(dashdash + 1);
  const { values, positionals } = parseSubcommandArgs('tools', args, {
    editor: { type: 'string' },
    scope: { type: 'string' },
    env: { type: 'string', multiple: true },
    openapi: { type: 'string' },
    'base-url': { type: 'string' },
    'dry-run': { type: 'boolean' },
    json: { type: 'boolean' },
    'show-secrets': { type: 'boolean' },
  });
  const [action, name] = positionals;
  if (!action) {
    err(TOOLS_HELP); // like armada tools without a subcommand
    return 2;
  }
  // add and remove take the server's name, list nothing
  if (action === 'add' || action === 'remove' || action === 'list') refuseExtraArguments(`tools config ${action}`, positionals, action === 'list' ? 1 : 2, 'tools');
  const loc = location();
  switch (action) {
    case 'add': {
      if (!name) throw new EditorConfigError('usage: armada tools config add <name> --editor EDITOR (-- <command> [args…] | --openapi URL)');
      const env: Record<string, string> = {};
      for (const kv of values.env ?? []) {
        const i = kv.indexOf('=');
        if (i <= 0) throw new EditorConfigError(`--env "${kv}" is not KEY=VALUE`);
        env[kv.slice(0, i)] = kv.slice(i + 1); // the value exactly as given
      }
      let entry: ServerEntry;
      if (values.openapi !== undefined) {
        if (command.length) throw new EditorConfigError('give either --openapi URL or -- <command>, not both');
        const self = armadaCommand();
        entry = { command: self.command, args: [...self.args, 'tools', 'openapi', openapiSource(values.openapi, loc.cwd), ...(values['base-url'] !== undefined ? ['--base-url', baseUrlOption(values['base-url'], '--base-url', '--env OPENAPI_API_KEY=…')] : [])], env };
      } else {
        if (!command.length) throw new EditorConfigError('give the server command after --, or --openapi URL');
        if (values['base-url'] !== undefined) throw new EditorConfigError('--base-url goes with --openapi');
        entry = { command: command[0] as string, args: command.slice(1), env };
      }
      const r = addServer({ editor: editorOf(values.editor, true) as Editor, scope: scopeOf(values.scope), name, entry, location: loc, dryRun: values['dry-run'] });
      if (values['dry-run']) out(dryRunOutput(r, values['show-secrets']));
      for (const m of r.messages) err(m);
      return 0;
    }
    case 'remove': {
      if (!name) throw new EditorConfigError('usage: armada tools config remove <name> --editor EDITOR');
      const r = removeServer({ editor: editorOf(values.editor, true) as Editor, scope: scopeOf(values.scope), name, location: loc, dryRun: values['dry-run'] });
      if (values['dry-run'] && r.removed) out(dryRunOutput(r, values['show-secrets']));
      for (const m of r.messages) err(m);
      return r.removed ? 0 : 1;
    }
    case 'list': {
      const listed = listServers({ editor: editorOf(values.editor, false), scope: values.scope ? scopeOf(values.scope) : undefined, location: loc });
      // keys and passwords as *** unless asked for (a terminal's scrollback, a screen shared, a CI log)
      const found = values['show-secrets'] ? listed : listed.map((f) => ({ ...f, servers: Object.fromEntries(Object.entries(f.servers).map(([n, e]) => [n, maskServerSecrets(e)])) }));
      if (values.json) {
        out(JSON.stringify(found, null, 2));
        return 0;
      }
      if (!found.length) out('no MCP configuration files found');
      for (const f of found) {
        out(`${f.editor} (${f.scope}): ${f.file}${f.error ? ` — ${f.error}` : ''}`);
        for (const [n, e] of Object.entries(f.servers)) {
          // the file is the editor's, and may hold anything: only a string command and string args are shown
          const s = (e && typeof e === 'object' ? e : {}) as { command?: unknown; args?: unknown; url?: unknown };
          const args = Array.isArray(s.args) ? s.args.filter((a): a is string => typeof a === 'string') : [];
          const shown = typeof s.command === 'string' ? [s.command, ...args].join(' ') : typeof s.url === 'string' ? s.url : '(no command)';
          out(`  ${n}: ${shown}`);
        }
      }
      return 0;
    }
    default:
      throw new UsageError('tools config', `unknown action '${action}'`, 'tools');
  }
}

export async function runTools(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined) {
    err(TOOLS_HELP); // like armada without a command: the usage on stderr, exit 2
    return 2;
  }
  if (sub === 'help' || asksForHelp(argv)) {
    out(TOOLS_HELP);
    return 0;
  }
  try {
    switch (sub) {
      case 'openapi':
        return await runOpenapi(rest);
      case 'serve':
        return await runServe(rest);
      case 'config':
        return runConfig(rest);
      default:
        throw new UsageError('tools', `unknown subcommand '${sub}'`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      err(e.message);
      return 2;
    }
    if (e instanceof EditorConfigError) {
      err(`armada tools: ${e.message}`);
      return 2;
    }
    throw e;
  }
}
