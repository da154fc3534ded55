-- Migration 1: the inbox and the record of daemon runs.

-- Inbound messages, stored before the channel is told it may forget them.
-- (channel, idempotency_key) makes a resubmission a no-op.
CREATE TABLE inbox (
    id              INTEGER PRIMARY KEY,
    channel         TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    sender          TEXT    NOT NULL,
    chat            TEXT,
    text            TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'pending',
    received_at_ms  INTEGER NOT NULL,
    UNIQUE (channel, idempotency_key)
);

-- One row per `hearth run`: when it started, became ready and stopped.
CREATE TABLE daemon_runs (
    id            INTEGER PRIMARY KEY,
    pid           INTEGER NOT NULL,
    version       TEXT    NOT NULL,
    started_at_ms INTEGER NOT NULL,
    ready_at_ms   INTEGER,
    stopped_at_ms INTEGER,
    clean_stop    INTEGER NOT NULL DEFAULT 0
);
