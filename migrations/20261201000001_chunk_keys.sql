-- Checkpoint chunks keyed by a small integer per trace (issue 37). Every checkpoint adds one row
-- per running trace, and one entry per running trace to the index that finds a trace's rows; with
-- the 38-character trace id in each entry, that index's leaves were rewritten as often as the rows
-- themselves, and the WAL grew by about 4 bytes per byte of events (docs/benchmarks.md, "Less
-- written per event"). `agent_traces.chunk_key` is a number given to each trace when it is
-- inserted, one more than the largest so far; the chunks name their trace by it, so an index entry
-- is a few bytes and a checkpoint of a thousand runs, written in key order, rewrites a few hundred
-- index pages instead of thousands.
ALTER TABLE agent_traces ADD COLUMN chunk_key INTEGER;
UPDATE agent_traces SET chunk_key = rowid;
CREATE UNIQUE INDEX agent_traces_by_chunk_key ON agent_traces (chunk_key);
CREATE TRIGGER agent_traces_chunk_key AFTER INSERT ON agent_traces
WHEN NEW.chunk_key IS NULL
BEGIN
    UPDATE agent_traces SET chunk_key = (SELECT IFNULL(MAX(chunk_key), 0) + 1 FROM agent_traces)
    WHERE rowid = NEW.rowid;
END;

CREATE TABLE trace_event_chunks_keyed (
    id         INTEGER PRIMARY KEY,
    trace_key  INTEGER NOT NULL REFERENCES agent_traces (chunk_key) ON DELETE CASCADE,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    -- A JSON array of the events first_seq ..= last_seq, in seq order.
    events     TEXT NOT NULL
);
INSERT INTO trace_event_chunks_keyed (id, trace_key, first_seq, last_seq, events)
    SELECT c.id, t.chunk_key, c.first_seq, c.last_seq, c.events
    FROM trace_event_chunks c JOIN agent_traces t ON t.trace_id = c.trace_id;
DROP TABLE trace_event_chunks;
ALTER TABLE trace_event_chunks_keyed RENAME TO trace_event_chunks;
CREATE UNIQUE INDEX trace_event_chunks_by_trace ON trace_event_chunks (trace_key, first_seq);
