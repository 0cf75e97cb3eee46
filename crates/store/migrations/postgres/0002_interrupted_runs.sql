-- agent-adaptor thread store, PostgreSQL schema v2: what a lease's run was
-- given (its prompt) and when it started, and the runs whose process died
-- while holding a lease.

ALTER TABLE agent_adaptor_thread_leases ADD COLUMN prompt TEXT;
ALTER TABLE agent_adaptor_thread_leases ADD COLUMN acquired_at TIMESTAMPTZ;

CREATE TABLE agent_adaptor_interrupted_runs (
    seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- recording order
    key            TEXT        NOT NULL,                             -- verbatim
    run_id         TEXT        NOT NULL,
    prompt         TEXT,
    started_at     TIMESTAMPTZ NOT NULL,
    interrupted_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX agent_adaptor_interrupted_runs_key_seq
    ON agent_adaptor_interrupted_runs (key, seq);
