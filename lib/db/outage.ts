/**
 * How long an activity step waits, inside the activity, for PostgreSQL to answer again (a restart, an outage of
 * minutes) before its error goes to Temporal's retry policy (activities/untilPostgresAnswers.ts). Plain data: the
 * workflows size their activities' start-to-close timeouts with it.
 */
export const POSTGRES_OUTAGE_WAIT_MS = 10 * 60_000;
