-- Conversations, their messages, and one trace per agent run.
-- Ids are UUID text; timestamps are RFC 3339 UTC text with milliseconds (they sort as text).

CREATE TABLE conversations (
    id          TEXT PRIMARY KEY NOT NULL,
    owner_id    TEXT NOT NULL,
    title       TEXT NOT NULL,
    model       TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX idx_conversations_owner_updated ON conversations (owner_id, updated_at DESC);

-- User and assistant messages. `body` is the canonical message JSON (segments included).
CREATE TABLE messages (
    id               TEXT PRIMARY KEY NOT NULL,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position         INTEGER NOT NULL,
    role             TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    status           TEXT NOT NULL CHECK (status IN ('streaming', 'complete', 'cancelled', 'error', 'interrupted')),
    body             TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    UNIQUE (conversation_id, position)
);

-- One row per agent run (seed 000's table). `events` holds the whole event list as a JSON array
-- once the run has ended; while it runs, events are checkpointed into `trace_events` instead, so
-- each checkpoint costs what it appends, not what came before.
CREATE TABLE agent_traces (
    trace_id             TEXT PRIMARY KEY NOT NULL,
    run_id               TEXT NOT NULL UNIQUE,
    conversation_id      TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    message_id           TEXT NOT NULL,
    user_message_id      TEXT NOT NULL,
    model                TEXT NOT NULL,
    events               TEXT,
    started_at           TEXT NOT NULL,
    completed_at         TEXT,
    status               TEXT NOT NULL DEFAULT 'running'
                         CHECK (status IN ('running', 'completed', 'cancelled', 'error', 'interrupted')),
    total_tool_calls     INTEGER NOT NULL DEFAULT 0,
    input_tokens         INTEGER,
    output_tokens        INTEGER,
    reasoning_tokens     INTEGER,
    total_tokens_used    INTEGER,
    total_duration_ms    INTEGER,
    cancelled_by         TEXT CHECK (cancelled_by IN ('user', 'timeout', 'shutdown')),
    cancellation_reason  TEXT,
    error_code           TEXT,
    created_at           TEXT NOT NULL
);
CREATE INDEX idx_agent_traces_conversation ON agent_traces (conversation_id);
CREATE INDEX idx_agent_traces_message ON agent_traces (message_id);
CREATE INDEX idx_agent_traces_status ON agent_traces (status);
CREATE INDEX idx_agent_traces_created ON agent_traces (created_at);

-- Events of runs still going (or cut off by a crash), appended at each checkpoint.
CREATE TABLE trace_events (
    trace_id  TEXT NOT NULL REFERENCES agent_traces (trace_id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    event     TEXT NOT NULL,
    PRIMARY KEY (trace_id, seq)
) WITHOUT ROWID;
