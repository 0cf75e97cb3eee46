-- agent-adaptor thread store, SQLite schema v5: what hosts sharing a store
-- keep for the bridges: pending approvals, bridge tasks with their update
-- logs and push configurations. Times are INTEGER microseconds (UTC), JSON
-- is TEXT.

CREATE TABLE agent_adaptor_approvals (
    id         TEXT    NOT NULL PRIMARY KEY,
    key        TEXT    NOT NULL,  -- the thread key, verbatim
    run_id     TEXT    NOT NULL,
    holder     TEXT    NOT NULL,  -- the run's lease owner
    principal  TEXT    NOT NULL,
    request    TEXT    NOT NULL,  -- JSON
    created_at INTEGER NOT NULL,
    deadline   INTEGER,
    state      TEXT    NOT NULL CHECK (state IN ('pending', 'answered', 'expired')),
    answer     TEXT,              -- JSON, once answered
    decided_at INTEGER
) STRICT;
CREATE INDEX agent_adaptor_approvals_key_pending
    ON agent_adaptor_approvals (key, created_at, id) WHERE state = 'pending';
CREATE INDEX agent_adaptor_approvals_holder_pending
    ON agent_adaptor_approvals (holder) WHERE state = 'pending';

CREATE TABLE agent_adaptor_tasks (
    id                  TEXT    NOT NULL PRIMARY KEY,
    context_id          TEXT    NOT NULL,
    key                 TEXT    NOT NULL,
    principal           TEXT    NOT NULL,
    state               TEXT    NOT NULL,
    terminal            INTEGER NOT NULL CHECK (terminal IN (0, 1)),
    holder              TEXT,
    snapshot            TEXT    NOT NULL,  -- JSON
    seq                 INTEGER NOT NULL,  -- the newest update's sequence
    cancel_requested_at INTEGER,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
) STRICT;
CREATE INDEX agent_adaptor_tasks_principal_listing
    ON agent_adaptor_tasks (principal, updated_at DESC, id);
CREATE INDEX agent_adaptor_tasks_context ON agent_adaptor_tasks (context_id);
CREATE INDEX agent_adaptor_tasks_key_active ON agent_adaptor_tasks (key) WHERE terminal = 0;
CREATE INDEX agent_adaptor_tasks_terminal_age
    ON agent_adaptor_tasks (updated_at) WHERE terminal = 1;

CREATE TABLE agent_adaptor_task_updates (
    task_id TEXT    NOT NULL,
    seq     INTEGER NOT NULL,  -- 1, 2, 3 … per task
    body    TEXT    NOT NULL,  -- JSON
    at      INTEGER NOT NULL,
    PRIMARY KEY (task_id, seq)
) STRICT;

CREATE TABLE agent_adaptor_task_push_configs (
    task_id    TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    config     TEXT    NOT NULL,  -- JSON
    created_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, id)
) STRICT;
