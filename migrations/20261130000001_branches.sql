-- Branches (issue 36): a regenerated answer or an edited question is a sibling of the message it
-- replaces. Every message keeps the message it follows (`parent_id`, NULL for a first question);
-- the conversation as every reader sees it is its active path (`active`), one message per
-- position. `selected_at` is when a message last became active: switching to a sibling follows,
-- below it, the branch chosen last.
-- SQLite cannot drop a UNIQUE constraint, so the table is made again with the same rows.
CREATE TABLE messages_branches (
    id               TEXT PRIMARY KEY NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position         INTEGER NOT NULL,
    role             TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    status           TEXT NOT NULL CHECK (status IN ('streaming', 'complete', 'cancelled', 'error', 'interrupted')),
    body             TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    parent_id        TEXT,
    active           BOOLEAN NOT NULL DEFAULT 1,
    selected_at      TEXT
);
INSERT INTO messages_branches (id, conversation_id, position, role, status, body, created_at, parent_id, active, selected_at)
SELECT m.id, m.conversation_id, m.position, m.role, m.status, m.body, m.created_at,
       (SELECT p.id FROM messages p WHERE p.conversation_id = m.conversation_id AND p.position = m.position - 1),
       1, m.created_at
FROM messages m;
DROP TABLE messages;
ALTER TABLE messages_branches RENAME TO messages;
-- One active message per position; any number of inactive ones.
CREATE UNIQUE INDEX idx_messages_active_position ON messages (conversation_id, position) WHERE active;
-- A message's siblings and children.
CREATE INDEX idx_messages_parent ON messages (conversation_id, parent_id);
