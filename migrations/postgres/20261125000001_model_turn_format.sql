-- The wire format a model turn's request was sent in (`openai_chat`, `openai_responses`,
-- `anthropic`): the request is now recorded exactly as sent. Earlier turns were recorded in
-- OpenAI chat format.
ALTER TABLE model_turns ADD COLUMN format TEXT NOT NULL DEFAULT 'openai_chat';
