import { eachLimit } from '../../lib/runtime/eachLimit';

const tick = () => new Promise((r) => setImmediate(r));

test('runs every item, at most `limit` at a time, started in order', async () => {
  let running = 0;
  let most = 0;
  const started: number[] = [];
  await eachLimit([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
    started.push(n);
    running++;
    most = Math.max(most, running);
    for (let i = 0; i < n % 3; i++) await tick();
    running--;
  });
  expect(started).toEqual([1, 2, 3, 4, 5, 6, 7]);
  expect(most).toBe(3);
});

test('after a failure no further item starts; the running ones finish; the first failure is thrown', async () => {
  const finished: number[] = [];
  const run = eachLimit([1, 2, 3, 4, 5, 6], 2, async (n) => {
    await tick();
    if (n === 2) throw new Error('two failed');
    if (n === 3) throw new Error('three failed too');
    await tick();
    finished.push(n);
  });
  await expect(run).rejects.toThrow('two failed');
  expect(finished).toEqual([1]);
});

test('no items, and a limit above their number', async () => {
  const seen: string[] = [];
  await eachLimit([], 8, async () => {
    seen.push('none');
  });
  await eachLimit(['a'], 8, async (x) => {
    seen.push(x);
  });
  expect(seen).toEqual(['a']);
});
