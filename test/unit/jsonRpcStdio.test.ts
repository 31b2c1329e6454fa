/** lib/mcp/jsonRpcStdio.ts on its own streams: what a line that is too long, or cut across chunks, gets. */
import { PassThrough } from 'node:stream';
import { checkMessage, JsonRpcStdioTransport, MAX_MESSAGE_CHARS } from '../../lib/mcp/jsonRpcStdio';

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

// session 47's outside round: `1e-400` reads as 0, so a call went out with 0 for an argument that must be positive
test('a number JSON.parse cannot read as written is refused where it is: params -32602, the id -32600, a notification dropped', async () => {
  const { t, stdin, taken, answers } = transport();
  await t.start();
  const call = (id: string, args: string) => `{"jsonrpc":"2.0","id":${id},"method":"ping","params":{"_meta":{},"arguments":${args}}}`;
  const lines = [
    call('1', '{"n":1e-400}'),
    call('2', `{"deep":[0,{"m":-0.${'0'.repeat(400)}1}]}`),
    call('3', '{"big":-1e999}'),
    call('1e-400', '{}'),
    '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x","n":2e-400}}',
    // read exactly as written: accepted
    call('4', '{"zero":0e-999,"minus":-0,"s":"1e-400","small":5e-324,"int":1.0}'),
  ];
  stdin.write(`${lines.join('\n')}\n`);
  await tick();
  expect(answers).toEqual([
    { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Invalid params of ping: params.arguments.n must be 0 or a number a double can hold (at least about ±4.9e-324): a smaller one would be read as 0' } },
    { jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Invalid params of ping: params.arguments.deep.1.m must be 0 or a number a double can hold (at least about ±4.9e-324): a smaller one would be read as 0' } },
    { jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'Invalid params of ping: params.arguments.big must be a number a double can hold (at most about ±1.8e308)' } },
    { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: "id" must be 0 or a number a double can hold (at least about ±4.9e-324): a smaller one would be read as 0' } },
  ]);
  expect(taken).toEqual([{ jsonrpc: '2.0', id: 4, method: 'ping', params: { _meta: {}, arguments: { zero: 0, minus: -0, s: '1e-400', small: 5e-324, int: 1 } } }]);
  await t.close();
});

test('in a tools/call, the argument is named and the answer says nothing was sent', () => {
  const line = '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"createPet","arguments":{"owner":{"score":1E-400}}}}';
  expect(checkMessage(line, new Set(['tools/call']))).toEqual({
    answer: {
      jsonrpc: '2.0',
      id: 9,
      error: { code: -32602, message: 'Invalid params of tools/call: argument owner.score must be 0 or a number a double can hold (at least about ±4.9e-324): a smaller one would be read as 0; nothing was sent' },
    },
  });
  // a method the server does not handle keeps its -32601 from the server
  expect(checkMessage(line.replace('tools/call', 'tools/other'), new Set(['tools/call']))).toHaveProperty('message');
});

// session 49's outside round: the SDK's schemas refuse a member JSON-RPC does not name, and the answer blamed params
test('a message with a member JSON-RPC does not name is refused naming that member, not said to have params that are no object', async () => {
  const { t, stdin, taken, answers } = transport();
  await t.start();
  stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}\n{"jsonrpc":"2.0","id":2,"method":"ping","params":{},"a":1,"b":2}\n');
  await tick();
  expect(answers).toEqual([
    { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'Invalid Request: "extra" is not a member of a JSON-RPC request (jsonrpc, id, method, params)' } },
    { jsonrpc: '2.0', id: 2, error: { code: -32600, message: 'Invalid Request: "a", "b" are not members of a JSON-RPC request (jsonrpc, id, method, params)' } },
  ]);
  expect(taken).toEqual([]);
  await t.close();
});

// session 49's outside round: the SDK's tools/call schema reads `arguments` into a fresh object, where a "__proto__"
// key sets nothing: the argument was dropped without a word and the call went out without it
test('a tools/call whose arguments hold a "__proto__" key is refused with -32602 naming it; nothing is taken', () => {
  const handled = new Set(['tools/call']);
  const line = (args: string) => `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"listTasks","arguments":${args}}}`;
  expect(checkMessage(line('{"__proto__":{"x":1}}'), handled)).toEqual({
    answer: { jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'Invalid params of tools/call: argument "__proto__" cannot be passed (an MCP server drops it); nothing was sent' } },
  });
  // deeper down it is a value like any other, kept as sent
  const nested = checkMessage(line('{"metadata":{"__proto__":{"x":1}}}'), handled);
  expect('message' in nested && JSON.stringify(nested.message)).toBe(line('{"metadata":{"__proto__":{"x":1}}}'));
});
