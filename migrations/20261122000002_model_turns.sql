-- Each model turn of a run: the request as sent and the response as received, both in OpenAI chat
-- format and redacted like every event. The inspector export reads these.
CREATE TABLE model_turns (
    trace_id      TEXT NOT NULL REFERENCES agent_traces (trace_id) ON DELETE CASCADE,
    turn_index    INTEGER NOT NULL,
    model         TEXT NOT NULL,
    -- The run's last event seq before the request went out: orders turns among tool calls.
    after_seq     INTEGER NOT NULL,
    request       TEXT NOT NULL,
    response      TEXT NOT NULL,
    started_at    TEXT NOT NULL,
    completed_at  TEXT NOT NULL,
    PRIMARY KEY (trace_id, turn_index)
) WITHOUT ROWID;
