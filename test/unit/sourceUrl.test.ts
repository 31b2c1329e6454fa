/**
 * canonicalSourceUrl: the one form a source's url is stored and compared in (docs/scheduler.md#source-urls), so that
 * two spellings of one platform's address are one source and the second is refused as a duplicate.
 */
import { canonicalSourceUrl } from '../../lib/scheduler/platforms';

describe('canonicalSourceUrl', () => {
  test.each([
    // the WHATWG parser's form, less trailing slashes
    ['http://LOCALHOST:8080/', 'http://localhost:8080'],
    ['http://localhost:80', 'http://localhost'],
    ['http://127.1:7860//', 'http://127.0.0.1:7860'],
    ['https://bücher.example/ü', 'https://xn--bcher-kva.example/%C3%BC'],
    // percent-escapes in RFC 3986's normal form: hex in upper case, an unreserved character's escape decoded
    ['http://host:7860/a%2fb', 'http://host:7860/a%2Fb'],
    ['http://host:7860/a%2Fb', 'http://host:7860/a%2Fb'],
    ['http://host:7860/%c3%bc', 'http://host:7860/%C3%BC'],
    ['http://host:7860/%7e%41%2d%5F%2e%30x', 'http://host:7860/~A-_.0x'],
    ['http://host:7860/flows%2F', 'http://host:7860/flows%2F'], // an escaped slash is not a trailing slash
    ['http://us%65r:p%3a@host/', 'http://user:p%3A@host'],
    ['http://host/100%', 'http://host/100%'], // a `%` without two hex digits is left as it is
    ['http://host/%zz', 'http://host/%zz'],
    // a host name's trailing dot dropped: the fully qualified form of the same name
    ['http://host.:7860/', 'http://host:7860'],
    ['http://HOST.example.:80/x/', 'http://host.example/x'],
    ['http://127.0.0.1.:7860', 'http://127.0.0.1:7860'],
    ['http://bücher.example./', 'http://xn--bcher-kva.example'],
  ])('%s is %s', (url, canonical) => {
    expect(canonicalSourceUrl(url)).toBe(canonical);
    expect(canonicalSourceUrl(canonical)).toBe(canonical); // the canonical form is its own canonical form
  });

  test('a url the parser cannot read has none', () => {
    expect(canonicalSourceUrl('http://127.0.0.1:99999')).toBeUndefined();
    expect(canonicalSourceUrl('not a url')).toBeUndefined();
  });
});
