/** Request and response schemas of the task routes. */
import { Type } from 'typebox';
import { TASK_PRIORITIES, TASK_SORT_PATTERN, TASK_STATUSES } from '../../lib/db/tasks';
import { BLANK_CHARACTERS, NAME_CONTROLS, NAME_PATTERN, nonBlankPatternWithout, TEXT_PATTERN } from '../http/inputPolicy';
import { Id, Nullable, PageQuery, StringEnum } from '../http/schemas';
import { PATTERN_MESSAGE } from '../http/validation';
import { DeleteCleanup } from './attemptSchemas';

export const TaskStatus = StringEnum(TASK_STATUSES);
export const TaskPriority = StringEnum(TASK_PRIORITIES);
// a title is one line (no control or bidi override characters), a description may have lines and tabs but no other
// control characters (NAME_PATTERN, TEXT_PATTERN)
const Title = Type.String({ minLength: 1, maxLength: 500, pattern: NAME_PATTERN });
const Description = Type.String({ maxLength: 100_000, pattern: TEXT_PATTERN });
// labels are stored trimmed and the `labels` filter splits on commas and trims, so a label with a comma or a blank
// one could never be filtered on
const Labels = Type.Array(Type.String({ minLength: 1, maxLength: 100, pattern: nonBlankPatternWithout(`,${NAME_CONTROLS}`) }), { maxItems: 50 });
// a name as a title is (no control or bidi override characters) and not blank: it is stored trimmed, as the agent a
// start without llm runs and the value the assignee filter matches; a blank one was stored as someone
const Assignee = Type.String({ minLength: 1, maxLength: 100, pattern: NAME_PATTERN });
const Metadata = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Free-form. The keys repository, branch and worktreePath are set by the task detail view and are not stored from a request.',
});

export const Task = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  title: Type.String(),
  description: Type.String(),
  status: Type.String(),
  priority: Type.String(),
  labels: Type.Array(Type.String()),
  assignee: Nullable(Type.String()),
  createdBy: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  completedAt: Nullable(Type.String()),
  metadata: Metadata,
});

export const AttemptSummary = Type.Object({
  id: Type.String(),
  number: Type.Integer(),
  llm: Type.String(),
  status: Type.String(),
  branch: Nullable(Type.String()),
  startedAt: Nullable(Type.String()),
  completedAt: Nullable(Type.String()),
  duration: Nullable(Type.Number()),
  cost: Type.Number(),
  filesChanged: Type.Integer(),
  linesAdded: Type.Integer(),
  linesRemoved: Type.Integer(),
});

export const TaskStats = Type.Object({
  totalAttempts: Type.Integer(),
  successfulAttempts: Type.Integer(),
  failedAttempts: Type.Integer(),
  totalCost: Type.Number(),
  totalDuration: Type.Number(),
});

export const TaskDetail = Type.Intersect([Task, Type.Object({ attempts: Type.Array(AttemptSummary), stats: TaskStats })]);

export const TaskListQuery = Type.Object(
  {
    ...PageQuery,
    projectId: Type.Optional(Id({ minLength: 1 })),
    status: Type.Optional(TaskStatus),
    priority: Type.Optional(TaskPriority),
    // a value of commas and blanks alone names no label: it was dropped, and every task listed as if no filter was sent
    labels: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2000,
        pattern: `[^,${BLANK_CHARACTERS}]`,
        [PATTERN_MESSAGE]: 'must name a label: commas and blanks alone name none',
        description: 'comma-separated, each label trimmed and empty ones skipped; a task matches when it has every label. A value of commas and blanks alone is a 400',
      }),
    ),
    // as assignees are stored (trimmed, not blank, no control characters): a padded value finds the trimmed one
    assignee: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NAME_PATTERN, description: 'an assignee as stored; blanks around it are ignored' })),
    search: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    sort: Type.Optional(Type.String({ pattern: TASK_SORT_PATTERN, description: 'field, or -field for descending; default -createdAt' })),
  },
  { additionalProperties: false },
);

export const CreateTaskBody = Type.Object(
  {
    projectId: Id({ minLength: 1 }),
    title: Title,
    description: Type.Optional(Description),
    priority: Type.Optional(TaskPriority),
    labels: Type.Optional(Labels),
    assignee: Type.Optional(Assignee),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
);

const PatchFields = {
  title: Type.Optional(Title),
  description: Type.Optional(Description),
  status: Type.Optional(TaskStatus),
  priority: Type.Optional(TaskPriority),
  labels: Type.Optional(Labels),
  assignee: Type.Optional(Nullable(Assignee)),
  metadata: Type.Optional(Metadata),
};

export const PatchTaskBody = Type.Object(PatchFields, { additionalProperties: false, minProperties: 1 });

const TaskIds = Type.Array(Id(), { minItems: 1, maxItems: 100, uniqueItems: true });

export const BulkUpdateBody = Type.Object(
  { taskIds: TaskIds, updates: Type.Object(PatchFields, { additionalProperties: false, minProperties: 1 }) },
  { additionalProperties: false },
);
export const BulkDeleteBody = Type.Object({ taskIds: TaskIds }, { additionalProperties: false });

export const BulkResult = Type.Object({
  updated: Type.Optional(Type.Integer()),
  deleted: Type.Optional(Type.Integer()),
  taskIds: Type.Array(Type.String()),
  notFound: Type.Array(Type.String()),
  tasks: Type.Optional(Type.Array(Task)),
});

/** cleanup: pending when a host did not remove its attempts' worktrees and branches within attempts.deleteWaitMs, failed when git refused. */
export const DeletedTask = Type.Object({ deleted: Type.Literal(true), taskId: Type.String(), ...DeleteCleanup });
