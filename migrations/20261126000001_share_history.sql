-- A share link shows only its own turn unless its owner chose to include the conversation before
-- it: the model turns' request bodies carry the earlier questions and answers (issue 30).
ALTER TABLE trace_shares ADD COLUMN include_history INTEGER NOT NULL DEFAULT 0;
