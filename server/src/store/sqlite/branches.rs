//! Switching a conversation to another version of one of its messages: one write.

use rusqlite::{params, Connection, OptionalExtension};

use super::runs::{conversation_busy, target_of};
use super::SqliteStore;
use crate::error::{Error, Result};
use crate::store::branches::busy_switch;

impl SqliteStore {
    /// Makes `message_id` (a message of `owner_id`'s conversation `id`) active, and below it the
    /// branch chosen last. `NotFound` for anyone else's conversation or an unknown message; 409
    /// while a run is going.
    pub async fn switch_branch(
        &self,
        owner_id: String,
        id: String,
        message_id: String,
        now: String,
    ) -> Result<()> {
        self.write(move |tx| switch_in(tx, &owner_id, &id, &message_id, &now))
            .await
    }
}

fn switch_in(tx: &Connection, owner_id: &str, id: &str, message_id: &str, now: &str) -> Result<()> {
    tx.prepare_cached("SELECT 1 FROM conversations WHERE id = ? AND owner_id = ?")?
        .query_row(params![id, owner_id], |_| Ok(()))
        .optional()?
        .ok_or(Error::NotFound("conversation"))?;
    let target = target_of(tx, id, message_id)?.ok_or(Error::NotFound("message"))?;
    if conversation_busy(tx, id)? {
        return Err(busy_switch());
    }
    if target.active {
        return Ok(());
    }
    tx.prepare_cached(
        "UPDATE messages SET active = 0 WHERE conversation_id = ? AND active AND position >= ?",
    )?
    .execute(params![id, target.position])?;
    let mut activate =
        tx.prepare_cached("UPDATE messages SET active = 1, selected_at = ? WHERE id = ?")?;
    let mut child = tx.prepare_cached(
        "SELECT id FROM messages WHERE conversation_id = ? AND parent_id = ?
         ORDER BY selected_at DESC, created_at DESC, rowid DESC LIMIT 1",
    )?;
    let mut current = message_id.to_owned();
    loop {
        activate.execute(params![now, current])?;
        match child
            .query_row(params![id, current], |row| row.get::<_, String>(0))
            .optional()?
        {
            Some(next) => current = next,
            None => return Ok(()),
        }
    }
}
