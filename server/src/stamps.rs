//! What records are stamped with: a new id, the time now. A leaf module (it uses no other), so
//! that any module may stamp without depending on the run engine.

/// "2026-01-22T10:30:00.123Z" for now.
pub fn now_rfc3339() -> String {
    app::protocol::format_rfc3339_millis(now_unix_ms())
}

pub fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as i64)
        .unwrap_or(0)
}

/// A short random id with a readable prefix: `call_3f2a...`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}
