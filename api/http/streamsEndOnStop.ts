/**
 * Long-lived responses (SSE streams, NDJSON follows) end when their service starts to stop (app.close()'s
 * preClose), so a stop is not held for its whole HTTP limit (15 s, lib/runtime/shutdownSteps.ts) by a client that
 * follows a running process's log: the client sees the stream end without its `end` event (SSE) or cut short (NDJSON,
 * whose clean end means "finished") and resumes where it was (Last-Event-ID, `after`) on another replica or once this
 * one is back. WebSockets are closed at the same moment with 1001 (api/task/app.ts).
 * Before: `fastify.close()` waited on every open stream, and each stop with one open logged "http did not stop
 * within 15 s; going on without it".
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** The decoration of the app (inherited by every plugin context) that holds the open streams' end functions. */
const KEY = 'armadaOpenStreams';

type Holder = { [KEY]?: Set<() => void> };

/** Ends the app's open streams when it starts to stop (before in-flight requests are waited for). */
export function installStreamsEndOnStop(app: FastifyInstance): void {
  const open = new Set<() => void>();
  app.decorate(KEY, open);
  app.addHook('preClose', (done) => {
    for (const end of [...open]) {
      try {
        end();
      } catch {
        /* a stream that cannot be ended is left to the HTTP step's limit */
      }
    }
    done();
  });
}

/**
 * Calls `end` when the service that took `request` starts to stop. Returns the function that forgets it: call it once
 * the stream has ended on its own. A request of an app without the hook (app.inject in tests) is never ended by it.
 */
export function endOnStop(request: FastifyRequest, end: () => void): () => void {
  const open = (request.server as unknown as Holder)[KEY];
  if (!open) return () => undefined;
  open.add(end);
  return () => {
    open.delete(end);
  };
}
