/** Filesystem routes: GET /api/filesystem/roots, /api/filesystem/list and /api/filesystem/git-repos, inside the access policy. */
import os from 'node:os';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { listProjectRepoPaths } from '../../lib/db/projects';
import { type AccessPolicyInput, browsableRoots, buildAccessPolicy, resolveAllowedDirectory } from '../../lib/fs/accessPolicy';
import { ENTRY_TYPES, listDirectory } from '../../lib/fs/directoryListing';
import { discoverGitRepositories } from '../../lib/fs/gitDiscovery';
import { createRepoInspector } from '../../lib/fs/repoInspector';
import { createWalkGate } from '../../lib/fs/walkGate';
import { ok } from '../http/envelope';
import { Envelope, ErrorResponses, ErrorSchema, Nullable, StringEnum } from '../http/schemas';
import type { TaskPluginOptions } from './deps';

const FilesystemEntry = Type.Object({
  name: Type.String(),
  type: StringEnum(ENTRY_TYPES, { description: 'what the entry is, a symbolic link followed: file is a regular file' }),
  path: Type.String({ description: 'absolute; given back as the `path` of a listing, it opens this entry as it is written, blanks and %XX included' }),
  isGitRepo: Type.Boolean(),
  hidden: Type.Boolean(),
  size: Type.Integer(),
  modifiedAt: Type.String(),
  permissions: Type.String({ description: '`ls -l` style: the type letter (d, -, p, s, b or c), then rwx for owner, group and others' }),
});

const DirectoryListing = Type.Object({
  path: Type.String(),
  entries: Type.Array(FilesystemEntry),
  totalEntries: Type.Integer(),
  directories: Type.Integer(),
  files: Type.Integer({ description: 'regular files; FIFOs, sockets and devices count in totalEntries only' }),
  gitRepos: Type.Integer(),
  truncated: Type.Boolean({ description: 'the 5,000-entry cap or the time budget ended the listing early' }),
  skippedNonUtf8: Type.Integer({
    description: 'entries left out because their name is not UTF-8 (JSON text cannot carry such a name, and no project can use a path holding one); hidden ones count only with showHidden',
  }),
});

const GitRepository = Type.Object({
  name: Type.String(),
  path: Type.String(),
  gitPath: Type.String(),
  isSubmodule: Type.Boolean(),
  branch: Type.String(),
  hasUncommittedChanges: Type.Boolean(),
  hasUnpushedCommits: Type.Boolean(),
  remotes: Type.Array(
    Type.Object({
      name: Type.String(),
      url: Type.String({ description: 'the remote URL with any credentials redacted (user:***@, or ***@ for an http(s) user name alone)' }),
      type: StringEnum(['https', 'ssh', 'file'] as const),
    }),
  ),
  lastCommit: Nullable(Type.Object({ hash: Type.String(), message: Type.String(), author: Type.String(), date: Type.String() })),
});

const GitSearchResult = Type.Object({
  searchPath: Type.String(),
  repositories: Type.Array(GitRepository),
  totalFound: Type.Integer(),
  searchDepth: Type.Integer(),
  searchDuration: Type.Integer(),
  truncated: Type.Boolean({ description: 'the time budget or the entry cap ended the walk or the inspection early; repositories holds what was found' }),
  skippedNonUtf8: Type.Integer({ description: 'directories not searched because their name is not UTF-8 (JSON text cannot carry such a path, and no project can use one)' }),
});

const BrowsableRoots = Type.Object({
  roots: Type.Array(Type.String(), {
    description:
      'the allowed roots (filesystem.allowedPaths, else the home directory and common project directories) that exist as directories, absolute, in their configured order: where browsing can start. The directories of registered projects are allowed too but not listed here',
  }),
});

const Busy = { ...ErrorSchema, description: 'BUSY: too many filesystem walks at once; Retry-After says when to try again' };

// absolute: starts with `/`, or is `~` / `~/…` (the home directory); leading and trailing blanks are ignored
const PathQuery = Type.String({ minLength: 1, maxLength: 4096, pattern: '^\\s*(/|~/|~\\s*$)', description: 'absolute path (~ expands to the home directory)' });

export const filesystemRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;
  const home = os.homedir();
  const bounds = deps.config.filesystemWalks;
  // One gate per task service (one per process in every deployment we ship): discoveries and recursive listings
  // take turns, so a flood of them cannot starve the rest of the process (docs/filesystem.md#bounds).
  const walks = createWalkGate({ concurrency: bounds.concurrency, queue: bounds.queue, maxWaitMs: bounds.timeBudgetMs });
  const inspector = createRepoInspector();
  fastify.addHook('onClose', async () => inspector.close());
  // Built per request: projects registered a moment ago are allowed at once.
  const policyInput = async (): Promise<AccessPolicyInput> => ({
    home,
    allowedPaths: deps.config.file.filesystem?.allowedPaths,
    blockedPaths: deps.config.file.filesystem?.blockedPaths,
    projectPaths: await listProjectRepoPaths(deps.db),
  });
  const policy = async () => buildAccessPolicy(await policyInput());

  app.get(
    '/filesystem/roots',
    {
      schema: {
        tags: ['filesystem'],
        response: { 200: Envelope(BrowsableRoots), ...ErrorResponses },
      },
    },
    async () => {
      const input = await policyInput();
      return ok(version, { roots: await browsableRoots(input, await buildAccessPolicy(input)) });
    },
  );

  app.get(
    '/filesystem/list',
    {
      schema: {
        tags: ['filesystem'],
        querystring: Type.Object({
          path: PathQuery,
          showHidden: Type.Boolean({ default: false }),
          recursive: Type.Boolean({ default: false }),
          maxDepth: Type.Integer({ minimum: 1, maximum: 10, default: 1 }),
        }),
        response: { 200: Envelope(DirectoryListing), ...ErrorResponses, 503: Busy },
      },
    },
    async (request) => {
      const q = request.query;
      const list = async () => {
        const p = await policy();
        const dir = await resolveAllowedDirectory(q.path, p, home);
        return listDirectory(dir, p, { showHidden: q.showHidden, recursive: q.recursive, maxDepth: q.maxDepth, timeBudgetMs: bounds.timeBudgetMs });
      };
      // a plain listing reads one directory; only a recursive one is a walk that takes a turn
      return ok(version, await (q.recursive && q.maxDepth > 1 ? walks.run(list) : list()));
    },
  );

  app.get(
    '/filesystem/git-repos',
    {
      schema: {
        tags: ['filesystem'],
        querystring: Type.Object({
          path: PathQuery,
          maxDepth: Type.Integer({ minimum: 0, maximum: 10, default: 3 }),
          includeSubmodules: Type.Boolean({ default: true }),
        }),
        response: { 200: Envelope(GitSearchResult), ...ErrorResponses, 503: Busy },
      },
    },
    async (request) => {
      const q = request.query;
      // the turn comes first: a refused request costs no database query and no filesystem access
      const found = await walks.run(async () => {
        const p = await policy();
        const dir = await resolveAllowedDirectory(q.path, p, home);
        return discoverGitRepositories(dir, p, { maxDepth: q.maxDepth, includeSubmodules: q.includeSubmodules, timeBudgetMs: bounds.timeBudgetMs, maxEntries: bounds.maxEntries, inspect: inspector.inspect });
      });
      return ok(version, found);
    },
  );
};
