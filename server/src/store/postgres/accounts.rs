//! Accounts and sessions in PostgreSQL (see the SQLite store for what each does).

use super::{pg_text, PgStore};
use crate::error::{Error, Result};
use crate::store::{is_unique_violation, StoredUser};

impl PgStore {
    pub async fn add_user(&self, user: StoredUser, now: String) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    let name = pg_text(&user.name).into_owned();
                    let inserted = sqlx::query(
                        "INSERT INTO users (user_id, name, password_hash, created_at)
                         VALUES ($1, $2, $3, $4::timestamptz)",
                    )
                    .bind(&user.user_id)
                    .bind(&name)
                    .bind(&user.password_hash)
                    .bind(&now)
                    .execute(&mut *connection)
                    .await;
                    match inserted.map_err(Error::from) {
                        Ok(_) => Ok(()),
                        Err(error) if is_unique_violation(&error) => {
                            Err(Error::Conflict(format!("a user named '{name}' exists")))
                        }
                        Err(error) => Err(error),
                    }
                })
            })
            .await
    }

    pub async fn user_by_name(&self, name: &str) -> Result<Option<StoredUser>> {
        let user = sqlx::query_as("SELECT user_id, name, password_hash FROM users WHERE name = $1")
            .bind(pg_text(name).as_ref())
            .fetch_optional(&self.pool)
            .await?;
        Ok(user)
    }

    pub async fn create_session(
        &self,
        token_hash: String,
        user_id: String,
        now: String,
        expires_at: String,
    ) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    sqlx::query("DELETE FROM sessions WHERE expires_at <= $1::timestamptz")
                        .bind(&now)
                        .execute(&mut *connection)
                        .await?;
                    sqlx::query(
                        "INSERT INTO sessions (token_hash, user_id, created_at, expires_at)
                         VALUES ($1, $2, $3::timestamptz, $4::timestamptz)",
                    )
                    .bind(&token_hash)
                    .bind(&user_id)
                    .bind(&now)
                    .bind(&expires_at)
                    .execute(&mut *connection)
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    pub async fn session_user(
        &self,
        token_hash: &str,
        now: &str,
    ) -> Result<Option<(String, String)>> {
        let user = sqlx::query_as(
            "SELECT users.user_id, users.name FROM sessions JOIN users USING (user_id)
             WHERE sessions.token_hash = $1 AND sessions.expires_at > $2::timestamptz",
        )
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        Ok(user)
    }

    pub async fn delete_session(&self, token_hash: String) -> Result<()> {
        self.writer
            .write(move |connection| {
                Box::pin(async move {
                    sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
                        .bind(&token_hash)
                        .execute(&mut *connection)
                        .await?;
                    Ok(())
                })
            })
            .await
    }
}
