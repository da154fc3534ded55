-- Migration 8: the scheduler's jobs, and the inbox column that ties a
-- firing to its job.

-- One reminder or scheduled task. Times are milliseconds since the Unix
-- epoch (UTC); a cron expression is read in `zone`.
CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY,
    -- 'reminder' (wakes the conversation it came from) or 'task' (a fresh
    -- session whose answer goes to the owner).
    kind          TEXT    NOT NULL,
    -- A 5-field cron expression or an alias (@daily); NULL for a one-shot.
    cron          TEXT,
    -- The IANA zone the cron expression is read in.
    zone          TEXT    NOT NULL,
    -- A one-shot's instant; NULL for a cron job.
    at_ms         INTEGER,
    -- The reminder's message or the task's prompt.
    text          TEXT    NOT NULL,
    -- The agent that takes each firing.
    agent_id      INTEGER NOT NULL REFERENCES agents (id),
    -- A reminder's conversation: where it was set.
    channel       TEXT,
    chat          TEXT,
    -- A task's model and token budget (NULL: the agent's own, unbounded).
    model         TEXT,
    token_budget  INTEGER,
    -- What to do with runs missed while the daemon was down: once, skip, all.
    missed        TEXT    NOT NULL DEFAULT 'once',
    enabled       INTEGER NOT NULL DEFAULT 1,
    next_run_ms   INTEGER,
    last_run_ms   INTEGER,
    last_outcome  TEXT,
    -- Failed runs in a row; at [scheduler] max_failures the job is disabled.
    failures      INTEGER NOT NULL DEFAULT 0,
    -- NULL: the owner; else the agent that created it.
    created_by    INTEGER REFERENCES agents (id),
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    -- Removed jobs are kept, so removing does not reset the creation limit.
    removed_at_ms INTEGER
);
CREATE INDEX jobs_due ON jobs (next_run_ms) WHERE enabled = 1 AND removed_at_ms IS NULL;
CREATE INDEX jobs_by_creator ON jobs (created_by, created_at_ms);

-- The job whose firing stored this message.
ALTER TABLE inbox ADD COLUMN job_id INTEGER;
