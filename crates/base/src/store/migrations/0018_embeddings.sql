-- Migration 18: recall by meaning. With `[memory.embeddings]`, messages,
-- memories and scratchpad entries are embedded by the configured model
-- in the background, beside the FTS5 index, and searched by cosine
-- similarity as well as by words (crates/data/src/knowledge/embedding.rs).

-- One vector per item: little-endian f32, normalized to length 1, with
-- the model that made it (a vector is compared only with its model's).
-- `seq` grows with every write (AUTOINCREMENT never reuses one), so the
-- in-memory copy of the messages' vectors reads only what is newer.
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
