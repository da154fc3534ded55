-- Migration 4: confirmations and attachments.
--
-- Every request for the owner's approval, and how it ended: the canvas
-- shows them as an audit trail, and a reconnecting client sees the pending
-- ones again. `fingerprint` is the hash of the exact call it approves.
CREATE TABLE confirmations (
    id            TEXT    PRIMARY KEY,
    tool          TEXT    NOT NULL,
    args          TEXT    NOT NULL,
    command       TEXT,
    reason        TEXT    NOT NULL,
    fingerprint   TEXT    NOT NULL,
    state         TEXT    NOT NULL DEFAULT 'pending',
    decided_by    TEXT,
    at_ms         INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    decided_at_ms INTEGER
);
CREATE INDEX confirmations_by_time ON confirmations (at_ms);

-- The files that came with an inbound message: a JSON list, or NULL.
ALTER TABLE inbox ADD COLUMN attachments TEXT;
CREATE INDEX inbox_by_chat ON inbox (channel, chat, id);
CREATE INDEX outbox_by_chat ON outbox (channel, chat, id);
