-- Migration 5: standing grants and the audit trail.
--
-- A grant lets one exact call (tool + arguments, by SHA-256) run without
-- asking again; the owner makes it by answering "always allow" and
-- removes it with `hearth approvals revoke`. A revoked grant is kept, with
-- the time it was revoked, so the record of what was allowed stays whole.
CREATE TABLE grants (
    id              INTEGER PRIMARY KEY,
    tool            TEXT    NOT NULL,
    fingerprint     TEXT    NOT NULL,
    args            TEXT    NOT NULL,
    command         TEXT,
    granted_by      TEXT    NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    uses            INTEGER NOT NULL DEFAULT 0,
    last_used_at_ms INTEGER,
    revoked_at_ms   INTEGER
);
CREATE UNIQUE INDEX grants_active ON grants (fingerprint) WHERE revoked_at_ms IS NULL;

-- Every tool call: who asked, what (arguments with secrets redacted), what
-- the policy decided, who approved it, how it ended and how long it took.
CREATE TABLE audit (
    id          INTEGER PRIMARY KEY,
    at_ms       INTEGER NOT NULL,
    caller      TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    args        TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    decision    TEXT    NOT NULL,
    reason      TEXT,
    approval    TEXT,
    approver    TEXT,
    outcome     TEXT    NOT NULL,
    detail      TEXT,
    duration_ms REAL    NOT NULL
);
CREATE INDEX audit_by_time ON audit (at_ms);
CREATE INDEX audit_by_tool ON audit (tool, at_ms);

-- A confirmation card also shows where a command runs and the mode.
ALTER TABLE confirmations ADD COLUMN cwd TEXT;
ALTER TABLE confirmations ADD COLUMN mode TEXT;
