-- A checkpoint appends one row per running trace (a JSON array of its new events) rather than one
-- row per event: a checkpoint of a thousand runs writes a thousand rows, not tens of thousands.
-- Rows are keyed by an increasing rowid so that inserts append to the end of the table, whose
-- pages stay in the cache; keyed by (trace_id, seq), inserts landed on random pages of a table
-- that grows with every running trace, and a checkpoint of 1,000 runs took 50 to 150 ms.
-- The rows of a trace are deleted when it closes and its events move into `agent_traces.events`.
CREATE TABLE trace_event_chunks (
    id         INTEGER PRIMARY KEY,
    trace_id   TEXT NOT NULL REFERENCES agent_traces (trace_id) ON DELETE CASCADE,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    -- A JSON array of the events first_seq ..= last_seq, in seq order.
    events     TEXT NOT NULL
);
CREATE UNIQUE INDEX trace_event_chunks_by_trace ON trace_event_chunks (trace_id, first_seq);

INSERT INTO trace_event_chunks (trace_id, first_seq, last_seq, events)
    SELECT trace_id, seq, seq, '[' || event || ']' FROM trace_events ORDER BY trace_id, seq;

DROP TABLE trace_events;
