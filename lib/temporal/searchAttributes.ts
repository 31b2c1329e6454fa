/**
 * Armada's custom Temporal search attributes (all Keyword), defined once. Workflows, their starters and schedules
 * import the typed keys from here; lib/temporal/searchAttributeCheck.ts registers or checks them on a namespace.
 * Pure data (imported by workflow code): nothing here does I/O.
 */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

export const ArmadaTaskId = defineSearchAttributeKey('ArmadaTaskId', SearchAttributeType.KEYWORD);
export const ArmadaProjectId = defineSearchAttributeKey('ArmadaProjectId', SearchAttributeType.KEYWORD);
export const ArmadaAttemptId = defineSearchAttributeKey('ArmadaAttemptId', SearchAttributeType.KEYWORD);
/** The attempt's latest outcome: running, completed, failed or cancelled (the workflow stays open for follow-ups). */
export const ArmadaAttemptStatus = defineSearchAttributeKey('ArmadaAttemptStatus', SearchAttributeType.KEYWORD);
/** The agent: an attempt's agent profile (llm), or a multi-agent service agent's name. */
export const ArmadaAgent = defineSearchAttributeKey('ArmadaAgent', SearchAttributeType.KEYWORD);
/** The scheduler workflow a scheduled or manual run belongs to. */
export const ArmadaWorkflow = defineSearchAttributeKey('ArmadaWorkflow', SearchAttributeType.KEYWORD);

export const ARMADA_SEARCH_ATTRIBUTES = [ArmadaTaskId, ArmadaProjectId, ArmadaAttemptId, ArmadaAttemptStatus, ArmadaAgent, ArmadaWorkflow] as const;

/** `temporal server start-dev` flags that register them on a new dev server. */
export const devServerSearchAttributeArgs = (): string[] => ARMADA_SEARCH_ATTRIBUTES.flatMap((k) => ['--search-attribute', `${k.name}=Keyword`]);

/** The CLI command that creates the given attributes on a namespace of an external cluster. */
export const createSearchAttributesCommand = (namespace: string, names: readonly string[]): string =>
  `temporal operator search-attribute create --namespace ${namespace} --type Keyword ${names.map((n) => `--name ${n}`).join(' ')}`;

/** The attributes an attempt workflow starts with. */
export function attemptSearchAttributes(a: { taskId: string; projectId: string; attemptId: string; agent: string }): SearchAttributePair[] {
  return [
    { key: ArmadaTaskId, value: a.taskId },
    { key: ArmadaProjectId, value: a.projectId },
    { key: ArmadaAttemptId, value: a.attemptId },
    { key: ArmadaAgent, value: a.agent },
    { key: ArmadaAttemptStatus, value: 'running' },
  ];
}
