-- Migration 9: full-text search over every stored message.

-- The searchable text of each message, by the message's id: its text
-- blocks, and each tool result cut to 2,000 characters (tool calls' inputs
-- are not indexed). Every message has exactly one row (empty when it has
-- no text). The triggers keep it in step inside the transaction that
-- writes the message, so the index can never lag or lead the table.
CREATE VIRTUAL TABLE message_index USING fts5(
    body,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER message_indexed AFTER INSERT ON messages BEGIN
    INSERT INTO message_index (rowid, body)
    SELECT new.id, group_concat(piece, char(10))
    FROM (
        SELECT CASE json_extract(value, '$.type')
                   WHEN 'text' THEN json_extract(value, '$.text')
                   WHEN 'tool_result' THEN substr(json_extract(value, '$.content'), 1, 2000)
               END AS piece
        FROM json_each(CASE WHEN json_valid(new.content) THEN new.content ELSE '[]' END)
    )
    WHERE piece IS NOT NULL AND piece != '';
END;

CREATE TRIGGER message_unindexed AFTER DELETE ON messages BEGIN
    DELETE FROM message_index WHERE rowid = old.id;
END;

-- Messages stored before this migration.
INSERT INTO message_index (rowid, body)
SELECT m.id, group_concat(
           CASE json_extract(j.value, '$.type')
               WHEN 'text' THEN json_extract(j.value, '$.text')
               WHEN 'tool_result' THEN substr(json_extract(j.value, '$.content'), 1, 2000)
           END, char(10))
FROM messages m
LEFT JOIN json_each(CASE WHEN json_valid(m.content) THEN m.content ELSE '[]' END) j
GROUP BY m.id;
