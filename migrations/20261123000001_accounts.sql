-- Local accounts (`--auth password`) and their sessions. A user's conversations and traces are
-- those whose owner_id is the user's id; the single local user of `--auth none` is 'local' and
-- has no row; a user named by an authenticating proxy (`--auth proxy`) is 'proxy:<name>'.
CREATE TABLE users (
    user_id       TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    -- argon2id, in the PHC string format
    password_hash TEXT NOT NULL,
    created_at    TEXT NOT NULL
);

-- A session is found by the SHA-256 of its cookie's token: the database never holds a token that
-- would let a reader of the file sign in.
CREATE TABLE sessions (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX sessions_by_user ON sessions (user_id);
