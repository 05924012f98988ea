-- Archived conversations leave the list without being deleted (issue 35). NULL: not archived.
ALTER TABLE conversations ADD COLUMN archived_at TIMESTAMPTZ;
