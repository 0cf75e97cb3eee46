-- agent-adaptor thread store, SQLite schema v2: what a lease's run was
-- given (its prompt) and when it started, and the runs whose process died
-- while holding a lease. Times are INTEGER microseconds (UTC).

ALTER TABLE agent_adaptor_thread_leases ADD COLUMN prompt TEXT;
ALTER TABLE agent_adaptor_thread_leases ADD COLUMN acquired_at INTEGER;

CREATE TABLE agent_adaptor_interrupted_runs (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,  -- recording order
    key            TEXT    NOT NULL,                   -- the thread key, verbatim
    run_id         TEXT    NOT NULL,
    prompt         TEXT,
    started_at     INTEGER NOT NULL,
    interrupted_at INTEGER NOT NULL
) STRICT;
CREATE INDEX agent_adaptor_interrupted_runs_key_seq
    ON agent_adaptor_interrupted_runs (key, seq);
