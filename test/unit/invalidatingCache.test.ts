/** The invalidating cache's rules, driven by an in-memory listener (the PostgreSQL side is in taskReadCache.test.ts). */
import { EventCursor } from '../../lib/events/eventCursor';
import { createInvalidatingCache } from '../../lib/events/invalidatingCache';
import type { ChannelHandler, EventListener } from '../../lib/events/listener';

function memoryListener() {
  const handlers: ChannelHandler[] = [];
  const state = { up: true };
  const listener = {
    subscribe: () => () => undefined,
    started: () => true,
    lastSeq: () => 0,
    cursor: () => EventCursor.upTo(0),
    token: () => '0',
    close: async () => undefined,
    watch: (_channel: string, h: ChannelHandler) => {
      handlers.push(h);
      return () => undefined;
    },
    barrier: async () => state.up,
    hears: () => state.up,
  } satisfies EventListener;
  const notify = () => {
    for (const h of handlers) h('');
  };
  return { listener, state, notify };
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('invalidating cache', () => {
  test('a miss is kept and served until a notification drops it', async () => {
    const { listener, notify } = memoryListener();
    const cache = createInvalidatingCache<string>({
      listener,
      channels: ['c'],
      maxEntries: 10,
    });
    let version = 1;
    const load = async () => `v${version}`;
    expect(await cache.read('k', load)).toEqual({
      value: 'v1',
      outcome: 'miss',
    });
    version = 2;
    expect(await cache.read('k', load)).toEqual({
      value: 'v1',
      outcome: 'hit',
    });
    notify();
    expect(cache.size()).toBe(0);
    expect(await cache.read('k', load)).toEqual({
      value: 'v2',
      outcome: 'miss',
    });
  });

  test('a value loaded while a notification arrived is answered but not kept', async () => {
    const { listener, notify } = memoryListener();
    const cache = createInvalidatingCache<string>({
      listener,
      channels: ['c'],
      maxEntries: 10,
    });
    const gate = deferred<string>();
    const reading = cache.read('k', () => gate.promise);
    await new Promise((r) => setImmediate(r));
    notify(); // a commit the load may not have seen
    gate.resolve('old');
    expect(await reading).toEqual({ value: 'old', outcome: 'miss' });
    expect(cache.size()).toBe(0);
    expect(await cache.read('k', async () => 'new')).toEqual({
      value: 'new',
      outcome: 'miss',
    });
  });

  test('concurrent reads of one page share a load, but not one that started before a notification', async () => {
    const { listener, notify } = memoryListener();
    const cache = createInvalidatingCache<string>({
      listener,
      channels: ['c'],
      maxEntries: 10,
    });
    let loads = 0;
    const gates = [deferred<string>(), deferred<string>()];
    const load = () => gates[loads++]?.promise ?? Promise.resolve('late');
    const first = cache.read('k', load);
    await new Promise((r) => setImmediate(r));
    const joined = cache.read('k', load);
    await new Promise((r) => setImmediate(r));
    expect(loads).toBe(1);
    notify();
    const afterChange = cache.read('k', load);
    await new Promise((r) => setImmediate(r));
    expect(loads).toBe(2);
    gates[0]?.resolve('before');
    gates[1]?.resolve('after');
    expect(await first).toEqual({ value: 'before', outcome: 'miss' });
    expect(await joined).toEqual({ value: 'before', outcome: 'hit' });
    expect(await afterChange).toEqual({ value: 'after', outcome: 'miss' });
    expect(await cache.read('k', load)).toEqual({
      value: 'after',
      outcome: 'hit',
    });
  });

  test('while the listener is down every read goes to the loader and nothing is kept', async () => {
    const { listener, state } = memoryListener();
    const cache = createInvalidatingCache<string>({
      listener,
      channels: ['c'],
      maxEntries: 10,
    });
    await cache.read('k', async () => 'cached');
    state.up = false;
    expect(await cache.read('k', async () => 'fresh')).toEqual({
      value: 'fresh',
      outcome: 'bypass',
    });
    expect(await cache.read('j', async () => 'j')).toEqual({
      value: 'j',
      outcome: 'bypass',
    });
    expect(cache.size()).toBe(1);
  });

  test('beyond maxEntries the least recently used page goes', async () => {
    const { listener } = memoryListener();
    const cache = createInvalidatingCache<string>({
      listener,
      channels: ['c'],
      maxEntries: 2,
    });
    await cache.read('a', async () => 'a');
    await cache.read('b', async () => 'b');
    await cache.read('a', async () => 'a2'); // a is now the most recent
    await cache.read('c', async () => 'c');
    expect(cache.size()).toBe(2);
    expect((await cache.read('a', async () => 'a3')).outcome).toBe('hit');
    expect((await cache.read('b', async () => 'b2')).outcome).toBe('miss');
  });
});
