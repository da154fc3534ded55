-- Migration 16: model calls of a new kind, `summary` (the cheap model's
-- summaries of long tool output, crates/model/src/summary). SQLite cannot change a
-- CHECK in place, so the table is rebuilt with its rows.
CREATE TABLE usage_new (
    id                 INTEGER PRIMARY KEY,
    at_ms              INTEGER NOT NULL,
    agent_id           INTEGER NOT NULL,
    session_id         INTEGER,
    inbox_id           INTEGER,
    -- `summary`: a summary by the cheap model ([llm.cheap]).
    kind               TEXT    NOT NULL
                       CHECK (kind IN ('turn', 'pre_compaction', 'compaction', 'worker', 'summary')),
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
