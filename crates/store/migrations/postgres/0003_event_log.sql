-- agent-adaptor thread store, PostgreSQL schema v3: the threads' event
-- logs. recorded_at is BIGINT microseconds (UTC), each event is its JSON
-- text, kept byte for byte (not jsonb, which reorders keys).

CREATE TABLE agent_adaptor_event_heads (
    key         TEXT   PRIMARY KEY,   -- the thread key, verbatim
    last_cursor BIGINT NOT NULL       -- the newest cursor ever assigned (never reused)
);

CREATE TABLE agent_adaptor_events (
    key         TEXT   NOT NULL,
    cursor      BIGINT NOT NULL,      -- 1, 2, 3, ... per key, across runs
    run_id      TEXT   NOT NULL,
    recorded_at BIGINT NOT NULL,
    prompt      TEXT,                 -- on a run's first record only
    event       TEXT   NOT NULL,
    PRIMARY KEY (key, cursor)
);
