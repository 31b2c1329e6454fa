/**
 * A Temporal frontend that is up but does not serve yet: a gRPC server (HTTP/2 on loopback) that answers
 * GetSystemInfo, so a client connects, and leaves every other call open. Waits and probes against it must end at
 * their deadlines (test/e2e/stopDuringRestart.test.ts, test/e2e/statusHome.test.ts).
 */
import http2 from 'node:http2';

export interface UnansweringTemporal {
  address: string;
  close(): Promise<void>;
}

/**
 * `describeNotFoundAfterMs`: DescribeWorkflowExecution is answered too, NotFound after that long (a persistence that
 * answers the dependency probe's read, slowly: lib/runtime/dependencies.ts).
 */
export async function startUnansweringTemporal(opts: { describeNotFoundAfterMs?: number } = {}): Promise<UnansweringTemporal> {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    const after = opts.describeNotFoundAfterMs;
    if (after !== undefined && String(headers[':path']).endsWith('/DescribeWorkflowExecution')) {
      // a trailers-only answer: gRPC status 5 (NOT_FOUND)
      const timer = setTimeout(() => {
        if (!stream.closed) stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'workflow not found' }, { endStream: true });
      }, after);
      stream.once('close', () => clearTimeout(timer));
      return;
    }
    if (!String(headers[':path']).endsWith('/GetSystemInfo')) return; // every other call stays open
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(Buffer.from([0, 0, 0, 0, 0])); // an empty GetSystemInfoResponse
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    address: `127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const session of sessions) session.destroy(); // the calls left open would hold close() otherwise
      }),
  };
}
