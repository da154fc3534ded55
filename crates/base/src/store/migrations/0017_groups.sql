-- Migration 17: agent groups (crates/agent/src/groups). A group of agents takes a
-- mission; its leader plans it into deliverables with dependencies; the
-- members carry them out. Model calls of a new kind, `group`, so the usage
-- table is rebuilt with its rows (SQLite cannot change a CHECK in place).
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
CREATE TABLE usage_new (
    id                 INTEGER PRIMARY KEY,
    at_ms              INTEGER NOT NULL,
    agent_id           INTEGER NOT NULL,
    session_id         INTEGER,
    inbox_id           INTEGER,
    kind               TEXT    NOT NULL
                       CHECK (kind IN ('turn', 'pre_compaction', 'compaction', 'worker', 'summary', 'group')),
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
