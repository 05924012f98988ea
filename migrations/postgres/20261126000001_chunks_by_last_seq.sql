-- Readers on other instances ask for a running trace's chunks with last_seq past what they have
-- read (`chunks_after`, `events_after`). The primary key is (trace_id, first_seq), so that filter
-- scanned every chunk of the trace: at a checkpoint every 10 ms, hundreds of rows per trace and
-- growing while the run goes, for each of thousands of followed traces at every notification.
-- With this index it reads only the new rows.
CREATE INDEX trace_event_chunks_by_last_seq ON trace_event_chunks (trace_id, last_seq);
