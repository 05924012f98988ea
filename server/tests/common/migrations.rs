//! A database as an earlier version left it, for the tests of what a migration does to the rows
//! already there: the migrations before a given version, run on a fresh database.

use std::{borrow::Cow, path::Path};

use sqlx::{migrate::Migrator, ConnectOptions};

/// `migrator` with only the migrations older than `version`.
pub fn migrations_before(mut migrator: Migrator, version: i64) -> Migrator {
    migrator.migrations = Cow::Owned(
        migrator
            .migrations
            .iter()
            .filter(|migration| migration.version < version)
            .cloned()
            .collect(),
    );
    migrator
}

/// A new SQLite file `old.db` in `dir` with the migrations before `version`: the URL the store
/// opens it by, and a connection to write the old rows with.
pub async fn old_sqlite(dir: &Path, version: i64) -> (String, sqlx::SqliteConnection) {
    let path = dir.join("old.db");
    let url = format!("sqlite://{}", path.display());
    let mut old = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true)
        .connect()
        .await
        .expect("open");
    migrations_before(sqlx::migrate!("../migrations"), version)
        .run(&mut old)
        .await
        .expect("old migrations");
    (url, old)
}

/// The test PostgreSQL database of `dir` with the migrations before `version`: its URL, and a
/// connection to write the old rows with.
pub async fn old_postgres(dir: &Path, version: i64) -> (String, sqlx::PgConnection) {
    let url = super::postgres::database_url(dir);
    let options: sqlx::postgres::PgConnectOptions = url.parse().expect("URL");
    let mut old = options.connect().await.expect("connect");
    migrations_before(sqlx::migrate!("../migrations/postgres"), version)
        .run(&mut old)
        .await
        .expect("old migrations");
    (url, old)
}
