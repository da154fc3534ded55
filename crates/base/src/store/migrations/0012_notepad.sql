-- Migration 12: each session's notepad, a freeform markdown scratch area
-- the agent writes with the `notepad` tool and sees in every prompt of
-- that session; compaction summarizes messages, never the notepad.
CREATE TABLE notepads (
    session_id    INTEGER PRIMARY KEY REFERENCES sessions (id),
    text          TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
