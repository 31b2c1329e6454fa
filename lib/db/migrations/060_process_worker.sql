-- Which worker ran a process (its Temporal identity and host), shown in process records for fleet operators.
ALTER TABLE processes ADD COLUMN worker_identity text, ADD COLUMN worker_host text;
CREATE INDEX processes_worker_idx ON processes (worker_identity) WHERE worker_identity IS NOT NULL;
