-- agent-adaptor thread store, PostgreSQL schema v4: a thread's policy, the
-- tools a human chose to always allow in it. Independent of the thread's
-- records (a first run may grant before its first record). Deleting the
-- thread deletes them.

CREATE TABLE agent_adaptor_thread_tool_grants (
    key        TEXT        NOT NULL,  -- the thread key, verbatim
    tool       TEXT        NOT NULL,  -- the tool name, verbatim
    granted_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (key, tool)
);
