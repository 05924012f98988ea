-- Branches (issue 36): a regenerated answer or an edited question is a sibling of the message it
-- replaces. Every message keeps the message it follows (`parent_id`, NULL for a first question);
-- the conversation as every reader sees it is its active path (`active`), one message per
-- position. `selected_at` is when a message last became active: switching to a sibling follows,
-- below it, the branch chosen last.
ALTER TABLE messages ADD COLUMN parent_id TEXT;
ALTER TABLE messages ADD COLUMN active BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE messages ADD COLUMN selected_at TIMESTAMPTZ;
UPDATE messages m SET selected_at = m.created_at,
    parent_id = (SELECT p.id FROM messages p WHERE p.conversation_id = m.conversation_id AND p.position = m.position - 1);
ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_position_key;
-- One active message per position; any number of inactive ones.
CREATE UNIQUE INDEX idx_messages_active_position ON messages (conversation_id, position) WHERE active;
-- A message's siblings and children.
CREATE INDEX idx_messages_parent ON messages (conversation_id, parent_id);
