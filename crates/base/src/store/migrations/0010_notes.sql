-- Migration 10: the second tier of an agent's notes, the scratchpad:
-- entries with a title and a body, of which the prompt shows titles only.
-- Memories (the first tier) stay in `memory`, now for every agent.
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
