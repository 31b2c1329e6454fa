/**
 * Route schemas compiled when a route first needs them, not when the app is built. The task service has over 1,000
 * validators and serializers (request parts and answers, HEAD routes included): compiling them all took about
 * 0.7 s of CPU per app, most of which a process that serves a handful of routes never used. A test file builds its
 * own apps in a fresh module registry, so every file paid it again (about a fifth of a jest worker's CPU, session 56's
 * profile; docs/testing.md).
 *
 * Serving processes compile lazily too: a route's first request pays for its few schemas (half a millisecond each on average), and
 * `armada start` is ready about a second of CPU sooner. A schema that does not compile cannot ship:
 * test/unit/lazySchemas.test.ts compiles every route of every service (compileAllSchemas), in CI, so no schema can
 * fail first in front of a client.
 */
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';

type Compiled = ((data: unknown) => unknown) & { errors?: unknown };
type SerializerCompiler = (route: { schema: unknown; method: string; url: string; httpStatus: string; contentType?: string }) => (data: unknown) => string;
type SerializerFactory = (externalSchemas: unknown, serializerOpts: unknown) => SerializerCompiler;

export interface LazySchemas {
  /** The service's validator compiler (api/http/validation.ts), deferred. */
  validatorCompiler: FastifySchemaCompiler<unknown>;
  /** Fastify's own serializer factory (fast-json-stringify), deferred: the `schemaController.compilersFactory` option. */
  buildSerializer: SerializerFactory;
  /** Compiles every schema not compiled yet; the number compiled. */
  compileAll(): number;
}

/**
 * A function that compiles itself on its first call and passes calls (and a validator's `errors`, which Fastify reads
 * after a `false`) to what it compiled. Registered in `pending` until then.
 */
function deferred(compile: () => Compiled, pending: Set<() => Compiled>): Compiled {
  let compiled: Compiled | undefined;
  const force = (): Compiled => {
    if (!compiled) {
      compiled = compile();
      pending.delete(force);
    }
    return compiled;
  };
  pending.add(force);
  const run: Compiled = (data: unknown) => {
    const fn = force();
    const out = fn(data);
    run.errors = fn.errors;
    return out;
  };
  run.errors = null;
  return run;
}

export function createLazySchemas(validatorCompiler: FastifySchemaCompiler<unknown>): LazySchemas {
  const pending = new Set<() => Compiled>();
  const serializers = (SerializerSelector as unknown as () => SerializerFactory)();
  return {
    validatorCompiler: (route) => deferred(() => validatorCompiler(route) as Compiled, pending) as ReturnType<FastifySchemaCompiler<unknown>>,
    buildSerializer: (externalSchemas, serializerOpts) => {
      const compiler = serializers(externalSchemas, serializerOpts);
      return (route) => deferred(() => compiler(route), pending) as (data: unknown) => string;
    },
    compileAll() {
      const all = [...pending];
      for (const force of all) force();
      return all.length;
    },
  };
}

const ofApp = new WeakMap<FastifyInstance, LazySchemas>();

export function registerLazySchemas(app: FastifyInstance, schemas: LazySchemas): void {
  ofApp.set(app, schemas);
}

/**
 * Compiles every route schema of an app built by createBaseApp (after `ready()`, when Fastify has handed them all to
 * the compilers); the number compiled. Throws what a schema's compilation throws.
 */
export function compileAllSchemas(app: FastifyInstance): number {
  return ofApp.get(app)?.compileAll() ?? 0;
}
