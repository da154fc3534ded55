-- Migration 2: hearth.kv, the scripts' persistent key-value store.
-- One namespace per script (a skill's tools share the skill's namespace);
-- values are JSON text.
CREATE TABLE kv (
    namespace     TEXT    NOT NULL,
    key           TEXT    NOT NULL,
    value         TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
