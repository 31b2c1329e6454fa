/**
 * Makes sure a namespace has Armada's search attributes (lib/temporal/searchAttributes.ts). The embedded dev server
 * gets them registered (registerSearchAttributes: `--search-attribute` only applies to a new SQLite file, so an older
 * $ARMADA_HOME gets the missing ones added). Against an external cluster Armada only checks: a worker or API started
 * on a namespace without them stops with one line naming them and the command that creates them
 * (docs/operations.md#search-attributes); starting or upserting a workflow with an unknown attribute would fail.
 */
import { ARMADA_SEARCH_ATTRIBUTES, createSearchAttributesCommand } from './searchAttributes';
import { OperatorError } from '../errors';

/** The part of a (native or client) Temporal connection these calls need. */
export interface OperatorConnection {
  operatorService: {
    listSearchAttributes(req: { namespace: string }): Promise<{ customAttributes?: Record<string, number> | null }>;
    addSearchAttributes(req: { namespace: string; searchAttributes: Record<string, number> }): Promise<unknown>;
  };
}

/** IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD (a number: the proto enum is not importable without protobufjs's registry). */
const KEYWORD = 2;

export class SearchAttributesMissing extends OperatorError {
  constructor(
    readonly namespace: string,
    readonly missing: string[],
  ) {
    super(
      `Temporal namespace "${namespace}" lacks Armada's search attributes ${missing.join(', ')}; create them with: ${createSearchAttributesCommand(namespace, missing)} (docs/operations.md#search-attributes)`,
    );
    this.name = 'SearchAttributesMissing';
  }
}

/** Names of Armada's attributes that the namespace lacks (or has with another type than Keyword). */
export async function missingSearchAttributes(connection: OperatorConnection, namespace: string): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const have = customAttributes ?? {};
  return ARMADA_SEARCH_ATTRIBUTES.map((k) => k.name).filter((name) => have[name] !== KEYWORD);
}

/** Throws SearchAttributesMissing when the namespace lacks any of them. */
export async function requireSearchAttributes(connection: OperatorConnection, namespace: string): Promise<void> {
  const missing = await missingSearchAttributes(connection, namespace);
  if (missing.length) throw new SearchAttributesMissing(namespace, missing);
}

/**
 * How long a start's check waits for Temporal's answer (`armada api` once; the workers per try, again until it
 * answers): a Temporal that takes the connection and answers nothing made the start wait without a limit.
 */
export const SEARCH_ATTRIBUTES_CHECK_MS = 5000;

/** requireSearchAttributes within SEARCH_ATTRIBUTES_CHECK_MS (past it the call fails with the connection's deadline error). */
export function requireSearchAttributesInTime(
  connection: OperatorConnection & { withDeadline<R>(deadline: number, fn: () => Promise<R>): Promise<R> },
  namespace: string,
): Promise<void> {
  return connection.withDeadline(Date.now() + SEARCH_ATTRIBUTES_CHECK_MS, () => requireSearchAttributes(connection, namespace));
}

/** Adds the missing ones (the embedded dev server only: an operator's cluster is never changed). Returns what it added. */
export async function registerSearchAttributes(connection: OperatorConnection, namespace: string): Promise<string[]> {
  const missing = await missingSearchAttributes(connection, namespace);
  if (missing.length === 0) return [];
  await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(missing.map((n) => [n, KEYWORD])) });
  return missing;
}
