/**
 * Rounds of requests to the four services of one `armada api` (test/support/apiProcess.ts), as the PostgreSQL fault
 * tests send them: a read of each service and a write of three, each write naming its round so that its rows can be
 * counted afterwards (no write lost, none applied twice), and what a 503 of each service must look like.
 */
import { TEST_API_KEY } from './harness';
import { timedRequest, type TimedAnswer } from './timedRequest';

export type Service = 'task' | 'scheduler' | 'agents' | 'traces';
export const SERVICES: Service[] = ['task', 'scheduler', 'agents', 'traces'];

export interface RoundRequest {
  name: string;
  service: Service;
  /** a write (its rows are counted, except memory's) */
  write: boolean;
  /** the status it answers when served */
  ok: number;
  send(): Promise<TimedAnswer>;
}

/** Rows a round's writes left: tasks titled with the round, traces of its instance. */
export interface RoundWrites {
  task: number;
  traces: number;
}

export interface ServiceRounds {
  send(service: Service, method: 'GET' | 'POST', url: string, payload?: unknown): Promise<TimedAnswer>;
  /** The round's requests; `projectId` is the project its task is created in. */
  requests(round: string): RoundRequest[];
  /** True once every request of the round is served (throws saying which is not); counts its served writes in `accepted`. */
  allServed(round: string): Promise<true>;
  /** Writes answered with their success status, by round: each must be there exactly once (writesOf). */
  accepted: Record<string, RoundWrites>;
  /** How many rows the writes of `round` left (memory is not counted). */
  writesOf(round: string): Promise<RoundWrites>;
}

/**
 * The rounds of the API at `base(service)`, its task writes in the project `projectId()` names (read when a round is
 * built: the project is made after the API is up). `timeoutMs` bounds each request.
 */
export function serviceRounds(base: (service: Service) => string, projectId: () => string, timeoutMs: number): ServiceRounds {
  let traceSeq = 0;
  const accepted: Record<string, RoundWrites> = {};
  const send = (service: Service, method: 'GET' | 'POST', url: string, payload?: unknown) =>
    timedRequest(`${base(service)}${url}`, { method, payload, headers: service === 'task' ? {} : { 'x-api-key': TEST_API_KEY }, timeoutMs });
  const requests = (round: string): RoundRequest[] => [
    { name: 'task: list projects', service: 'task', write: false, ok: 200, send: () => send('task', 'GET', '/api/projects') },
    { name: 'task: create a task', service: 'task', write: true, ok: 201, send: () => send('task', 'POST', '/api/tasks', { projectId: projectId(), title: round }) },
    { name: 'scheduler: list workflows', service: 'scheduler', write: false, ok: 200, send: () => send('scheduler', 'GET', '/api/v1/workflows') },
    { name: 'agents: memory stats', service: 'agents', write: false, ok: 200, send: () => send('agents', 'GET', '/api/v1/memory/stats') },
    { name: 'agents: store memory', service: 'agents', write: true, ok: 201, send: () => send('agents', 'POST', '/api/v1/memory', { content: `kept in ${round}` }) },
    { name: 'traces: list traces', service: 'traces', write: false, ok: 200, send: () => send('traces', 'GET', `/api/v1/traces?instance=${round}`) },
    {
      name: 'traces: record a trace',
      service: 'traces',
      write: true,
      ok: 201,
      send: () => send('traces', 'POST', '/api/v1/traces', { messageId: `${round}-${++traceSeq}`, instance: round, to: '+15550102000', message: 'hello' }),
    },
  ];
  return {
    send,
    requests,
    accepted,
    async allServed(round) {
      accepted[round] ??= { task: 0, traces: 0 };
      for (const r of requests(round)) {
        const a = await r.send();
        if (a.status === r.ok && r.write && r.service !== 'agents') accepted[round][r.service as keyof RoundWrites]++;
        if (a.status !== r.ok) throw new Error(`${r.name}: ${a.status} ${JSON.stringify(a.body)}`);
      }
      return true;
    },
    async writesOf(round) {
      const tasks = await send('task', 'GET', `/api/tasks?projectId=${projectId()}&limit=100`);
      const traces = await send('traces', 'GET', `/api/v1/traces?instance=${round}`);
      if (tasks.status !== 200 || traces.status !== 200) throw new Error(`counting ${round}'s writes: ${tasks.status} ${traces.status}`);
      return { task: (tasks.body.data as { title: string }[]).filter((t) => t.title === round).length, traces: traces.body.total as number };
    },
  };
}

/** The message of an error answer: the task service's `error.message`, the others' `detail`. */
export function answerMessage(r: RoundRequest, a: TimedAnswer): string {
  return String(r.service === 'task' ? (a.body.error as { message?: unknown } | undefined)?.message : a.body.detail);
}

/**
 * What is wrong with an answer that should be the service's 503 with `Retry-After: 1` and one of `messages`, in its
 * shape (the task service's envelope with SERVICE_UNAVAILABLE, the others' `{detail}` alone), or undefined.
 */
export function unavailableAnswerProblem(r: RoundRequest, a: TimedAnswer, messages: RegExp[]): string | undefined {
  if (a.status !== 503) return `status ${a.status} ${JSON.stringify(a.body)}`;
  if (a.retryAfter !== '1') return `Retry-After ${a.retryAfter}`;
  const message = answerMessage(r, a);
  if (!messages.some((m) => m.test(message))) return `message ${message}`;
  if (r.service === 'task') {
    const error = a.body.error as { code?: unknown } | undefined;
    if (a.body.success !== false || error?.code !== 'SERVICE_UNAVAILABLE') return `body ${JSON.stringify(a.body)}`;
  } else if (Object.keys(a.body).join() !== 'detail') return `body ${JSON.stringify(a.body)}`;
  return undefined;
}
