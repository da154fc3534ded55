-- Migration 13: every content the agent's scripts and pages had. Each save
-- (by write_script, by hand, by a tool) is a new version; a deletion is a
-- version without content; a rollback is a new version with an old
-- content, so nothing is ever lost.
CREATE TABLE versions (
    id            INTEGER PRIMARY KEY,
    -- `script` (a file under $HEARTH_HOME: tools/x.lua, lib/y.lua,
    -- skills/s/SKILL.md) or `page` (a page's path).
    kind          TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    -- 1, 2, ... per (kind, name).
    version       INTEGER NOT NULL,
    -- NULL: the file or page was deleted.
    content       TEXT,
    -- SHA-256 of the content, hex; empty for a deletion.
    hash          TEXT    NOT NULL,
    -- The caller of write_script (`agent 1`, `owner via cli`), or
    -- `outside write_script` for a save the reload found.
    author        TEXT    NOT NULL,
    note          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    UNIQUE (kind, name, version)
);
