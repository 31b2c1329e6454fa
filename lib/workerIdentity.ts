/** Who a worker process is: its Temporal identity and host, recorded on the work it does (process rows). */
import os from 'node:os';

export interface WorkerIdentity {
  identity: string;
  host: string;
}

export function workerIdentity(identity?: string): WorkerIdentity {
  return { identity: identity ?? `${os.hostname()}-${process.pid}`, host: os.hostname() };
}
