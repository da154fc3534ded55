-- The whole schema as of the last migration, in one piece. A fresh store
-- is created from this file in one step; an existing store is brought up to
-- date by the numbered files in `migrations/`, which stay the history.
-- Creating a fresh store through seventeen `ALTER TABLE`s re-reads the
-- schema each time and costs milliseconds on the path to ready.
--
-- Every new migration is applied here too, and `store::tests` proves that
-- this file and the migrations give the same tables, columns, indexes and
-- rows. Column comments live in the migration that added the column.

CREATE TABLE inbox (
    id              INTEGER PRIMARY KEY,
    channel         TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    sender          TEXT    NOT NULL,
    chat            TEXT,
    text            TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'pending',
    received_at_ms  INTEGER NOT NULL,
    retried         INTEGER NOT NULL DEFAULT 0,
    done_at_ms      INTEGER,
    attachments     TEXT,
    agent_id        INTEGER NOT NULL DEFAULT 1,
    contact_id      INTEGER,
    source          TEXT    NOT NULL DEFAULT 'channel',
    from_agent_id   INTEGER,
    hops            INTEGER NOT NULL DEFAULT 0,
    origin_channel  TEXT,
    origin_chat     TEXT,
    job_id          INTEGER,
    UNIQUE (channel, idempotency_key)
);
CREATE TABLE daemon_runs (
    id            INTEGER PRIMARY KEY,
    pid           INTEGER NOT NULL,
    version       TEXT    NOT NULL,
    started_at_ms INTEGER NOT NULL,
    ready_at_ms   INTEGER,
    stopped_at_ms INTEGER,
    clean_stop    INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE kv (
    namespace     TEXT    NOT NULL,
    key           TEXT    NOT NULL,
    value         TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
CREATE TABLE agents (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    system_prompt TEXT    NOT NULL DEFAULT '',
    allowed_tools TEXT    NOT NULL DEFAULT '[]',
    model         TEXT,
    enabled       INTEGER NOT NULL DEFAULT 1,
    updated_at_ms INTEGER
);
CREATE TABLE sessions (
    id            INTEGER PRIMARY KEY,
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    channel       TEXT    NOT NULL,
    chat          TEXT    NOT NULL,
    started_at_ms INTEGER NOT NULL,
    ended_at_ms   INTEGER
);
CREATE INDEX sessions_open ON sessions (agent_id, channel, chat) WHERE ended_at_ms IS NULL;
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
CREATE TABLE compactions (
    id               INTEGER PRIMARY KEY,
    session_id       INTEGER NOT NULL REFERENCES sessions (id),
    up_to_message_id INTEGER NOT NULL,
    summary          TEXT    NOT NULL,
    created_at_ms    INTEGER NOT NULL
);
CREATE INDEX compactions_by_session ON compactions (session_id, id);
CREATE TABLE memory (
    id            INTEGER PRIMARY KEY,
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    fact          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    source        TEXT    NOT NULL DEFAULT 'agent'
                  CHECK (source IN ('agent', 'captured')),
    session_id    INTEGER
);
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
    delivered_at_ms    INTEGER,
    attachments        TEXT
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_at_ms);
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
    decided_at_ms INTEGER,
    cwd           TEXT,
    mode          TEXT
);
CREATE INDEX confirmations_by_time ON confirmations (at_ms);
CREATE INDEX inbox_by_chat ON inbox (channel, chat, id);
CREATE INDEX outbox_by_chat ON outbox (channel, chat, id);
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
CREATE UNIQUE INDEX agents_by_name ON agents (name COLLATE NOCASE);
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
CREATE INDEX inbox_pending ON inbox (agent_id, status, id);

CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL,
    cron          TEXT,
    zone          TEXT    NOT NULL,
    at_ms         INTEGER,
    text          TEXT    NOT NULL,
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    channel       TEXT,
    chat          TEXT,
    model         TEXT,
    token_budget  INTEGER,
    missed        TEXT    NOT NULL DEFAULT 'once',
    enabled       INTEGER NOT NULL DEFAULT 1,
    next_run_ms   INTEGER,
    last_run_ms   INTEGER,
    last_outcome  TEXT,
    failures      INTEGER NOT NULL DEFAULT 0,
    created_by    INTEGER REFERENCES agents (id),
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    removed_at_ms INTEGER
);
CREATE INDEX jobs_due ON jobs (next_run_ms) WHERE enabled = 1 AND removed_at_ms IS NULL;
CREATE INDEX jobs_by_creator ON jobs (created_by, created_at_ms);

CREATE VIRTUAL TABLE message_index USING fts5(
    body,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE message_index_queue (
    message_id INTEGER PRIMARY KEY
);

CREATE TRIGGER message_queued AFTER INSERT ON messages BEGIN
    INSERT INTO message_index_queue (message_id) VALUES (new.id);
END;

CREATE TRIGGER message_unindexed AFTER DELETE ON messages BEGIN
    DELETE FROM message_index_queue WHERE message_id = old.id;
    DELETE FROM message_index WHERE rowid = old.id;
END;

CREATE TABLE scratchpad (
    id            INTEGER PRIMARY KEY,
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    title         TEXT    NOT NULL,
    body          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE INDEX scratchpad_by_agent ON scratchpad (agent_id, id);
CREATE INDEX memory_by_agent ON memory (agent_id, id);

CREATE TABLE identity_versions (
    version       INTEGER PRIMARY KEY,
    text          TEXT    NOT NULL,
    author        TEXT    NOT NULL,
    note          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL
);

CREATE TABLE notepads (
    session_id    INTEGER PRIMARY KEY REFERENCES sessions (id),
    text          TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL
);

-- Agent 1 is the main agent from the start (migration 7).
INSERT INTO agents (id, name, created_at_ms, allowed_tools) VALUES (1, 'main', 0, '["*"]');

CREATE TABLE versions (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    content       TEXT,
    hash          TEXT    NOT NULL,
    author        TEXT    NOT NULL,
    note          TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    UNIQUE (kind, name, version)
);

CREATE TABLE pages (
    path          TEXT    PRIMARY KEY,
    mime          TEXT    NOT NULL,
    content       TEXT,
    file          TEXT,
    public        INTEGER NOT NULL DEFAULT 0,
    queries       TEXT    NOT NULL DEFAULT '{}',
    author        TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    CHECK ((content IS NULL) != (file IS NULL))
);

CREATE TABLE usage (
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
CREATE INDEX usage_by_time ON usage (at_ms);

CREATE TABLE groups (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    status        TEXT    NOT NULL DEFAULT 'idle'
                  CHECK (status IN ('idle', 'planning', 'awaiting-approval', 'executing', 'complete', 'failed', 'archived')),
    mission       TEXT,
    auto_execute  INTEGER NOT NULL DEFAULT 0,
    plan          TEXT,
    plan_errors   TEXT,
    plan_tries    INTEGER NOT NULL DEFAULT 0,
    plan_round    INTEGER NOT NULL DEFAULT 0,
    replan_reason TEXT,
    summary       TEXT,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE TABLE group_members (
    group_id      INTEGER NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    role          TEXT    NOT NULL DEFAULT '',
    leader        INTEGER NOT NULL DEFAULT 0,
    position      INTEGER NOT NULL,
    state         TEXT    NOT NULL DEFAULT 'idle' CHECK (state IN ('idle', 'working', 'blocked', 'errored')),
    progress      TEXT    NOT NULL DEFAULT '',
    blockers      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (group_id, agent_id)
);
CREATE UNIQUE INDEX group_one_leader ON group_members (group_id) WHERE leader = 1;
CREATE TABLE group_deliverables (
    id            INTEGER PRIMARY KEY,
    group_id      INTEGER NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    key           TEXT    NOT NULL,
    round         INTEGER NOT NULL,
    title         TEXT    NOT NULL,
    description   TEXT    NOT NULL DEFAULT '',
    assignee      INTEGER NOT NULL REFERENCES agents (id),
    depends_on    TEXT    NOT NULL DEFAULT '[]',
    status        TEXT    NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'running', 'complete', 'failed', 'blocked')),
    session_id    INTEGER,
    starts        INTEGER NOT NULL DEFAULT 0,
    result        TEXT,
    error         TEXT,
    started_at_ms INTEGER,
    finished_at_ms INTEGER,
    UNIQUE (group_id, key)
);
CREATE TABLE group_posts (
    id            INTEGER PRIMARY KEY,
    group_id      INTEGER NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    agent_id      INTEGER,
    deliverable   TEXT,
    kind          TEXT    NOT NULL
                  CHECK (kind IN ('status', 'finding', 'change', 'question', 'complete', 'decision', 'interface', 'system')),
    content       TEXT    NOT NULL,
    at_ms         INTEGER NOT NULL
);
CREATE INDEX group_posts_by_group ON group_posts (group_id, id);

-- Migration 18: recall by meaning (see migrations/0018_embeddings.sql).
CREATE TABLE embeddings (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    kind    TEXT    NOT NULL CHECK (kind IN ('message', 'memory', 'scratchpad')),
    item_id INTEGER NOT NULL,
    model   TEXT    NOT NULL,
    dims    INTEGER NOT NULL,
    vector  BLOB    NOT NULL,
    UNIQUE (kind, item_id)
);

-- Items waiting for a vector, as `message_index_queue` waits for FTS5: a
-- trigger queues each in the transaction that stores or changes it, and
-- the indexer embeds the queue in batches off the turn's path. A failure
-- keeps the row and puts `next_try_ms` off (with `attempts` for a text
-- the endpoint refuses); nothing is dropped.
CREATE TABLE embedding_queue (
    kind        TEXT    NOT NULL,
    item_id     INTEGER NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_try_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, item_id)
) WITHOUT ROWID;

-- The model the daemon embeds with; no row: no endpoint is configured,
-- and the triggers queue nothing (a store without embeddings pays one
-- lookup per write).
CREATE TABLE embedding_model (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    model TEXT    NOT NULL
);

CREATE TRIGGER message_embedding_queued AFTER INSERT ON messages
WHEN EXISTS (SELECT 1 FROM embedding_model) BEGIN
    INSERT OR IGNORE INTO embedding_queue (kind, item_id) VALUES ('message', new.id);
END;
CREATE TRIGGER message_embedding_dropped AFTER DELETE ON messages BEGIN
    DELETE FROM embedding_queue WHERE kind = 'message' AND item_id = old.id;
    DELETE FROM embeddings WHERE kind = 'message' AND item_id = old.id;
END;

CREATE TRIGGER memory_embedding_queued AFTER INSERT ON memory
WHEN EXISTS (SELECT 1 FROM embedding_model) BEGIN
    INSERT OR IGNORE INTO embedding_queue (kind, item_id) VALUES ('memory', new.id);
END;
CREATE TRIGGER memory_embedding_changed AFTER UPDATE OF fact ON memory BEGIN
    DELETE FROM embeddings WHERE kind = 'memory' AND item_id = new.id;
    INSERT OR REPLACE INTO embedding_queue (kind, item_id)
        SELECT 'memory', new.id WHERE EXISTS (SELECT 1 FROM embedding_model);
END;
CREATE TRIGGER memory_embedding_dropped AFTER DELETE ON memory BEGIN
    DELETE FROM embedding_queue WHERE kind = 'memory' AND item_id = old.id;
    DELETE FROM embeddings WHERE kind = 'memory' AND item_id = old.id;
END;

CREATE TRIGGER scratchpad_embedding_queued AFTER INSERT ON scratchpad
WHEN EXISTS (SELECT 1 FROM embedding_model) BEGIN
    INSERT OR IGNORE INTO embedding_queue (kind, item_id) VALUES ('scratchpad', new.id);
END;
CREATE TRIGGER scratchpad_embedding_changed AFTER UPDATE OF title, body ON scratchpad BEGIN
    DELETE FROM embeddings WHERE kind = 'scratchpad' AND item_id = new.id;
    INSERT OR REPLACE INTO embedding_queue (kind, item_id)
        SELECT 'scratchpad', new.id WHERE EXISTS (SELECT 1 FROM embedding_model);
END;
CREATE TRIGGER scratchpad_embedding_dropped AFTER DELETE ON scratchpad BEGIN
    DELETE FROM embedding_queue WHERE kind = 'scratchpad' AND item_id = old.id;
    DELETE FROM embeddings WHERE kind = 'scratchpad' AND item_id = old.id;
END;

-- Migration 19: automatic memory capture (see migrations/0019_capture.sql).
CREATE TABLE capture_marks (
    session_id       INTEGER PRIMARY KEY,
    up_to_message_id INTEGER NOT NULL,
    at_ms            INTEGER NOT NULL
);
