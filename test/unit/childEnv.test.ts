import { childEnv } from '../../lib/process/childEnv';
import { resolveAgentProfile } from '../../lib/agents/profiles';
import { testConfigFrom } from '../support/unitConfig';

const base = {
  PATH: '/usr/bin',
  HOME: '/home/a',
  LC_ALL: 'C.UTF-8',
  DATABASE_URL: 'postgres://secret',
  ARMADA_ENCRYPTION_KEY: 'k',
  ARMADA_TASK_API_KEY: 't',
  TEMPORAL_ADDRESS: 'x:7233',
  GITHUB_TOKEN: 'g',
  ANTHROPIC_API_KEY: 'vendor',
};

test('only allow-listed server variables pass; LC_* as a family; SHLVL=1 (bash then reads no startup file)', () => {
  expect(childEnv({ base })).toEqual({ PATH: '/usr/bin', HOME: '/home/a', LC_ALL: 'C.UTF-8', SHLVL: '1' });
});

test('profile env: literals, $NAME references to server variables, unset references left out; contract vars win', () => {
  const env = childEnv({
    base,
    profileEnv: {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: profile reference syntax
      DATABASE_URL: '${DATABASE_URL}',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: profile reference syntax
      MISSING: '${NOT_SET_ANYWHERE}',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: profile reference syntax
      URL: 'https://${NOT_SET_ANYWHERE}example.com/${HOME}',
      PLAIN: 'value',
      ARMADA_TASK_ID: 'from-profile',
    },
    vars: { ARMADA_TASK_ID: 'task-1', ARMADA_MODEL: undefined },
  });
  expect(env).toEqual({
    SHLVL: '1',
    PATH: '/usr/bin',
    HOME: '/home/a',
    LC_ALL: 'C.UTF-8',
    DATABASE_URL: 'postgres://secret',
    URL: 'https://example.com//home/a',
    PLAIN: 'value',
    ARMADA_TASK_ID: 'task-1',
  });
});

test('a reference named like a property of every object (constructor, toString, __proto__) is unset, as any variable the server lacks', () => {
  for (const server of [base, process.env]) {
    const env = childEnv({
      base: server,
      profileEnv: {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: profile reference syntax
        WHOLE: '${constructor}',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: profile reference syntax
        PART: 'x-${toString}-${__proto__}-${hasOwnProperty}-y',
      },
    });
    expect([env.WHOLE, env.PART]).toEqual([undefined, 'x----y']);
  }
});

test("a built-in profile names its vendor's key, so the claude agent gets ANTHROPIC_API_KEY and nothing else secret", () => {
  const profile = resolveAgentProfile(testConfigFrom({}), 'claude');
  const env = childEnv({ base, profileEnv: profile?.env });
  expect(env.ANTHROPIC_API_KEY).toBe('vendor');
  expect(Object.keys(env).sort()).toEqual(['ANTHROPIC_API_KEY', 'HOME', 'LC_ALL', 'PATH', 'SHLVL']);
});
