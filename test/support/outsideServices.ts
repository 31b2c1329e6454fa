/**
 * The set-up the outside-fuzzing files share: the four HTTP services on one fresh stack, each listening on a loopback
 * port (raw-socket tests), started before the file's tests and closed after them, with the few request builders and
 * reads every such file wants. `startOutsideServices()` registers the file's beforeAll/afterAll; what it returns is
 * read inside tests (its `stack` and `ports` exist once beforeAll has run).
 */
import type { ServiceKind } from '../../api/http/openapi';
import { listenOnLoopback, startTestStack, type TestStack } from './harness';

export type Service = ServiceKind;
export type Json = Record<string, unknown>;
export const SERVICES: readonly Service[] = ['task', 'scheduler', 'agents', 'traces'];
/** A collection every service serves to a GET with its key (each service's cheapest authenticated read). */
export const LIST: Record<Service, string> = { task: '/api/projects', scheduler: '/api/v1/sources', agents: '/api/v1/agents', traces: '/api/v1/traces' };

type StackOptions = NonNullable<Parameters<typeof startTestStack>[0]>;

export interface OutsideServices {
  readonly stack: TestStack;
  /** each service's loopback port */
  readonly ports: Record<Service, number>;
  /** the service's key header as a raw header line (`''` for the task service, which needs none locally) */
  keyLine(service: Service): string;
  /** the same as a header object (for `inject` and `fetch`) */
  authHeaders(service: Service): Record<string, string>;
  /** a raw request without a body, with the key, closing the connection after the answer */
  bodyless(service: Service, method: string, target: string, extra?: string): string;
  /** a raw request with a JSON body (bytes as given), with the key, closing the connection after the answer */
  withBody(service: Service, method: string, target: string, body: Buffer | string, extra?: string): Buffer;
  /** the rows of a table now */
  count(table: string): Promise<number>;
}

/** The message of an error body: the task service's envelope, or `{detail}`. */
export const messageOf = (service: Service, json: unknown): string => (service === 'task' ? String(((json as Json)?.error as Json)?.message) : String((json as Json)?.detail));

/**
 * Starts `services` (default: all four) on one stack before the file's tests, each on a loopback port, and closes it
 * after them. `options` is read in beforeAll (a function of it then), so it may name what an earlier beforeAll set up;
 * `after` runs once the stack is up (seeding), `close` after the stack is closed (the file's own servers).
 */
export function startOutsideServices(
  opts: { services?: readonly Service[]; options?: () => StackOptions; after?: (stack: TestStack) => Promise<void>; close?: () => Promise<void> } = {},
): OutsideServices {
  const services = opts.services ?? SERVICES;
  let stack: TestStack | undefined;
  const ports = {} as Record<Service, number>;
  beforeAll(async () => {
    stack = await startTestStack({ ...opts.options?.(), services: [...services] });
    Object.assign(ports, await listenOnLoopback(stack, services));
    await opts.after?.(stack);
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
    await opts.close?.();
  });
  const started = (): TestStack => {
    if (!stack) throw new Error('the outside services are not started yet (read them inside a test)');
    return stack;
  };
  const keyLine = (service: Service) => (service === 'task' ? '' : `X-API-Key: ${started().keys[service]}\r\n`);
  return {
    get stack() {
      return started();
    },
    ports,
    keyLine,
    authHeaders: (service): Record<string, string> => (service === 'task' ? {} : { 'x-api-key': started().keys[service] }),
    bodyless: (service, method, target, extra = '') => `${method} ${target} HTTP/1.1\r\nHost: localhost\r\n${keyLine(service)}${extra}Connection: close\r\n\r\n`,
    withBody(service, method, target, body, extra = '') {
      const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
      const head = `${method} ${target} HTTP/1.1\r\nHost: localhost\r\n${keyLine(service)}${extra}Content-Type: application/json\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`;
      return Buffer.concat([Buffer.from(head, 'latin1'), bytes]);
    },
    async count(table) {
      return (await started().db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]?.n ?? 0;
    },
  };
}

