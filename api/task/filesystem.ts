/** Filesystem routes: GET /api/filesystem/list and /api/filesystem/git-repos, inside the access policy. */
import os from 'node:os';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { listProjectRepoPaths } from '../../lib/db/projects';
import { buildAccessPolicy, resolveAllowedDirectory } from '../../lib/fs/accessPolicy';
import { listDirectory } from '../../lib/fs/directoryListing';
import { discoverGitRepositories } from '../../lib/fs/gitDiscovery';
import { ok } from '../http/envelope';
import { Envelope, ErrorResponses, Nullable, StringEnum } from '../http/schemas';
import type { TaskPluginOptions } from './deps';

const FilesystemEntry = Type.Object({
  name: Type.String(),
  path: Type.String(),
  type: StringEnum(['file', 'directory'] as const),
  isGitRepo: Type.Boolean(),
  hidden: Type.Boolean(),
  size: Type.Integer(),
  modifiedAt: Type.String(),
  permissions: Type.String(),
});

const DirectoryListing = Type.Object({
  path: Type.String(),
  entries: Type.Array(FilesystemEntry),
  totalEntries: Type.Integer(),
  directories: Type.Integer(),
  files: Type.Integer(),
  gitRepos: Type.Integer(),
  truncated: Type.Boolean(),
});

const GitRepository = Type.Object({
  name: Type.String(),
  path: Type.String(),
  gitPath: Type.String(),
  isSubmodule: Type.Boolean(),
  branch: Type.String(),
  hasUncommittedChanges: Type.Boolean(),
  hasUnpushedCommits: Type.Boolean(),
  remotes: Type.Array(Type.Object({ name: Type.String(), url: Type.String(), type: StringEnum(['https', 'ssh', 'file'] as const) })),
  lastCommit: Nullable(Type.Object({ hash: Type.String(), message: Type.String(), author: Type.String(), date: Type.String() })),
});

const GitSearchResult = Type.Object({
  searchPath: Type.String(),
  repositories: Type.Array(GitRepository),
  totalFound: Type.Integer(),
  searchDepth: Type.Integer(),
  searchDuration: Type.Integer(),
  truncated: Type.Boolean(),
});

// absolute: starts with `/`, or is `~` / `~/…` (the home directory); leading and trailing blanks are ignored
const PathQuery = Type.String({ minLength: 1, maxLength: 4096, pattern: '^\\s*(/|~/|~\\s*$)', description: 'absolute path (~ expands to the home directory)' });

export const filesystemRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;
  const home = os.homedir();
  // Built per request: projects registered a moment ago are allowed at once.
  const policy = async () =>
    buildAccessPolicy({
      home,
      allowedPaths: deps.config.file.filesystem?.allowedPaths,
      blockedPaths: deps.config.file.filesystem?.blockedPaths,
      projectPaths: await listProjectRepoPaths(deps.db),
    });

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
        response: { 200: Envelope(DirectoryListing), ...ErrorResponses },
      },
    },
    async (request) => {
      const q = request.query;
      const p = await policy();
      const dir = await resolveAllowedDirectory(q.path, p, home);
      return ok(version, await listDirectory(dir, p, { showHidden: q.showHidden, recursive: q.recursive, maxDepth: q.maxDepth }));
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
        response: { 200: Envelope(GitSearchResult), ...ErrorResponses },
      },
    },
    async (request) => {
      const q = request.query;
      const p = await policy();
      const dir = await resolveAllowedDirectory(q.path, p, home);
      return ok(version, await discoverGitRepositories(dir, p, { maxDepth: q.maxDepth, includeSubmodules: q.includeSubmodules }));
    },
  );
};
