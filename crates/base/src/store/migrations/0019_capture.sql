-- Migration 19: automatic memory capture ([memory.capture]). After a
-- conversation goes quiet, the cheap model proposes facts worth keeping;
-- they are kept as memories marked captured (crates/data/src/knowledge/capture).

-- Who wrote a memory: `agent` (the agent, with manage_knowledge) or
-- `captured` (automatic capture), and for a captured one the session it
-- came from. No foreign key: a memory outlives its conversation.
ALTER TABLE memory ADD COLUMN source TEXT NOT NULL DEFAULT 'agent'
    CHECK (source IN ('agent', 'captured'));
ALTER TABLE memory ADD COLUMN session_id INTEGER;

-- How far capture has read each session: the last message it read (or
-- passed over). Capture reads only what is newer, so it never reads a
-- message twice, and a dropped memory is not captured again from the
-- same messages.
CREATE TABLE capture_marks (
    session_id       INTEGER PRIMARY KEY,
    up_to_message_id INTEGER NOT NULL,
    at_ms            INTEGER NOT NULL
);

-- The history before this version is not read: capture starts with what
-- is said from now on, not with a burst of calls over every old session.
INSERT INTO capture_marks (session_id, up_to_message_id, at_ms)
    SELECT session_id, max(id), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM messages GROUP BY session_id;

-- Model calls of a new kind, `capture`, so their tokens are counted. SQLite
-- cannot change a CHECK in place, so the table is rebuilt with its rows.
CREATE TABLE usage_new (
    id                 INTEGER PRIMARY KEY,
    at_ms              INTEGER NOT NULL,
    agent_id           INTEGER NOT NULL,
    session_id         INTEGER,
    inbox_id           INTEGER,
    kind               TEXT    NOT NULL
                       CHECK (kind IN ('turn', 'pre_compaction', 'compaction', 'worker', 'summary', 'group', 'capture')),
    provider           TEXT    NOT NULL,
    model              TEXT    NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL
);
INSERT INTO usage_new SELECT * FROM usage;
DROP TABLE usage;
ALTER TABLE usage_new RENAME TO usage;
CREATE INDEX usage_by_time ON usage (at_ms);
