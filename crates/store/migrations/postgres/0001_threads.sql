-- agent-adaptor thread store, PostgreSQL schema v1. Times are TIMESTAMPTZ
-- (UTC), and lease expiry is computed from the server's clock.

CREATE TABLE agent_adaptor_thread_records (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- "newest"
    id          TEXT        NOT NULL UNIQUE,
    key         TEXT        NOT NULL,                             -- verbatim
    status      TEXT        NOT NULL CHECK (status IN ('active', 'archived')),
    driver_type TEXT        NOT NULL,
    fingerprint TEXT        NOT NULL,
    codec       TEXT        NOT NULL,
    params      JSONB       NOT NULL CHECK (jsonb_typeof(params) = 'object'),
    previous_id TEXT,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

-- At most one active record per key, enforced by the database itself.
CREATE UNIQUE INDEX agent_adaptor_thread_records_one_active
    ON agent_adaptor_thread_records (key) WHERE status = 'active';
CREATE INDEX agent_adaptor_thread_records_key_seq
    ON agent_adaptor_thread_records (key, seq);

CREATE TABLE agent_adaptor_thread_leases (
    target     TEXT        PRIMARY KEY,                           -- "key:<thread key>"
    owner      TEXT        NOT NULL,
    token      TEXT        NOT NULL,                              -- new on every acquisition
    expires_at TIMESTAMPTZ NOT NULL
);
