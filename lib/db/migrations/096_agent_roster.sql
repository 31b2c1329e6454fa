-- The roster of the agents service (C) as the replica started last had it (docs/multi-agent.md#replicas-with-different-rosters):
-- one row per agent a roster listed. A replica that starts with other agents than those listed publishes a new
-- version: its agents are listed in it, the others marked removed in it. A replica still running with an older roster
-- treats an agent marked removed as removed (404, its actor not started again) until a later roster lists it again.
CREATE SEQUENCE agent_roster_version_seq;
CREATE TABLE agent_roster (
  agent           text PRIMARY KEY,
  -- the version that last listed the agent or removed it
  roster_version  bigint NOT NULL,
  removed         boolean NOT NULL DEFAULT false,
  changed_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
