/**
 * The MCP stdio transport of the tool servers: one JSON-RPC message per line on stdin, answers on stdout, as the SDK's
 * StdioServerTransport, but a line that is not a message the server can take is answered with the JSON-RPC 2.0
 * error its client waits for instead of being dropped (the SDK's transport only reports it to `onerror`, so a client
 * waited forever for the answer of a request it had written wrong):
 *
 * - not JSON: `-32700` (parse error), id null;
 * - JSON that is not one JSON-RPC 2.0 message (`jsonrpc` other than "2.0", an id that is not a string or integer, no
 *   `method`, a batch array: MCP has no batches since its 2025-06-18 revision): `-32600` (invalid request), with the
 *   request's id when one can be read, else null;
 * - a request with a member JSON-RPC does not name (`"extra": 1`): `-32600` naming it (it was said to have params
 *   that are no object);
 * - a request of a method the server handles whose params are not that method's (`tools/call` without a `name`):
 *   `-32602` (invalid params); the SDK answered `-32603`, an internal error, for a mistake of the client's; a
 *   `tools/call` whose arguments hold a `"__proto__"` key, which the SDK's schema drops, `-32602` naming it;
 * - a number JSON.parse cannot read as written: beyond a double (`1e400`, read as Infinity) or nonzero and too small
 *   for one (`1e-400`, read as 0, so a `tools/call` sent 0 for a positive-only argument): in a handled request's
 *   params `-32602` naming it (a tool call sends nothing); as the id `-32600`, id null (an answer naming 0 would name
 *   another request); in a notification, the notification is dropped.
 */
import { StringDecoder } from 'node:string_decoder';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ClientRequestSchema, ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { UNDERFLOW_MESSAGE, underflowingNumberPath } from '../jsonNumbers';
import { nonFiniteNumberPath } from './requestValues';

/** The longest line read (the SDK's transport's bound); a longer one is answered as an invalid request. */
export const MAX_MESSAGE_CHARS = 10 * 1024 * 1024;

type RequestId = string | number;
type ErrorAnswer = { jsonrpc: '2.0'; id: RequestId | null; error: { code: number; message: string } };

const errorAnswer = (id: RequestId | null, code: number, message: string): ErrorAnswer => ({ jsonrpc: '2.0', id, error: { code, message } });

function readableId(value: unknown): RequestId | null {
  const id = value && typeof value === 'object' && !Array.isArray(value) ? (value as { id?: unknown }).id : undefined;
  return typeof id === 'string' || Number.isSafeInteger(id) ? (id as RequestId) : null;
}

/**
 * What is wrong with a message's params, from the SDK's schema issues: `"params" must be an object` when it is not
 * one, else the first issue's place (`"params._meta.progressToken" …`); it said "must be an object" of any params the
 * schema refused, such as `{"_meta":{"progressToken":1e400}}`.
 */
type Issue = { path: readonly PropertyKey[]; message: string; code?: string; keys?: readonly string[]; errors?: readonly (readonly Issue[])[] };
function paramsProblem(issues: readonly Issue[]): string | undefined {
  // a union's issue holds each branch's issues (the request branch first), their paths from where the union is
  const stack: { issue: Issue; at: readonly PropertyKey[] }[] = issues.map((issue) => ({ issue, at: [] })).reverse();
  while (stack.length) {
    const { issue, at } = stack.pop() as { issue: Issue; at: readonly PropertyKey[] };
    const path = [...at, ...issue.path];
    if (path[0] === 'params' && path.length > 1) return `"${path.map(String).join('.')}": ${issue.message.toLowerCase()}`;
    for (const branch of [...(issue.errors ?? [])].reverse()) for (const inner of [...branch].reverse()) stack.push({ issue: inner, at: path });
  }
  return undefined;
}

/**
 * The members of a request that JSON-RPC does not name (`{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`), which
 * the SDK's request schema refuses: the answer said `"params" must be an object` of a message whose params were
 * fine or absent (session 49's outside round). From the request branch of the message union (its first).
 */
function unknownMembersProblem(issues: readonly Issue[]): string | undefined {
  const request = issues.find((i) => i.code === 'invalid_union' && i.path.length === 0)?.errors?.[0];
  const keys = request?.find((i) => i.code === 'unrecognized_keys' && i.path.length === 0)?.keys;
  if (!keys?.length) return undefined;
  const named = keys.map((k) => JSON.stringify(k)).join(', ');
  return `${named} ${keys.length > 1 ? 'are not members' : 'is not a member'} of a JSON-RPC request (jsonrpc, id, method, params)`;
}

/** Each client request's params schema, by method (the SDK's own schemas). */
const REQUEST_SCHEMAS = new Map(ClientRequestSchema.options.map((schema) => [schema.shape.method.value as string, schema]));

const OVERFLOW_MESSAGE = 'must be a number a double can hold (at most about ±1.8e308)';

/**
 * The first number of a message (`line`, parsed to `value`) that JSON.parse did not read as written: one beyond a
 * double (Infinity) or a nonzero one too small for it (±0), with its dotted path from the message's top.
 */
function unreadableNumber(line: string, value: unknown): { path: string; why: string } | undefined {
  const tiny = underflowingNumberPath(line);
  if (tiny !== undefined) return { path: tiny, why: UNDERFLOW_MESSAGE };
  const huge = nonFiniteNumberPath(value);
  return huge === undefined ? undefined : { path: huge, why: OVERFLOW_MESSAGE };
}

/**
 * One line read as a JSON-RPC message: the message the server may take, or the error to answer (null for a line
 * that needs no answer: a blank line, or a broken response or notification, which JSON-RPC never answers).
 */
export function checkMessage(line: string, handledMethods: ReadonlySet<string>): { message: JSONRPCMessage } | { answer: ErrorAnswer | null } {
  if (line.trim() === '') return { answer: null };
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return { answer: errorAnswer(null, ErrorCode.ParseError, `Parse error: ${(err as Error).message}`) };
  }
  if (Array.isArray(value)) return { answer: errorAnswer(null, ErrorCode.InvalidRequest, 'Invalid Request: batches are not supported; send one JSON-RPC message per line') };
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (!parsed.success) {
    if (value === null || typeof value !== 'object') return { answer: errorAnswer(null, ErrorCode.InvalidRequest, 'Invalid Request: a message is a JSON object') };
    const m = value as { jsonrpc?: unknown; id?: unknown; method?: unknown; result?: unknown; error?: unknown };
    // a JSON-RPC 2.0 response (no method) or notification (no id) gets no answer, even a broken one: its writer waits for none
    if (m.jsonrpc === '2.0' && (m.method === undefined ? 'result' in m || 'error' in m : !('id' in m))) return { answer: null };
    const why =
      m.jsonrpc !== '2.0'
        ? '"jsonrpc" must be "2.0"'
        : typeof m.method !== 'string'
          ? '"method" must be a string'
          : readableId(m) === null
            ? Number.isInteger(m.id)
              ? // JSON.parse already rounded it (9007199254740993 reads as …992): an answer could not name the request
                '"id" must be a string or an integer of at most 9007199254740991 in magnitude (a larger one cannot be answered exactly)'
              : '"id" must be a string or an integer'
            : (paramsProblem(parsed.error.issues) ?? unknownMembersProblem(parsed.error.issues) ?? '"params" must be an object');
    return { answer: errorAnswer(readableId(m), ErrorCode.InvalidRequest, `Invalid Request: ${why}`) };
  }
  const message = parsed.data;
  if ('method' in message) {
    const unreadable = unreadableNumber(line, value);
    if (unreadable && !('id' in message)) return { answer: null };
    if (unreadable?.path === 'id') return { answer: errorAnswer(null, ErrorCode.InvalidRequest, `Invalid Request: "id" ${unreadable.why}`) };
    if (unreadable && 'id' in message && handledMethods.has(message.method) && unreadable.path.startsWith('params.')) {
      const args = /^params\.arguments\.(.+)$/.exec(unreadable.path);
      const call = message.method === 'tools/call';
      const what = call && args ? `argument ${args[1]}` : unreadable.path;
      return { answer: errorAnswer(message.id, ErrorCode.InvalidParams, `Invalid params of ${message.method}: ${what} ${unreadable.why}${call ? '; nothing was sent' : ''}`) };
    }
  }
  if ('method' in message && 'id' in message && handledMethods.has(message.method)) {
    // the SDK's tools/call schema reads `arguments` into a new object, where a "__proto__" key sets nothing: the
    // argument was dropped without a word and the call went out without it (session 49's outside round)
    const args = message.method === 'tools/call' ? (value as { params?: { arguments?: unknown } }).params?.arguments : undefined;
    if (args !== null && typeof args === 'object' && Object.hasOwn(args, '__proto__')) {
      return { answer: errorAnswer(message.id, ErrorCode.InvalidParams, 'Invalid params of tools/call: argument "__proto__" cannot be passed (an MCP server drops it); nothing was sent') };
    }
    const schema = REQUEST_SCHEMAS.get(message.method);
    const checked = schema?.safeParse(message);
    if (checked && !checked.success) {
      const issue = checked.error.issues[0];
      const where = issue ? `${issue.path.join('.') || 'params'}: ${issue.message}` : 'not this method\'s';
      return { answer: errorAnswer(message.id, ErrorCode.InvalidParams, `Invalid params of ${message.method}: ${where}`) };
    }
  }
  return { message };
}

/** A stdio server transport that answers malformed lines (checkMessage) and hands the rest to the MCP server. */
export class JsonRpcStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private pending = '';
  private skipping = false;
  private readonly decoder = new StringDecoder('utf8');

  constructor(
    private readonly handledMethods: ReadonlySet<string>,
    private readonly stdin: NodeJS.ReadableStream = process.stdin,
    private readonly stdout: NodeJS.WritableStream = process.stdout,
  ) {}

  /** Whether any character has been read yet: a byte order mark before the first is read past. */
  private begun = false;

  private readonly ondata = (chunk: Buffer | string) => {
    this.pending += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    // a UTF-8 byte order mark at the start of the stream (what a Windows client's text encoder may write first) is
    // no character of the first message: that message was answered -32700, a parse error, though it was well-formed
    if (!this.begun && this.pending.length > 0) {
      this.begun = true;
      if (this.pending.charCodeAt(0) === 0xfeff) this.pending = this.pending.slice(1);
    }
    for (let i = this.pending.indexOf('\n'); i !== -1; i = this.pending.indexOf('\n')) {
      const line = this.pending.slice(0, i).replace(/\r$/, '');
      this.pending = this.pending.slice(i + 1);
      if (this.skipping) this.skipping = false; // the end of a line that was too long, already answered
      else this.take(line);
    }
    if (this.pending.length > MAX_MESSAGE_CHARS) {
      this.pending = '';
      if (!this.skipping) this.answer(errorAnswer(null, ErrorCode.InvalidRequest, `Invalid Request: a message is at most ${MAX_MESSAGE_CHARS} characters`));
      this.skipping = true;
    }
  };

  private readonly onstreamerror = (error: Error) => this.onerror?.(error);

  // the client closed its end of our stdout (an editor that quit): nobody is left to answer, so the transport closes;
  // before, the write's EPIPE was an unhandled 'error' event that ended the process with a stack trace on stderr
  private readonly onwriteerror = (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') void this.close();
    else this.onerror?.(error);
  };
  private closed = false;

  private take(line: string): void {
    const checked = checkMessage(line, this.handledMethods);
    if ('message' in checked) this.onmessage?.(checked.message);
    else if (checked.answer) this.answer(checked.answer);
  }

  private answer(error: ErrorAnswer): void {
    this.send(error as JSONRPCMessage).catch((err: Error) => this.onerror?.(err));
  }

  async start(): Promise<void> {
    this.stdin.on('data', this.ondata);
    this.stdin.on('error', this.onstreamerror);
    this.stdout.on('error', this.onwriteerror);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed || this.stdout.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.stdout.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stdin.off('data', this.ondata);
    this.stdin.off('error', this.onstreamerror);
    if (this.stdin.listenerCount('data') === 0) this.stdin.pause();
    this.pending = '';
    this.onclose?.();
  }
}
