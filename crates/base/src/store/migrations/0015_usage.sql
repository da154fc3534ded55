-- Migration 15: every model call's tokens, for the usage reports and the
-- daily token budget (crates/model/src/usage). A row per call that answered; the
-- four counts are disjoint (see llm::Usage) and each is priced on its own.
CREATE TABLE usage (
    id                 INTEGER PRIMARY KEY,
    at_ms              INTEGER NOT NULL,
    -- The agent whose work it was: the one whose turn it is, or the agent
    -- that spawned the worker. No foreign key: the record outlives an
    -- agent removed later.
    agent_id           INTEGER NOT NULL,
    -- The session the call belongs to (a worker's own, for a worker).
    session_id         INTEGER,
    -- The inbox message whose turn it counted toward, if any.
    inbox_id           INTEGER,
    -- `turn` (a step of a turn), `pre_compaction` (the notepad step before
    -- a compaction), `compaction` (the summary), `worker`.
    kind               TEXT    NOT NULL
                       CHECK (kind IN ('turn', 'pre_compaction', 'compaction', 'worker')),
    -- `anthropic` or `openai`: the wire format.
    provider           TEXT    NOT NULL,
    -- The model that answered (a fallback's name when the first failed).
    model              TEXT    NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL
);
-- Today's sum (the daily budget, at start and at midnight) and the
-- reports read a range of times.
CREATE INDEX usage_by_time ON usage (at_ms);
