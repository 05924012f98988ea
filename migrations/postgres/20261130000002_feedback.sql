-- Feedback (issue 36): a user's thumbs up or down with an optional comment on an answer
-- (`step_id` = ''), and notes on its steps (`step_id` = a reasoning part's or a tool call's id,
-- `rating` NULL). One row per (owner, message, step): a second PUT edits it. Written through the
-- store's writer with its search piece (`search_docs`, kind 'feedback'); deleted with the
-- conversation (explicitly in the delete, and by the cascade).
CREATE TABLE feedback (
    owner_id         TEXT NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    trace_id         TEXT,
    message_id       TEXT NOT NULL,
    step_id          TEXT NOT NULL DEFAULT '',
    rating           TEXT CHECK (rating IN ('up', 'down')),
    comment          TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (owner_id, message_id, step_id)
);
CREATE INDEX feedback_conversation ON feedback (conversation_id);
CREATE INDEX feedback_message ON feedback (message_id);
