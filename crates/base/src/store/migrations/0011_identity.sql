-- Migration 11: every version of the main agent's identity (the text at
-- the top of its prompt). The newest version is the one in use; a
-- rollback is itself a new version, so nothing is ever lost.
CREATE TABLE identity_versions (
    version       INTEGER PRIMARY KEY,
    text          TEXT    NOT NULL,
    -- `config` (the seed from the identity file or the built-in text),
    -- `owner`, or the agent that made the edit.
    author        TEXT    NOT NULL,
    -- What the edit was: "appended", "replaced section X", "rollback to 2".
    note          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL
);
