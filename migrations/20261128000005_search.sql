-- Search (issue 35): one row per searchable piece of a conversation (its title, a question, an
-- answer, a reasoning block, a tool call: name, arguments, output), written by the same write
-- that stores the text (the run's start, its end, a rename) and deleted with the conversation.
-- `body` is the stored (already redacted) text; `search_fts` indexes it (external content, kept
-- in step by the triggers below; `secure-delete` removes a deleted row's words from the index).
CREATE TABLE search_docs (
    id INTEGER PRIMARY KEY,
    owner_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    message_id TEXT,
    step TEXT,
    kind TEXT NOT NULL,
    tool TEXT,
    status TEXT,
    model TEXT,
    created_at TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX search_docs_conversation ON search_docs (conversation_id);
CREATE INDEX search_docs_message ON search_docs (message_id);
-- An owner's pieces in rowid order: the order they were indexed in, newest last.
CREATE INDEX search_docs_owner ON search_docs (owner_id);

CREATE VIRTUAL TABLE search_fts USING fts5(
    body, content = 'search_docs', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO search_fts (search_fts, rank) VALUES ('secure-delete', 1);

CREATE TRIGGER search_docs_insert AFTER INSERT ON search_docs BEGIN
    INSERT INTO search_fts (rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER search_docs_delete AFTER DELETE ON search_docs BEGIN
    INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TRIGGER search_docs_update AFTER UPDATE OF body ON search_docs BEGIN
    INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', old.id, old.body);
    INSERT INTO search_fts (rowid, body) VALUES (new.id, new.body);
END;
