/**
 * readLines (lib/process/lines.ts) splits output as node:readline did for the agent runner (crlfDelay: Infinity):
 * the same lines for the same bytes however they are cut into chunks.
 */
import readline from 'node:readline';
import { PassThrough } from 'node:stream';
import { MAX_LINE_LENGTH, readLines } from '../../lib/process/lines';

async function viaReadLines(chunks: (string | Buffer)[], encoding?: BufferEncoding): Promise<string[]> {
  const s = new PassThrough(encoding ? { encoding } : {});
  const lines: string[] = [];
  const done = readLines(s, (l) => lines.push(l));
  for (const c of chunks) s.write(c);
  s.end();
  await done;
  return lines;
}

async function viaReadline(chunks: (string | Buffer)[]): Promise<string[]> {
  const s = new PassThrough();
  const lines: string[] = [];
  const rl = readline.createInterface({ input: s, crlfDelay: Number.POSITIVE_INFINITY });
  rl.on('line', (l) => lines.push(l));
  const closed = new Promise((r) => rl.once('close', r));
  for (const c of chunks) s.write(c);
  s.end();
  await closed;
  return lines;
}

describe('readLines', () => {
  test('\\n, \\r\\n (also split across chunks), a lone \\r, empty lines and a last line without an end', async () => {
    const chunks = ['a\nb\r', '\nc\rd\n\n', 'e\r\n', 'f\r', 'g', '\n\r\r\nh'];
    expect(await viaReadLines(chunks)).toEqual(['a', 'b', 'c', 'd', '', 'e', 'f', 'g', '', '', 'h']);
    expect(await viaReadLines(chunks)).toEqual(await viaReadline(chunks));
  });

  test('a multi-byte character split between Buffer chunks stays whole', async () => {
    const bytes = Buffer.from('naïve → ✓\nzwei 😀\n');
    const chunks = [bytes.subarray(0, 3), bytes.subarray(3, 11), bytes.subarray(11, 19), bytes.subarray(19)];
    expect(await viaReadLines(chunks)).toEqual(['naïve → ✓', 'zwei 😀']);
  });

  test('the same lines as readline for random text cut at random places (string and Buffer chunks)', async () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const alphabet = ['a', 'b', 'é', '\n', '\r', '\r\n', ' ', '✓'];
    for (let round = 0; round < 200; round++) {
      let text = '';
      for (let i = rand(80); i > 0; i--) text += alphabet[rand(alphabet.length)];
      const bytes = Buffer.from(text);
      const cuts: Buffer[] = [];
      for (let at = 0; at < bytes.length; ) {
        const n = 1 + rand(9);
        cuts.push(bytes.subarray(at, at + n));
        at += n;
      }
      const expected = await viaReadline(cuts);
      expect(await viaReadLines(cuts)).toEqual(expected);
      expect(await viaReadLines(cuts, 'utf8')).toEqual(expected);
    }
  });

  describe('a line longer than the limit', () => {
    const MAX = 8;
    async function cut(chunks: string[], max = MAX): Promise<string[]> {
      const s = new PassThrough({ encoding: 'utf8' });
      const lines: string[] = [];
      const done = readLines(s, (l) => lines.push(l), max);
      for (const c of chunks) s.write(c);
      s.end();
      await done;
      return lines;
    }

    test('is given in pieces of the limit, whether it came in one chunk or many, ended or not; nothing is lost', async () => {
      const long = 'abcdefghijklmnopqrstu'; // 21 units: 8 + 8 + 5
      for (const chunks of [[`${long}\nnext\n`], [...long, '\n', 'next\n'], ['abc', 'defghijklmno', 'pqrstu\r\nnext']]) {
        expect(await cut(chunks)).toEqual(['abcdefgh', 'ijklmnop', 'qrstu', 'next']);
      }
      expect(await cut([long])).toEqual(['abcdefgh', 'ijklmnop', 'qrstu']);
    });

    test('a line of exactly the limit is one line, not a line and an empty one', async () => {
      expect(await cut(['abcdefgh\n', 'x\n'])).toEqual(['abcdefgh', 'x']);
      expect(await cut(['abcd', 'efgh', '\nx'])).toEqual(['abcdefgh', 'x']);
    });

    test('a cut never splits a surrogate pair', async () => {
      const lines = await cut(['abcdefg😀hij\n']);
      expect(lines).toEqual(['abcdefg', '😀hij']);
      expect(lines.every((l) => (l as string & { isWellFormed(): boolean }).isWellFormed())).toBe(true);
    });

    test('the default limit is 1 Mi units: 3.5 Mi without a newline are four lines, the first three of 1 Mi', async () => {
      const s = new PassThrough({ encoding: 'utf8' });
      const lengths: number[] = [];
      const done = readLines(s, (l) => lengths.push(l.length));
      const block = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 56; i++) s.write(block); // 3.5 Mi
      s.end();
      await done;
      expect(lengths).toEqual([MAX_LINE_LENGTH, MAX_LINE_LENGTH, MAX_LINE_LENGTH, MAX_LINE_LENGTH / 2]);
    });
  });
});
