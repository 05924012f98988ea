-- Search (issue 35): conversations stored before the search index existed have no pieces in it.
-- Each is listed here once; the server indexes them in the background after it starts, a few per
-- write, and removes each from the list in the write that indexes it (see store::search::backfill).
CREATE TABLE search_backfill (
    conversation_id TEXT PRIMARY KEY NOT NULL REFERENCES conversations (id) ON DELETE CASCADE
);
INSERT INTO search_backfill (conversation_id)
SELECT c.id FROM conversations c
WHERE NOT EXISTS (SELECT 1 FROM search_docs d WHERE d.conversation_id = c.id);
