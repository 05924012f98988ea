//! Rebuilds the server when a migration is added or changed: `sqlx::migrate!` embeds the
//! migrations at compile time, and cargo does not watch those folders by itself (this is the
//! build script `sqlx migrate build-script` writes).
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
