-- A trace's cached input tokens, read from and written to the provider's prompt cache (issue 34):
-- parts of input_tokens, as reasoning_tokens is of output_tokens. NULL: the provider did not say.
ALTER TABLE agent_traces ADD COLUMN cache_read_tokens BIGINT;
ALTER TABLE agent_traces ADD COLUMN cache_write_tokens BIGINT;
