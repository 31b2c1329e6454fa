/** lib/mcp/jsonRpcStdio.ts on its own streams: what a line that is too long, or cut across chunks, gets. */
import { PassThrough } from 'node:stream';
import { JsonRpcStdioTransport, MAX_MESSAGE_CHARS } from '../../lib/mcp/jsonRpcStdio';

function transport() {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const t = new JsonRpcStdioTransport(new Set(['ping']), stdin, stdout);
  const taken: unknown[] = [];
  const answers: { id: unknown; error?: { code: number; message: string } }[] = [];
  t.onmessage = (m) => taken.push(m);
  let out = '';
  stdout.on('data', (c: Buffer) => {
    out += c.toString();
    for (let i = out.indexOf('\n'); i !== -1; i = out.indexOf('\n')) {
      answers.push(JSON.parse(out.slice(0, i)));
      out = out.slice(i + 1);
    }
  });
  return { t, stdin, taken, answers };
}

const tick = () => new Promise((r) => setImmediate(r));

test('a line past the bound is answered once as an invalid request, and the next line is read as usual', async () => {
  const { t, stdin, taken, answers } = transport();
  await t.start();
  const chunk = 'x'.repeat(1024 * 1024);
  for (let written = 0; written <= MAX_MESSAGE_CHARS; written += chunk.length) stdin.write(chunk);
  stdin.write('still the same line\n{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
  await tick();
  expect(answers).toEqual([{ jsonrpc: '2.0', id: null, error: { code: -32600, message: `Invalid Request: a message is at most ${MAX_MESSAGE_CHARS} characters` } }]);
  expect(taken).toEqual([{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
  await t.close();
});

test('a message split across chunks, a character split across chunks, CRLF: one message, as sent', async () => {
  const { t, stdin, taken, answers } = transport();
  await t.start();
  const line = Buffer.from('{"jsonrpc":"2.0","id":"é😀","method":"ping"}\r\n');
  const cut = line.indexOf(Buffer.from('😀')) + 2; // inside the emoji's four bytes
  stdin.write(line.subarray(0, cut));
  await tick();
  stdin.write(line.subarray(cut));
  await tick();
  expect(answers).toEqual([]);
  expect(taken).toEqual([{ jsonrpc: '2.0', id: 'é😀', method: 'ping' }]);
  await t.close();
});

test('a client that closed its end of stdout (EPIPE): the transport closes, nothing is thrown', async () => {
  const { Writable } = await import('node:stream');
  const stdin = new PassThrough();
  const gone = new Writable({
    write(_chunk, _enc, cb) {
      cb(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    },
  });
  const t = new JsonRpcStdioTransport(new Set(['ping']), stdin, gone);
  let closed = 0;
  const errors: Error[] = [];
  t.onclose = () => closed++;
  t.onerror = (e) => errors.push(e);
  await t.start();
  // before, the stream's 'error' event had no listener: the process ended with a stack trace
  await Promise.race([t.send({ jsonrpc: '2.0', id: 1, result: {} }), new Promise((r) => setTimeout(r, 100))]);
  await tick();
  expect(closed).toBe(1);
  expect(errors).toEqual([]);
  await t.send({ jsonrpc: '2.0', id: 2, result: {} }); // after closing: dropped, resolved
  expect(closed).toBe(1);
});

test('a UTF-8 byte order mark at the start of the stream is read past; one before a later line is that line\'s parse error', async () => {
  const { t, stdin, taken, answers } = transport();
  await t.start();
  stdin.write(Buffer.from([0xef, 0xbb]));
  await tick();
  stdin.write(Buffer.concat([Buffer.from([0xbf]), Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}\n\ufeff{"jsonrpc":"2.0","id":2,"method":"ping"}\n')]));
  await tick();
  expect(taken).toEqual([{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
  expect(answers.map((a) => [a.id, a.error?.code])).toEqual([[null, -32700]]);
  await t.close();
});

test('params the message schema refuses are named where they fail, not said to be no object', async () => {
  const { t, stdin, answers } = transport();
  await t.start();
  stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":1e400}}}\n{"jsonrpc":"2.0","id":2,"method":"ping","params":[1]}\n');
  await tick();
  expect(answers.map((a) => [a.id, a.error?.code, a.error?.message.startsWith('Invalid Request: ')])).toEqual([
    [1, -32600, true],
    [2, -32600, true],
  ]);
  expect(answers[0]?.error?.message).toMatch(/^Invalid Request: "params\._meta\.progressToken": /);
  expect(answers[1]?.error?.message).toBe('Invalid Request: "params" must be an object');
  await t.close();
});
