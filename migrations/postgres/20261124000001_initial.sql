-- The PostgreSQL schema: the same tables as SQLite's migrations (one level up) reach, in one step,
-- with PostgreSQL's types: JSONB for events, message bodies and model turns; TIMESTAMPTZ for
-- times; BIGINT for every count. Ids are UUID text, as in SQLite, so exports are the same.
-- Times are written as RFC 3339 text and read back through rfc3339_millis(), the format the API
-- and the SQLite store use ("2026-11-24T10:30:00.123Z").

CREATE FUNCTION rfc3339_millis(t TIMESTAMPTZ) RETURNS TEXT
    LANGUAGE sql STABLE STRICT
    AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

CREATE TABLE conversations (
    id          TEXT PRIMARY KEY,
    owner_id    TEXT NOT NULL,
    title       TEXT NOT NULL,
    model       TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX idx_conversations_owner_updated ON conversations (owner_id, updated_at DESC);

-- User and assistant messages. `body` is the canonical message (segments included).
CREATE TABLE messages (
    id               TEXT PRIMARY KEY,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position         BIGINT NOT NULL,
    role             TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    status           TEXT NOT NULL CHECK (status IN ('streaming', 'complete', 'cancelled', 'error', 'interrupted')),
    body             JSONB NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    UNIQUE (conversation_id, position)
);

-- One row per agent run (seed 000's table). `events` holds the whole event list as a JSONB array
-- once the run has ended; while it runs, its events are checkpointed into trace_event_chunks.
CREATE TABLE agent_traces (
    trace_id             TEXT PRIMARY KEY,
    run_id               TEXT NOT NULL UNIQUE,
    conversation_id      TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    message_id           TEXT NOT NULL,
    user_message_id      TEXT NOT NULL,
    model                TEXT NOT NULL,
    events               JSONB,
    started_at           TIMESTAMPTZ NOT NULL,
    completed_at         TIMESTAMPTZ,
    status               TEXT NOT NULL DEFAULT 'running'
                         CHECK (status IN ('running', 'completed', 'cancelled', 'error', 'interrupted')),
    total_tool_calls     BIGINT NOT NULL DEFAULT 0,
    input_tokens         BIGINT,
    output_tokens        BIGINT,
    reasoning_tokens     BIGINT,
    total_tokens_used    BIGINT,
    total_duration_ms    BIGINT,
    cancelled_by         TEXT CHECK (cancelled_by IN ('user', 'timeout', 'shutdown')),
    cancellation_reason  TEXT,
    error_code           TEXT,
    created_at           TIMESTAMPTZ NOT NULL
);
CREATE INDEX idx_agent_traces_conversation ON agent_traces (conversation_id);
CREATE INDEX idx_agent_traces_message ON agent_traces (message_id);
CREATE INDEX idx_agent_traces_status ON agent_traces (status);
CREATE INDEX idx_agent_traces_created ON agent_traces (created_at);
-- One run at a time per conversation, whichever instance starts it: a second insert while one
-- is running fails, and the store answers 409.
CREATE UNIQUE INDEX agent_traces_one_running ON agent_traces (conversation_id) WHERE status = 'running';

-- Events of runs still going (or cut off by a crash): one row per trace per checkpoint, a JSONB
-- array of the events first_seq ..= last_seq. Deleted when the run closes.
CREATE TABLE trace_event_chunks (
    trace_id   TEXT NOT NULL REFERENCES agent_traces (trace_id) ON DELETE CASCADE,
    first_seq  BIGINT NOT NULL,
    last_seq   BIGINT NOT NULL,
    events     JSONB NOT NULL,
    PRIMARY KEY (trace_id, first_seq)
);

-- Each model turn of a run, redacted like every event; the inspector export reads these.
CREATE TABLE model_turns (
    trace_id      TEXT NOT NULL REFERENCES agent_traces (trace_id) ON DELETE CASCADE,
    turn_index    BIGINT NOT NULL,
    model         TEXT NOT NULL,
    after_seq     BIGINT NOT NULL,
    request       JSONB NOT NULL,
    response      JSONB NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    completed_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (trace_id, turn_index)
);

-- Local accounts and sessions (see the SQLite migration 20261123000001 for the reasoning).
CREATE TABLE users (
    user_id       TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);
CREATE TABLE sessions (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_by_user ON sessions (user_id);

-- Read-only links to one trace (see the SQLite migration 20261123000002).
CREATE TABLE trace_shares (
    token      TEXT PRIMARY KEY,
    trace_id   TEXT NOT NULL REFERENCES agent_traces (trace_id) ON DELETE CASCADE,
    owner_id   TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX trace_shares_by_trace ON trace_shares (trace_id, created_at);

-- Several instances on one database. Each holds a lease: a row it refreshes every 2 s. A run is
-- executed by the instance that started it (agent_traces.instance_id); when an instance's lease
-- is 6 s old, a surviving instance ends its running runs as interrupted.
CREATE TABLE instances (
    instance_id   TEXT PRIMARY KEY,
    started_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
ALTER TABLE agent_traces ADD COLUMN instance_id TEXT;
CREATE INDEX agent_traces_running_by_instance ON agent_traces (instance_id) WHERE status = 'running';
