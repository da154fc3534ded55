-- Migration 3: the agent. Agents, their conversations (sessions, messages,
-- compactions), their memory, the outbox, and turn bookkeeping on the inbox.

CREATE TABLE agents (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL
);

-- One conversation per (agent, channel, chat) at a time; `/new` ends it.
CREATE TABLE sessions (
    id            INTEGER PRIMARY KEY,
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    channel       TEXT    NOT NULL,
    chat          TEXT    NOT NULL,
    started_at_ms INTEGER NOT NULL,
    ended_at_ms   INTEGER
);
CREATE INDEX sessions_open ON sessions (agent_id, channel, chat) WHERE ended_at_ms IS NULL;

-- Every step of every turn; `content` is the JSON list of blocks. Rows of
-- a turn carry the inbox message that started it, so a retried turn can
-- start clean.
CREATE TABLE messages (
    id            INTEGER PRIMARY KEY,
    session_id    INTEGER NOT NULL REFERENCES sessions (id),
    inbox_id      INTEGER,
    role          TEXT    NOT NULL,
    content       TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX messages_by_session ON messages (session_id, id);
CREATE INDEX messages_by_turn ON messages (inbox_id);

-- A summary that stands in for a session's messages up to `up_to_message_id`.
CREATE TABLE compactions (
    id               INTEGER PRIMARY KEY,
    session_id       INTEGER NOT NULL REFERENCES sessions (id),
    up_to_message_id INTEGER NOT NULL,
    summary          TEXT    NOT NULL,
    created_at_ms    INTEGER NOT NULL
);
CREATE INDEX compactions_by_session ON compactions (session_id, id);

-- Facts the agent keeps about its owner and world (remember / forget).
CREATE TABLE memory (
    id            INTEGER PRIMARY KEY,
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    fact          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL
);

-- Replies, stored before they are sent. One reply per inbound message.
CREATE TABLE outbox (
    id                 INTEGER PRIMARY KEY,
    inbox_id           INTEGER UNIQUE,
    channel            TEXT    NOT NULL,
    chat               TEXT    NOT NULL,
    text               TEXT    NOT NULL,
    status             TEXT    NOT NULL DEFAULT 'pending',
    attempts           INTEGER NOT NULL DEFAULT 0,
    next_attempt_at_ms INTEGER NOT NULL,
    last_error         TEXT,
    created_at_ms      INTEGER NOT NULL,
    delivered_at_ms    INTEGER
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_at_ms);

ALTER TABLE inbox ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox ADD COLUMN done_at_ms INTEGER;
CREATE INDEX inbox_pending ON inbox (status, id);
