-- agent-adaptor thread store, SQLite schema v4: a thread's policy, the
-- tools a human chose to always allow in it. Independent of the thread's
-- records (a first run may grant before its first record). Deleting the
-- thread deletes them. Times are INTEGER microseconds (UTC).

CREATE TABLE agent_adaptor_thread_tool_grants (
    key        TEXT    NOT NULL,  -- the thread key, verbatim
    tool       TEXT    NOT NULL,  -- the tool name, verbatim
    granted_at INTEGER NOT NULL,
    PRIMARY KEY (key, tool)
) STRICT;
