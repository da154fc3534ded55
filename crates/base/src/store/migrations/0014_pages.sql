-- Migration 14: the pages the agent publishes, served by the canvas at
-- /pages/<path>. Every save is also a version (kind `page`).
CREATE TABLE pages (
    -- `reports/weekly`: lowercase letters, digits, `-`, `_`, `.` and `/`.
    path          TEXT    PRIMARY KEY,
    mime          TEXT    NOT NULL,
    -- Exactly one of `content` (the text itself) and `file` (a path under
    -- $HEARTH_HOME, relative to it, read when the page is served).
    content       TEXT,
    file          TEXT,
    -- 1: served without a session (sandboxed, rate-limited).
    public        INTEGER NOT NULL DEFAULT 0,
    -- JSON object: query name -> read-only SQL on agent_data.db.
    queries       TEXT    NOT NULL DEFAULT '{}',
    author        TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    CHECK ((content IS NULL) != (file IS NULL))
);
