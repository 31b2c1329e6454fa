import { createSlots } from '../../lib/process/slots';

test('at most max holders; waiters served in order; a release frees exactly one slot once', async () => {
  const s = createSlots(2);
  const a = await s.acquire();
  const b = await s.acquire();
  const order: string[] = [];
  const take = (name: string) =>
    s.acquire().then((release) => {
      order.push(name);
      return release;
    });
  const c = take('c');
  const d = take('d');
  await new Promise((r) => setImmediate(r));
  expect(s.inUse()).toBe(2);
  expect(order).toEqual([]);
  a();
  a(); // a second release of the same slot is ignored
  const rc = await c;
  expect(order).toEqual(['c']);
  expect(s.inUse()).toBe(2);
  b();
  const rd = await d;
  expect(order).toEqual(['c', 'd']);
  rc();
  rd();
  expect(s.inUse()).toBe(0);
});

test('a waiter whose signal aborts leaves the queue and takes no slot', async () => {
  const s = createSlots(1);
  const held = await s.acquire();
  const ac = new AbortController();
  const waiting = s.acquire(ac.signal);
  ac.abort();
  await expect(waiting).rejects.toThrow('aborted');
  held();
  expect(s.inUse()).toBe(0);
  const again = await s.acquire();
  expect(s.inUse()).toBe(1);
  again();
});
