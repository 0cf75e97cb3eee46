-- agent-adaptor thread store, SQLite schema v1.
-- Times are INTEGER microseconds since the Unix epoch (UTC).

CREATE TABLE agent_adaptor_thread_records (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,  -- insertion order: "newest"
    id          TEXT    NOT NULL UNIQUE,
    key         TEXT    NOT NULL,                   -- the host's key, verbatim
    status      TEXT    NOT NULL CHECK (status IN ('active', 'archived')),
    driver_type TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    codec       TEXT    NOT NULL,
    params      TEXT    NOT NULL CHECK (json_valid(params) AND json_type(params) = 'object'),
    previous_id TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;

-- At most one active record per key, enforced by the database itself.
CREATE UNIQUE INDEX agent_adaptor_thread_records_one_active
    ON agent_adaptor_thread_records (key) WHERE status = 'active';
CREATE INDEX agent_adaptor_thread_records_key_seq
    ON agent_adaptor_thread_records (key, seq);

CREATE TABLE agent_adaptor_thread_leases (
    target     TEXT    PRIMARY KEY,                 -- "key:<thread key>"
    owner      TEXT    NOT NULL,
    token      TEXT    NOT NULL,                    -- new on every acquisition
    expires_at INTEGER NOT NULL
) STRICT;
