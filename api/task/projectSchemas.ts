/** Request and response schemas of the project routes. */
import { Type } from 'typebox';
import { REPO_URL_PATTERN, REPO_URL_RULE } from '../../lib/git';
import { NAME_CONTROLS, nonBlankPatternWithout, TEXT_PATTERN } from '../http/inputPolicy';
import { BranchName, Nullable, StringEnum } from '../http/schemas';
import { PATTERN_MESSAGE } from '../http/validation';
import { DeleteCleanup } from './attemptSchemas';

const Name = Type.String({ minLength: 1, maxLength: 200, pattern: nonBlankPatternWithout(NAME_CONTROLS), description: 'Stored trimmed and in Unicode NFC; compared case-insensitively (PostgreSQL lower()). No control or bidi override characters.' });

/** repository.url in responses: as given, less its credentials (docs/security.md, "Credentials in URLs"). */
const RepositoryUrlShown = Type.String({ description: 'the URL as given, with any credentials redacted: user:***@ for a password, ***@ for an http(s) user name alone (a token)' });

export const ProjectListItem = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  git_repo_path: Type.String(),
  setup_script: Type.String(),
  dev_script: Type.String(),
  repository: Type.Object({ url: RepositoryUrlShown, branch: Type.String() }),
  defaultLLM: Nullable(Type.String()),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const Repository = Type.Object({
  url: RepositoryUrlShown,
  branch: Type.String(),
  lastSync: Nullable(Type.String()),
  status: Type.String({ description: 'ready, cloning (a remote URL being cloned by a worker) or failed' }),
  error: Type.Optional(Type.String()),
});

export const ProjectDetail = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  repository: Repository,
  git_repo_path: Type.String(),
  setup_script: Type.String(),
  dev_script: Type.String(),
  defaultLLM: Nullable(Type.String()),
  config: Type.Object({
    worktrees: Type.Object({ enabled: Type.Boolean(), basePath: Type.String() }),
    llms: Type.Record(Type.String(), Type.Object({ model: Type.String() })),
  }),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  stats: Type.Object({
    tasks: Type.Integer(),
    completedTasks: Type.Integer(),
    inProgressTasks: Type.Integer(),
    failedTasks: Type.Integer(),
    activeAttempts: Type.Integer(),
    totalCost: Type.Number(),
  }),
});

export const ProjectStats = Type.Object({
  tasks: Type.Object({ total: Type.Integer(), pending: Type.Integer(), inProgress: Type.Integer(), completed: Type.Integer(), failed: Type.Integer() }),
  attempts: Type.Object({ total: Type.Integer(), successful: Type.Integer(), failed: Type.Integer() }),
  costs: Type.Object({ total: Type.Number(), byLLM: Type.Record(Type.String(), Type.Number()) }),
  performance: Type.Object({ averageTaskDuration: Type.Number(), successRate: Type.Number(), averageCostPerTask: Type.Number() }),
});

export const CreateProjectBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Type.String({ maxLength: 10_000, pattern: TEXT_PATTERN })),
    repository: Type.Object(
      {
        url: Type.String({
          minLength: 1,
          maxLength: 2000,
          pattern: REPO_URL_PATTERN,
          description:
            'a code hosting URL (https, ssh or git@host:path), an absolute local path or a file:// URL; credentials in an http(s) URL (https://user:password@host/…) are used to clone and never shown (responses and logs redact them); a password in an ssh:// or git:// URL is refused (use an SSH key), as is one holding an unencoded ? # \' " < or >',
          [PATTERN_MESSAGE]: REPO_URL_RULE,
        }),
        branch: Type.Optional(BranchName({ default: 'main', description: 'the branch attempts fork from and merge into (default main)' })),
      },
      { additionalProperties: false },
    ),
    defaultLLM: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    git_repo_path: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    setup_script: Type.Optional(Type.String({ maxLength: 100_000, pattern: TEXT_PATTERN })),
    dev_script: Type.Optional(Type.String({ maxLength: 100_000, pattern: TEXT_PATTERN })),
  },
  { additionalProperties: false },
);

export const PatchProjectBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Type.String({ maxLength: 10_000, pattern: TEXT_PATTERN })),
    defaultLLM: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
    setup_script: Type.Optional(Type.String({ maxLength: 100_000, pattern: TEXT_PATTERN })),
    dev_script: Type.Optional(Type.String({ maxLength: 100_000, pattern: TEXT_PATTERN })),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const DeletedProject = Type.Object({
  id: Type.String(),
  deleted: Type.Literal(true),
  deletedAt: Type.String(),
  cleanup: StringEnum(['done', 'pending', 'failed'] as const, {
    description:
      "done: the attempts' worktrees and branches and the project's managed clone ($ARMADA_HOME/repos/<id>) are removed; " +
      'pending: some of it was not done within attempts.deleteWaitMs (a host or worker did not answer, or the clone was still being made): it is done when a worker is back, at the latest by the janitor of its next start or pass; ' +
      'failed: git refused to remove some attempts\' worktrees or branches (cleanupErrors): what it kept stays until that is cleared, each error saying what was kept and what removes it then',
  }),
  cleanupErrors: DeleteCleanup.cleanupErrors,
});
