/**
 * Why a `fetch()` threw, in a few words with the system's code. Node's fetch (undici) throws `TypeError: fetch failed`
 * whatever happened; the reason (a refused connection, a reset, an unknown host, a certificate) is in its `cause`, one
 * or two levels down, so a message built from `err.message` alone said "fetch failed" for all of them.
 */
import { redactUrlCredentials } from '../urlCredentials';

const DESCRIPTIONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed while sending',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed before the answer was complete',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no answer in time',
  UND_ERR_BODY_TIMEOUT: 'the answer stopped coming',
};

interface ErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/** The first error code (`ECONNREFUSED`, `UND_ERR_SOCKET`, `DEPTH_ZERO_SELF_SIGNED_CERT`…) in an error's causes. */
function codeOf(err: unknown): { code: string; message?: string } | undefined {
  let e = err as ErrorLike | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 6; depth++) {
    if (typeof e.code === 'string' && e.code) return { code: e.code, message: typeof e.message === 'string' ? e.message : undefined };
    // a connection tried on several addresses (IPv4 and IPv6) fails with an AggregateError of each try
    const first = Array.isArray(e.errors) ? (e.errors[0] as ErrorLike | undefined) : undefined;
    if (first && typeof first.code === 'string') return { code: first.code, message: typeof first.message === 'string' ? first.message : undefined };
    e = e.cause as ErrorLike | undefined;
  }
  return undefined;
}

/**
 * What went wrong with a request that got no answer: `reason` in words (`connection refused (ECONNREFUSED)`,
 * `timed out`, `self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)`) and the bare `code` when there is one. Never
 * the URL (it may carry a key in its query).
 */
export function fetchFailure(err: unknown): { reason: string; code?: string } {
  const e = err as ErrorLike | undefined;
  if (e?.name === 'TimeoutError') return { reason: 'timed out' };
  if (e?.name === 'AbortError') return { reason: 'cancelled' };
  const found = codeOf(e?.cause ?? e);
  if (found) {
    const words = DESCRIPTIONS[found.code] ?? found.message?.split('\n')[0];
    return { reason: words && words !== found.code ? `${words} (${found.code})` : found.code, code: found.code };
  }
  // undici refuses the Fetch standard's blocked ports (6000, 6665–6669, …) before connecting, with no code
  if (isBadPortFailure(e)) return { reason: BAD_PORT };
  const message = typeof e?.message === 'string' ? e.message : String(err);
  // undici's refusal quotes the URL, password and all ("Request cannot be constructed from a URL that includes
  // credentials: http://me:…@host/…"): said without it
  if (message.includes('URL that includes credentials')) return { reason: CREDENTIALS_IN_URL };
  return { reason: redactUrlCredentials(message) };
}

const CREDENTIALS_IN_URL = 'the URL holds a user name or password, which fetch does not send; give the key another way';

const BAD_PORT = 'the port is one fetch never connects to (a "bad port" of the Fetch standard, such as 6000 or 6667); serve it on another port';

/** Whether fetch refused the request for its port (lib/http/badPorts.ts lists them): nothing was sent, and never will be. */
export function isBadPortFailure(err: unknown): boolean {
  return ((err as ErrorLike | undefined)?.cause as ErrorLike | undefined)?.message === 'bad port';
}

/** fetchFailure's reason alone. */
export const fetchFailureReason = (err: unknown): string => fetchFailure(err).reason;
