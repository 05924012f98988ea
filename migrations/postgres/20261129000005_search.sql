-- Search (issue 35): one row per searchable piece of a conversation (its title, a question, an
-- answer, a reasoning block, a tool call: name, arguments, output), written by the same write
-- that stores the text (the run's start, its end, a rename) and deleted with the conversation.
-- `body` is the stored (already redacted) text; `tsv` its words ('simple': no stemming, as the
-- SQLite store's unicode61), under a GIN index.
CREATE TABLE search_docs (
    id BIGSERIAL PRIMARY KEY,
    owner_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    message_id TEXT,
    step TEXT,
    kind TEXT NOT NULL,
    tool TEXT,
    status TEXT,
    model TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    body TEXT NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED
);
CREATE INDEX search_docs_tsv ON search_docs USING GIN (tsv);
CREATE INDEX search_docs_conversation ON search_docs (conversation_id);
CREATE INDEX search_docs_message ON search_docs (message_id);
-- An owner's pieces in the order they were indexed in.
CREATE INDEX search_docs_owner ON search_docs (owner_id, id);
