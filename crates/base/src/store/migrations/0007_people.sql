-- Migration 7: people and agents. Contacts and their identities on each
-- channel, pairing codes, sub-agents' own prompts and tool lists,
-- templates for delegated workers and the workers' runs, and the inbox
-- columns that route a message to the agent that answers it.

-- Someone the agents may talk to. The owner is a contact too (`is_owner`),
-- upserted from `[owner]` at every start; the in-memory owner check stays
-- the one authority for who the owner is.
CREATE TABLE contacts (
    id            INTEGER PRIMARY KEY,
    display_name  TEXT    NOT NULL COLLATE NOCASE UNIQUE,
    enabled       INTEGER NOT NULL DEFAULT 1,
    agent_id      INTEGER REFERENCES agents (id),
    is_owner      INTEGER NOT NULL DEFAULT 0,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX contacts_one_owner ON contacts (is_owner) WHERE is_owner = 1;

-- A contact's id on one channel (a Telegram user id, a Signal number). An
-- id belongs to one contact at a time; a removed identity is kept, with
-- the time it was removed.
CREATE TABLE contact_identities (
    id            INTEGER PRIMARY KEY,
    contact_id    INTEGER NOT NULL REFERENCES contacts (id),
    channel       TEXT    NOT NULL,
    native_id     TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    removed_at_ms INTEGER
);
CREATE UNIQUE INDEX contact_identities_active
    ON contact_identities (channel, native_id) WHERE removed_at_ms IS NULL;

-- One-time codes given to strangers inside a channel's allow-list when the
-- channel pairs (`unknown_sender = "pairing"`). Approving one creates the
-- contact; nothing the stranger sent is kept.
CREATE TABLE pairing_codes (
    code          TEXT    PRIMARY KEY,
    channel       TEXT    NOT NULL,
    sender        TEXT    NOT NULL,
    chat          TEXT    NOT NULL,
    sender_name   TEXT,
    state         TEXT    NOT NULL DEFAULT 'pending',
    created_at_ms INTEGER NOT NULL,
    decided_at_ms INTEGER,
    contact_id    INTEGER REFERENCES contacts (id)
);
CREATE INDEX pairing_codes_by_sender ON pairing_codes (channel, sender, created_at_ms);

-- Sub-agents: a prompt of their own, a tool whitelist (JSON list; `["*"]`
-- only for the main agent), an optional model.
ALTER TABLE agents ADD COLUMN system_prompt TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN allowed_tools TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agents ADD COLUMN model TEXT;
ALTER TABLE agents ADD COLUMN enabled INTEGER NOT NULL DEFAULT 1;
ALTER TABLE agents ADD COLUMN updated_at_ms INTEGER;
-- Agent 1 is the main agent from the start, whoever opens the store first
-- (a CLI command may, before any daemon has run).
INSERT OR IGNORE INTO agents (id, name, created_at_ms) VALUES (1, 'main', 0);
UPDATE agents SET allowed_tools = '["*"]' WHERE id = 1;
CREATE UNIQUE INDEX agents_by_name ON agents (name COLLATE NOCASE);

-- What a delegated worker is: a prompt, tools, and its bounds.
CREATE TABLE agent_templates (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL COLLATE NOCASE UNIQUE,
    system_prompt TEXT    NOT NULL,
    allowed_tools TEXT    NOT NULL DEFAULT '[]',
    max_turns     INTEGER NOT NULL,
    model         TEXT,
    token_budget  INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);

-- Every worker run, stored as it starts: after a crash, a run still marked
-- `running` is reported to its caller as interrupted, once.
CREATE TABLE workers (
    id              INTEGER PRIMARY KEY,
    caller_agent_id INTEGER NOT NULL REFERENCES agents (id),
    caller_inbox_id INTEGER,
    spec            TEXT    NOT NULL,
    task            TEXT    NOT NULL,
    session_id      INTEGER REFERENCES sessions (id),
    status          TEXT    NOT NULL DEFAULT 'running',
    result          TEXT,
    reported        INTEGER NOT NULL DEFAULT 0,
    started_at_ms   INTEGER NOT NULL,
    finished_at_ms  INTEGER
);
CREATE INDEX workers_running ON workers (status) WHERE status = 'running';

-- Routing: which agent takes a message, from which contact (NULL: the
-- owner), from where (`channel`; `agent` for a message one agent sent
-- another, `agent_reply` for the answer coming back), how many
-- agent-to-agent hops led to it, and the conversation the first agent was
-- in when it asked (where the answer goes back to).
ALTER TABLE inbox ADD COLUMN agent_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE inbox ADD COLUMN contact_id INTEGER;
ALTER TABLE inbox ADD COLUMN source TEXT NOT NULL DEFAULT 'channel';
ALTER TABLE inbox ADD COLUMN from_agent_id INTEGER;
ALTER TABLE inbox ADD COLUMN hops INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox ADD COLUMN origin_channel TEXT;
ALTER TABLE inbox ADD COLUMN origin_chat TEXT;
DROP INDEX inbox_pending;
CREATE INDEX inbox_pending ON inbox (agent_id, status, id);
