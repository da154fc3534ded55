-- Files a reply carries (JSON array of attachments), sent after its text.
ALTER TABLE outbox ADD COLUMN attachments TEXT;
