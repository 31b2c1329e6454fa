import { hostMayBeServed, hostName } from '../../api/http/servedHosts';

test('the name of a Host value: port, brackets and a final dot dropped, lower case', () => {
  expect(['[::1]:8887', 'LocalHost.:80', 'a.example', 'a.example:', '[v1.x]'].map(hostName)).toEqual(['::1', 'localhost', 'a.example', 'a.example', 'v1.x']);
});

test('local mode serves loopback names and IP addresses; another name only when its origin is configured', () => {
  const served = ['localhost', 'localhost:8887', 'LOCALHOST.', 'board.localhost:5173', '127.0.0.1:8887', '[::1]', '10.0.0.5', '[::ffff:7f00:1]:1', '', undefined];
  for (const host of served) expect({ host, served: hostMayBeServed(host, undefined) }).toEqual({ host, served: true });
  const refused = ['rebind.example', 'rebind.example:8887', 'localhost.rebind.example', 'localhostx', '127.0.0.1.nip.io', 'x', 'xn--caf-dma.example'];
  for (const host of refused) expect({ host, served: hostMayBeServed(host, undefined) }).toEqual({ host, served: false });
  // the configured CORS origins name the hosts a user serves the board under (an /etc/hosts alias)
  expect(hostMayBeServed('armada.test:8887', ['http://armada.test:8887'])).toBe(true);
  expect(hostMayBeServed('Armada.Test:8887', ['https://armada.test:8887'])).toBe(true);
  expect(hostMayBeServed('armada.test:9999', ['http://armada.test:8887'])).toBe(false);
  expect(hostMayBeServed('armada.test', ['http://armada.test:8887'])).toBe(false);
  expect(hostMayBeServed('rebind.example', ['*'])).toBe(true);
});
