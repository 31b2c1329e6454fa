import { startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ services: ['scheduler', 'agents', 'traces'] });
});
afterAll(async () => {
  await stack.close();
});

describe.each(['scheduler', 'agents', 'traces'] as const)('%s service: X-API-Key, health, metrics, {detail} errors', (name) => {
  test('health and metrics need no key', async () => {
    const health = await stack.app(name).inject({ method: 'GET', url: '/health' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toMatchObject({ status: 'ok', service: name });
    const metrics = await stack.app(name).inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toContain('armada_http_requests_total');
  });

  test('a missing or wrong key gives 401 {"detail":"Invalid API key"}; the right key passes', async () => {
    const missing = await stack.app(name).inject({ method: 'GET', url: '/api/v1/nothing-here' });
    expect(missing.statusCode).toBe(401);
    expect(missing.json()).toEqual({ detail: 'Invalid API key' });
    const wrong = await stack.app(name).inject({ method: 'GET', url: '/api/v1/nothing-here', headers: { 'x-api-key': 'wrong' } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toEqual({ detail: 'Invalid API key' });
    const right = await stack.app(name).inject({ method: 'GET', url: '/api/v1/nothing-here', headers: { 'x-api-key': stack.keys[name] } });
    expect(right.statusCode).toBe(404);
    expect(right.json().detail).toMatch(/Not Found/);
  });

  test('a valid X-API-Key is enough beside a malformed or wrong Authorization: the scheduler and traces never read it, the multi-agent service needs either scheme valid (docs/security.md#either-scheme)', async () => {
    const url = { scheduler: '/api/v1/sources', agents: '/api/v1/memory/stats', traces: '/api/v1/traces' }[name];
    const alone = (await stack.app(name).inject({ method: 'GET', url, headers: { 'x-api-key': stack.keys[name] } })).json();
    for (const authorization of ['Basic Zm9vOmJhcg==', 'Bearer', 'Bearer not-the-key', 'not a scheme at all']) {
      const res = await stack.app(name).inject({ method: 'GET', url, headers: { 'x-api-key': stack.keys[name], authorization } });
      expect({ authorization, statusCode: res.statusCode, body: res.json() }).toEqual({ authorization, statusCode: 200, body: alone });
    }
  });
});

test('the multi-agent service also accepts the key as a bearer token; the others do not', async () => {
  const bearer = { authorization: `Bearer ${stack.keys.agents}` };
  expect((await stack.app('agents').inject({ method: 'GET', url: '/api/v1/x', headers: bearer })).statusCode).toBe(404);
  expect((await stack.app('traces').inject({ method: 'GET', url: '/api/v1/x', headers: { authorization: `Bearer ${stack.keys.traces}` } })).statusCode).toBe(401);
});

test('the multi-agent service: a valid bearer key is enough beside a wrong X-API-Key; a wrong key in both, or a malformed Authorization alone, is a 401', async () => {
  const get = async (headers: Record<string, string>) => {
    const r = await stack.app('agents').inject({ method: 'GET', url: '/api/v1/memory/stats', headers });
    return { statusCode: r.statusCode, body: r.json() };
  };
  const refused = { statusCode: 401, body: { detail: 'Invalid API key' } };
  const stats = { statusCode: 200, body: expect.objectContaining({ totalEntries: expect.any(Number) }) };
  for (const apiKey of ['wrong', '']) {
    expect(await get({ 'x-api-key': apiKey, authorization: `Bearer ${stack.keys.agents}` })).toEqual(stats);
    expect(await get({ 'x-api-key': apiKey, authorization: 'Bearer not-the-key' })).toEqual(refused);
  }
  for (const authorization of ['Basic Zm9vOmJhcg==', 'Bearer', `Basic ${stack.keys.agents}`, stack.keys.agents]) expect(await get({ authorization })).toEqual(refused);
});
