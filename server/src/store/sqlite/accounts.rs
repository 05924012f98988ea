//! Accounts (`--auth password`): users with an argon2id hash, and sessions found by the SHA-256
//! of their token. Reads go through the read pool; writes are jobs of the one writer.

use rusqlite::{params, Connection};

use super::SqliteStore;
use crate::error::{Error, Result};
use crate::store::StoredUser;

impl SqliteStore {
    /// Adds a user; a name already taken is a conflict.
    pub async fn add_user(&self, user: StoredUser, now: String) -> Result<()> {
        self.write(move |connection| add_user_in(connection, &user, &now))
            .await
    }

    pub async fn user_by_name(&self, name: &str) -> Result<Option<StoredUser>> {
        let user = sqlx::query_as("SELECT user_id, name, password_hash FROM users WHERE name = ?")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        Ok(user)
    }

    /// Opens a session; sessions expired by `now` go in the same write.
    pub async fn create_session(
        &self,
        token_hash: String,
        user_id: String,
        now: String,
        expires_at: String,
    ) -> Result<()> {
        self.write(move |connection| {
            connection
                .prepare_cached("DELETE FROM sessions WHERE expires_at <= ?")?
                .execute(params![now])?;
            connection
                .prepare_cached(
                    "INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                )?
                .execute(params![token_hash, user_id, now, expires_at])?;
            Ok(())
        })
        .await
    }

    /// The user (id, name) of a session that has not expired by `now`.
    pub async fn session_user(
        &self,
        token_hash: &str,
        now: &str,
    ) -> Result<Option<(String, String)>> {
        let user = sqlx::query_as(
            "SELECT users.user_id, users.name FROM sessions JOIN users USING (user_id)
             WHERE sessions.token_hash = ? AND sessions.expires_at > ?",
        )
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        Ok(user)
    }

    pub async fn delete_session(&self, token_hash: String) -> Result<()> {
        self.write(move |connection| {
            connection
                .prepare_cached("DELETE FROM sessions WHERE token_hash = ?")?
                .execute(params![token_hash])?;
            Ok(())
        })
        .await
    }
}

fn add_user_in(tx: &Connection, user: &StoredUser, now: &str) -> Result<()> {
    let taken = tx
        .prepare_cached("SELECT 1 FROM users WHERE name = ?")?
        .exists(params![user.name])?;
    if taken {
        return Err(Error::Conflict(format!(
            "a user named '{}' exists",
            user.name
        )));
    }
    tx.prepare_cached(
        "INSERT INTO users (user_id, name, password_hash, created_at) VALUES (?, ?, ?, ?)",
    )?
    .execute(params![user.user_id, user.name, user.password_hash, now])?;
    Ok(())
}
