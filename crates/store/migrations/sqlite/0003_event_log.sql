-- agent-adaptor thread store, SQLite schema v3: the threads' event logs.
-- Times are INTEGER microseconds (UTC), each event is its JSON text.

CREATE TABLE agent_adaptor_event_heads (
    key         TEXT    PRIMARY KEY,  -- the thread key, verbatim
    last_cursor INTEGER NOT NULL      -- the newest cursor ever assigned (never reused)
) STRICT;

CREATE TABLE agent_adaptor_events (
    key         TEXT    NOT NULL,
    cursor      INTEGER NOT NULL,     -- 1, 2, 3, ... per key, across runs
    run_id      TEXT    NOT NULL,
    recorded_at INTEGER NOT NULL,
    prompt      TEXT,                 -- on a run's first record only
    event       TEXT    NOT NULL,
    PRIMARY KEY (key, cursor)
) STRICT, WITHOUT ROWID;
