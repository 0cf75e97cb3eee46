-- agent-adaptor thread store, PostgreSQL schema v5: what hosts sharing a
-- store keep for the bridges: pending approvals, bridge tasks with their
-- update logs and push configurations. Times come from the server's clock.

CREATE TABLE agent_adaptor_approvals (
    id         TEXT        NOT NULL PRIMARY KEY,
    key        TEXT        NOT NULL,  -- the thread key, verbatim
    run_id     TEXT        NOT NULL,
    holder     TEXT        NOT NULL,  -- the run's lease owner
    principal  TEXT        NOT NULL,
    request    JSONB       NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    deadline   TIMESTAMPTZ,
    state      TEXT        NOT NULL CHECK (state IN ('pending', 'answered', 'expired')),
    answer     JSONB,                 -- once answered
    decided_at TIMESTAMPTZ
);
CREATE INDEX agent_adaptor_approvals_key_pending
    ON agent_adaptor_approvals (key, created_at, id) WHERE state = 'pending';
CREATE INDEX agent_adaptor_approvals_holder_pending
    ON agent_adaptor_approvals (holder) WHERE state = 'pending';

CREATE TABLE agent_adaptor_tasks (
    id                  TEXT        NOT NULL PRIMARY KEY,
    context_id          TEXT        NOT NULL,
    key                 TEXT        NOT NULL,
    principal           TEXT        NOT NULL,
    state               TEXT        NOT NULL,
    terminal            BOOLEAN     NOT NULL,
    holder              TEXT,
    snapshot            JSONB       NOT NULL,
    seq                 BIGINT      NOT NULL,  -- the newest update's sequence
    cancel_requested_at TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX agent_adaptor_tasks_principal_listing
    ON agent_adaptor_tasks (principal, updated_at DESC, id);
CREATE INDEX agent_adaptor_tasks_context ON agent_adaptor_tasks (context_id);
CREATE INDEX agent_adaptor_tasks_key_active ON agent_adaptor_tasks (key) WHERE NOT terminal;
CREATE INDEX agent_adaptor_tasks_terminal_age
    ON agent_adaptor_tasks (updated_at) WHERE terminal;

CREATE TABLE agent_adaptor_task_updates (
    task_id TEXT        NOT NULL,
    seq     BIGINT      NOT NULL,  -- 1, 2, 3 … per task
    body    JSONB       NOT NULL,
    at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (task_id, seq)
);

CREATE TABLE agent_adaptor_task_push_configs (
    task_id    TEXT        NOT NULL,
    id         TEXT        NOT NULL,
    config     JSONB       NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (task_id, id)
);
