/** lib/http/badPorts.ts against the running Node's fetch: the same ports, so a Node upgrade that changes undici's list fails here. */
import { execFileSync } from 'node:child_process';
import { BAD_PORTS, badPortOf } from '../../lib/http/badPorts';

jest.setTimeout(60_000);

/**
 * Every port from 1 to 65535 that Node's fetch refuses, asked of a plain Node process (faster than inside jest's
 * sandbox, and no sockets left behind). A stand-in dispatcher takes the requests fetch allows (it checks the port
 * before handing a request over), so nothing is sent anywhere.
 */
const SCAN = `
const notSent = { dispatch(_o, handler) { queueMicrotask(() => handler.onError(new Error('not sent'))); return true; } };
(async () => {
  const refused = [];
  const otherwise = new Set();
  for (let port = 1; port <= 65535; port++) {
    const why = await fetch('http://127.0.0.1:' + port + '/', { dispatcher: notSent }).then(() => 'sent', (err) => err.cause && err.cause.message);
    if (why === 'bad port') refused.push(port);
    else otherwise.add(why);
  }
  process.stdout.write(JSON.stringify({ refused, otherwise: [...otherwise] }));
})();
`;

test("the list is exactly the ports Node's fetch refuses (every port from 1 to 65535 tried)", () => {
  const out = JSON.parse(execFileSync(process.execPath, ['-e', SCAN], { encoding: 'utf8', timeout: 50_000 })) as { refused: number[]; otherwise: string[] };
  expect(out).toEqual({ refused: [...BAD_PORTS].sort((a, b) => a - b), otherwise: ['not sent'] });
});

test('badPortOf: an explicit bad port of an http(s) URL; default ports, other ports and other schemes are not', () => {
  expect(badPortOf(new URL('http://example.com:6667/hook'))).toBe(6667);
  expect(badPortOf(new URL('HTTPS://[::1]:0010080/x'))).toBe(10080);
  expect(badPortOf(new URL('http://example.com/hook'))).toBeUndefined();
  expect(badPortOf(new URL('https://example.com:443/hook'))).toBeUndefined();
  expect(badPortOf(new URL('http://example.com:6670/hook'))).toBeUndefined();
  expect(badPortOf(new URL('ftp://example.com:21/x'))).toBeUndefined();
});
