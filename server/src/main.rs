//! The `glassbox` binary: parse options, set up logs, serve.

#![warn(clippy::too_many_lines)]

use std::{process::ExitCode, time::Duration};

use clap::Parser;
use glassbox::config::Config;
use tracing_subscriber::EnvFilter;

/// Blocking work a cancelled tool left behind is abandoned, not awaited, at exit.
const ABANDONED_WORK_GRACE: Duration = Duration::from_secs(2);

fn main() -> ExitCode {
    let config = Config::parse();
    // The MCP library's own log lines print a server's whole URL (hosted MCP URLs often carry a
    // token in their path) and its error types: off unless RUST_LOG asks. Glassbox logs every MCP
    // failure itself, with the URL's path hidden (`tools::mcp`).
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,rmcp=off")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("glassbox: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(glassbox::run(config));
    runtime.shutdown_timeout(ABANDONED_WORK_GRACE);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!("{message}");
            eprintln!("glassbox: {message}");
            ExitCode::FAILURE
        }
    }
}
