-- Migration 9: full-text search over every stored message.

-- The searchable text of each message, by the message's id: its text
-- blocks, and each tool result cut to 2,000 characters (tool calls' inputs
-- are not indexed). Every indexed message has exactly one row (empty when
-- it has no text).
CREATE VIRTUAL TABLE message_index USING fts5(
    body,
    tokenize = 'unicode61 remove_diacritics 2'
);

-- Messages stored but not indexed yet. Writing a message into the FTS5
-- index costs about 70 µs per transaction, on every turn; the trigger
-- below costs one row here instead, in the message's own transaction, and
-- the indexer moves the queue into the index in batches off the turn's
-- path (and before every search). A message is always in exactly one of
-- the two.
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

-- Messages stored before this migration are indexed by the first drain.
INSERT INTO message_index_queue (message_id) SELECT id FROM messages;
