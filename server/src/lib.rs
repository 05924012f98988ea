//! Glassbox's server. Where an event goes: an agent (`agents`) emits it through its run
//! (`runs::Run::emit`, sanitized by `sanitize`), the engine checkpoints it into the store
//! (`store`), and `http::sse` streams it to every subscriber.

#![warn(clippy::too_many_lines)]

pub mod ag_ui;
pub mod agents;
pub mod auth;
pub mod bus;
pub mod config;
pub mod error;
pub mod exports;
pub mod formats;
pub mod http;
pub mod otel;
pub mod providers;
pub mod reads;
pub mod records;
pub mod redact;
pub mod runs;
pub mod sanitize;
pub mod sink;
pub mod site;
pub mod stamps;
pub mod store;
pub mod tools;

pub use site::BUNDLE_FILE;

use std::{path::PathBuf, sync::Arc};

use leptos::config::{Env, LeptosOptions};

use crate::{
    agents::Agents,
    config::Config,
    http::AppState,
    runs::Engine,
    store::Store,
    tools::{ToolRegistry, Workspace},
};

/// A built server, not yet listening.
pub struct Server {
    pub router: axum::Router,
    pub engine: Arc<Engine>,
    pub store: Store,
}

/// Finds the built site, or says how to build it.
pub fn find_site_root(config: &Config) -> Result<PathBuf, String> {
    let candidates = config.site_root_candidates();
    if let Some(root) = candidates
        .iter()
        .find(|root| site::bundle_in(root).is_some())
    {
        return Ok(root.clone());
    }
    let looked: Vec<String> = candidates
        .iter()
        .map(|root| root.join(BUNDLE_FILE).display().to_string())
        .collect();
    Err(format!(
        "the site assets are missing (looked for {}). Build them first with `scripts/run.sh`, \
         or `cargo leptos build --release`, from the repository root; or point --site-root / \
         GLASSBOX_SITE_ROOT at a built site.",
        looked.join(", ")
    ))
}

/// Opens the store (running migrations, closing runs an earlier process left going) and wires the
/// engine and the routes.
pub async fn build(config: &Config, site_root: PathBuf) -> Result<Server, String> {
    let (store, recovered) = open_store(config).await?;
    tokio::spawn(store::search::backfill(store.clone()));
    let engine = start_engine(config, store.clone())?;
    if let Some(endpoint) = config.otlp_traces_endpoint() {
        let otlp = otel::Otlp::start(
            otel::OtlpConfig {
                endpoint,
                content: config.otlp_content,
            },
            store.clone(),
        )?;
        // A run a crash interrupted is exported once, by the start that closed it.
        for run in recovered {
            otlp.finished(otel::FinishedRun {
                owner_id: run.owner_id,
                trace_id: run.trace_id,
            });
        }
        engine.export_to(otlp);
    }
    let bundle = site::bundle_in(&site_root).unwrap_or_default();
    let router = http::router(AppState {
        leptos_options: leptos_options(config, &site_root, bundle.hashed),
        engine: engine.clone(),
        store: store.clone(),
        immutable_assets: Arc::new(bundle.immutable),
        hosts: Arc::new(http::guard::HostPolicy::from_config(config)),
        auth: Arc::new(auth::Auth::new(config, store.clone())?),
        stylesheet: bundle.stylesheet.clone().into(),
        body_deadline: std::time::Duration::from_secs(config.body_read_timeout_secs),
    });
    Ok(Server {
        router,
        engine,
        store,
    })
}

/// The store of `config` (its data directory made when it is SQLite's default), migrated, with the
/// runs an earlier process left going marked interrupted (and answered).
async fn open_store(config: &Config) -> Result<(Store, Vec<store::LeftoverRun>), String> {
    if config.database_url.is_none() {
        std::fs::create_dir_all(&config.data_dir).map_err(|error| {
            format!(
                "cannot create the data directory {}: {error}",
                config.data_dir.display()
            )
        })?;
    }
    let url = config.database_url();
    let store = Store::connect_as(&url, &config.instance_id())
        .await
        .map_err(|error| format!("cannot open the database {url}: {error}"))?;
    let (interrupted, recovered) = store
        .recover_leftover_runs(&stamps::now_rfc3339())
        .await
        .map_err(|error| format!("cannot recover runs left running: {error}"))?;
    if interrupted > 0 {
        tracing::warn!(
            interrupted,
            "marked runs left running by an earlier process as interrupted"
        );
    }
    Ok((store, recovered))
}

/// The engine with its agents, providers and tools (MCP servers start here), joined to the other
/// instances on the same database.
fn start_engine(config: &Config, store: Store) -> Result<Arc<Engine>, String> {
    let workspace =
        Workspace::open_with_deny(&config.workspace, &config.deny_files).map_err(|error| {
            format!(
                "cannot open the workspace {}: {error}",
                config.workspace.display()
            )
        })?;
    let providers = match &config.providers_file {
        Some(path) => providers::Providers::load(path)?,
        None => providers::Providers::default(),
    };
    // Servers configured with `"models": "discover"` are asked in the background: Glassbox
    // listens at once, and their models join the list when they answer.
    let discovering = providers.clone();
    tokio::spawn(async move { discovering.discover().await });
    let mcp = tools::mcp::McpHub::start(providers.mcp_servers.clone());
    let tools = ToolRegistry::new(
        workspace,
        config.tool_timeout(),
        config.enable_test_tools,
        Arc::new(mcp),
        providers.approval.clone(),
    );
    let engine = Engine::new(
        store,
        Agents::new(config.scenarios_dir.clone(), providers),
        tools,
        config.default_model.clone(),
        config.run_timeout(),
        config.run_limits(),
    );
    engine.join_instances();
    Ok(engine)
}

/// Leptos's options for the built site at `site_root` (`LEPTOS_ENV` chooses development mode).
fn leptos_options(config: &Config, site_root: &std::path::Path, hashed: bool) -> LeptosOptions {
    let env = match std::env::var("LEPTOS_ENV").as_deref() {
        Ok("DEV") | Ok("dev") | Ok("development") => Env::DEV,
        _ => Env::PROD,
    };
    LeptosOptions::builder()
        .output_name("glassbox")
        .site_root(site_root.to_string_lossy().into_owned())
        .site_pkg_dir("pkg")
        .site_addr(config.addr)
        .env(env)
        .hash_files(hashed)
        .build()
}

/// Serves until SIGINT or SIGTERM, then stops runs (`cancelled_by: shutdown`) and drains.
pub async fn run(config: Config) -> Result<(), String> {
    if let Some(command) = &config.command {
        return admin(&config, command).await;
    }
    config.check_auth()?;
    let site_root = find_site_root(&config)?;
    let server = build(&config, site_root.clone()).await?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", config.addr))?;
    let limits = http::serve::ConnectionLimits::from_config(&config, raise_open_files_limit());
    tracing::info!(
        url = %format!("http://{}", config.addr),
        database = %config.database_url(),
        site_root = %site_root.display(),
        workspace = %config.workspace.display(),
        max_connections = limits.max_connections,
        "Glassbox is listening"
    );
    let engine = server.engine.clone();
    let drain = config.shutdown_drain();
    http::serve::serve(listener, server.router, limits, async move {
        shutdown_signal().await;
        tracing::info!("shutting down: stopping runs");
        engine.shutdown(drain).await;
    })
    .await;
    // The runs the shutdown stopped are stored: they leave before the store closes.
    if let Some(otlp) = server.engine.otlp() {
        otlp.flush(drain).await;
    }
    server.store.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Raises the soft open-files limit to the hard one (each connection is a file) and returns it.
fn raise_open_files_limit() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX).unwrap_or_else(|error| {
        tracing::warn!(%error, "cannot read the open-files limit; assuming 1024");
        1024
    })
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {}
        _ = terminate => {}
    }
}

/// An administration command (`glassbox users add NAME`), run instead of the server.
async fn admin(config: &Config, command: &config::Command) -> Result<(), String> {
    let config::Command::Users(config::UsersCommand::Add { name }) = command;
    std::fs::create_dir_all(&config.data_dir).map_err(|error| error.to_string())?;
    let store = Store::connect(&config.database_url())
        .await
        .map_err(|error| format!("cannot open the database: {error}"))?;
    eprint!("Password for {name} (one line on standard input): ");
    let mut password = String::new();
    std::io::stdin()
        .read_line(&mut password)
        .map_err(|error| format!("cannot read the password: {error}"))?;
    let password = password.trim_end_matches(['\r', '\n']);
    let added = auth::add_user(&store, name, password).await;
    store.close().await;
    added.map_err(|error| error.public_message())?;
    eprintln!();
    println!("added user {name}; serve with --auth password");
    Ok(())
}
