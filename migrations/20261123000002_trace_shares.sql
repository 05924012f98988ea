-- Read-only links to one trace (`/t/{trace_id}?share={token}`). The token is kept as it is, so
-- its owner can copy the link again from the trace page: it only reads what this database already
-- holds, unlike a session token, which acts as its user and is kept only as a hash. Revoking a
-- link deletes its row; deleting the trace (or its conversation) deletes its links.
CREATE TABLE trace_shares (
    token      TEXT PRIMARY KEY NOT NULL,
    trace_id   TEXT NOT NULL REFERENCES agent_traces (trace_id) ON DELETE CASCADE,
    owner_id   TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX trace_shares_by_trace ON trace_shares (trace_id, created_at);
