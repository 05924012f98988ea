//! The load generator: starts the real `glassbox` binary on loopback and measures it from outside,
//! through real HTTP and SSE. Each subcommand prints its figures; docs/benchmarks.md records them
//! with the command that produced them.

#![warn(clippy::too_many_lines)]

mod agent;
mod burst;
mod cancel;
mod client;
mod compare;
mod crash;
mod index;
mod instances;
mod otlp_sink;
mod resume;
mod server;
mod storage;
mod streams;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Glassbox's load generator")]
struct Cli {
    /// The server binary (build it with `cargo leptos build --release`).
    #[arg(long, default_value = "target/release/glassbox", global = true)]
    binary: PathBuf,
    /// The built site; a stand-in is used when it is missing (the API needs no assets).
    #[arg(long, default_value = "target/site", global = true)]
    site_root: PathBuf,
    /// Starts a stand-in OTLP collector here and has the server export every finished run to it
    /// (`--otlp-endpoint`), to measure what the export costs.
    #[arg(long, global = true)]
    otlp: bool,
    /// Runs every server on this PostgreSQL database instead of its own SQLite file
    /// (`--database-url`; scripts/bench.sh starts a throwaway one).
    #[arg(long, global = true)]
    postgres: Option<String>,
    /// Another server taking Glassbox's command line (e.g. `bench/reference/node-sse.mjs`):
    /// `streams` and `burst` then measure it after Glassbox, each count in turn, and print both
    /// with the ratios of Glassbox's figures to its (issue 37).
    #[arg(long, global = true)]
    reference: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// N concurrent runs streaming clock-stamped deltas: latency, throughput, memory, CPU.
    Streams {
        /// Stream counts to measure, one server per count.
        #[arg(long, value_delimiter = ',', default_value = "100,1000,5000")]
        streams: Vec<usize>,
        /// Events per second per run.
        #[arg(long, default_value_t = 20)]
        rate: u32,
        /// Length of the measured window.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// The stream the clients read: Glassbox's events, the AI SDK's UI message stream or AG-UI.
        #[arg(long, value_enum, default_value = "glassbox")]
        format: client::StreamFormat,
        /// The runs are an AG-UI agent's (`ag-ui-agent`, a process of its own) instead of a
        /// scenario's: the latency is then from the agent's write to the client's read.
        #[arg(long)]
        agent: bool,
        /// A reasoning part after every N deltas of a scenario run: finished steps that the
        /// checkpoints index for search while the deltas are measured (issue 35).
        #[arg(long)]
        reasoning_every: Option<u32>,
    },
    /// An AG-UI agent that streams clock-stamped text (for `streams --agent`); runs until killed.
    #[command(hide = true)]
    AgUiAgent {
        #[arg(long)]
        port: u16,
        #[arg(long, default_value_t = 20)]
        rate: u32,
    },
    /// New runs started in a burst: time to the first event, then per-event latency.
    Burst {
        /// Runs to start.
        #[arg(long, default_value_t = 1000)]
        runs: usize,
        /// Seconds over which they start, evenly spread.
        #[arg(long, default_value_t = 1.0)]
        over: f64,
        /// Text deltas per run.
        #[arg(long, default_value_t = 250)]
        deltas: u32,
        /// Deltas per second per run.
        #[arg(long, default_value_t = 50)]
        rate: u32,
    },
    /// Time from a cancel request to `message_cancelled` at the client.
    Cancel {
        #[arg(long, default_value_t = 100)]
        trials: usize,
        /// Other runs streaming meanwhile.
        #[arg(long, default_value_t = 0)]
        background: usize,
    },
    /// Reattaching with Last-Event-ID to a run with many events, live and stored.
    Resume {
        #[arg(long, default_value_t = 10_000)]
        events: u32,
        #[arg(long, default_value_t = 20)]
        repeat: usize,
    },
    /// SIGKILL during a run: what the store lost of what the client had read.
    Crash {
        #[arg(long, default_value_t = 20)]
        trials: usize,
    },
    /// Two instances on one PostgreSQL database: same- and cross-instance latency, Stop across
    /// instances, PostgreSQL's cost per event.
    Instances {
        /// An empty PostgreSQL database (scripts/bench.sh starts one).
        #[arg(long)]
        database_url: String,
        #[arg(long, value_delimiter = ',', default_value = "100,1000")]
        streams: Vec<usize>,
        #[arg(long, default_value_t = 20)]
        rate: u32,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// SQLite checkpoint and finalize throughput, bytes per event (no server process).
    Storage {
        #[arg(long, default_value_t = 1000)]
        events: usize,
        #[arg(long, default_value_t = 20)]
        traces: usize,
    },
    /// The store's writer indexing finished steps for search as checkpoints do (issue 35):
    /// time per 1,000 pieces, on a file database, without the streams.
    Index {
        /// Running traces the pieces are spread over.
        #[arg(long, default_value_t = 1000)]
        runs: usize,
        /// Pieces per write (a checkpoint's, about 250 at 1,000 x 50/s with a reasoning part
        /// every 50 deltas).
        #[arg(long, default_value_t = 250)]
        pieces: usize,
        /// Writes (80 of 250: 20,000 pieces, 20 s of that load).
        #[arg(long, default_value_t = 80)]
        writes: usize,
        /// Queue a write 1 ms into each indexing write and time it: how long a write waits
        /// behind one in flight (which yields to it). `event` (the default): a one-event
        /// checkpoint write, as a run's start or the API's writes queue; `end`: a run's end, the
        /// trace of a running run closed.
        #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "event")]
        behind: Option<index::Behind>,
        /// Beside the writes, a thread at the normal priority sleeps 1 ms at a time and times
        /// how late it wakes: what a stream's thread waits for the core the background thread
        /// holds (run under `taskset -c 0` so that both share one core).
        #[arg(long)]
        wakeups: bool,
    },
}

pub struct Env {
    pub binary: PathBuf,
    pub site_root: PathBuf,
    /// Options every server started gets (`--otlp-endpoint` with `--otlp`).
    pub server_args: Vec<String>,
    /// Holds the stand-in site when there is no built one.
    _stand_in: Option<tempfile::TempDir>,
}

impl Env {
    fn new(binary: PathBuf, site_root: PathBuf) -> Result<Self, String> {
        if !binary.is_file() {
            return Err(format!(
                "no server binary at {}: build it first (cargo leptos build --release)",
                binary.display()
            ));
        }
        if site_root.join(glassbox::BUNDLE_FILE).is_file() {
            return Ok(Env {
                binary,
                site_root,
                server_args: Vec::new(),
                _stand_in: None,
            });
        }
        let stand_in = tempfile::tempdir().map_err(|error| error.to_string())?;
        let bundle = stand_in.path().join(glassbox::BUNDLE_FILE);
        if let Some(parent) = bundle.parent() {
            std::fs::create_dir_all(parent).map_err(|error| error.to_string())?;
        }
        std::fs::write(&bundle, "// stand-in").map_err(|error| error.to_string())?;
        Ok(Env {
            binary,
            site_root: stand_in.path().to_owned(),
            server_args: Vec::new(),
            _stand_in: Some(stand_in),
        })
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if let Command::AgUiAgent { port, rate } = cli.command {
        return match agent::serve(port, rate) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("loadgen ag-ui-agent: {error}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    // One thread, which also drives the I/O: the server under test keeps the other core, and no
    // wake-up crosses threads (with a worker thread beside block_on, each one did, at ~70 µs).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        // The store's own costs, on a file database: no server to start.
        match cli.command {
            Command::Storage { events, traces } => return storage::run(events, traces).await,
            Command::Index {
                runs,
                pieces,
                writes,
                behind,
                wakeups,
            } => return index::run(runs, pieces, writes, behind, wakeups).await,
            _ => {}
        }
        let mut env = Env::new(cli.binary, cli.site_root)?;
        if let Some(url) = cli.postgres {
            env.server_args.extend(["--database-url".to_owned(), url]);
        }
        let sink = match cli.otlp {
            true => {
                let (sink, endpoint) = otlp_sink::Sink::start().await?;
                env.server_args
                    .extend(["--otlp-endpoint".to_owned(), endpoint]);
                Some(sink)
            }
            false => None,
        };
        let outcome = match cli.reference {
            Some(reference) => {
                let reference = Env::new(reference, env.site_root.clone())?;
                compare_command(&env, &reference, cli.command).await
            }
            None => run_command(&env, cli.command).await,
        };
        if let Some(sink) = sink {
            println!("{}", sink.report());
        }
        outcome
    });
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("loadgen: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `streams` or `burst` against Glassbox and the reference in turn ([`compare`]).
async fn compare_command(env: &Env, reference: &Env, command: Command) -> Result<(), String> {
    match command {
        Command::Streams {
            streams,
            rate,
            seconds,
            agent: false,
            format: client::StreamFormat::Glassbox,
            reasoning_every: None,
        } => compare::streams(env, reference, &streams, (rate, seconds)).await,
        Command::Burst {
            runs,
            over,
            deltas,
            rate,
        } => compare::burst(env, reference, (runs, over), (deltas, rate)).await,
        _ => Err(
            "--reference compares `streams` (scenario runs, Glassbox's stream) and `burst` only"
                .into(),
        ),
    }
}

/// Runs one benchmark against servers started from `env`.
async fn run_command(env: &Env, command: Command) -> Result<(), String> {
    match command {
        Command::Streams {
            streams,
            rate,
            seconds,
            agent,
            format,
            reasoning_every,
        } => {
            for count in streams {
                let source = (agent, reasoning_every);
                streams::run(env, count, (rate, seconds), source, format).await?;
            }
            Ok(())
        }
        Command::Burst {
            runs,
            over,
            deltas,
            rate,
        } => burst::run(env, runs, over, deltas, rate).await.map(drop),
        Command::Cancel { trials, background } => cancel::run(env, trials, background).await,
        Command::Resume { events, repeat } => resume::run(env, events, repeat).await,
        Command::Crash { trials } => crash::run(env, trials).await,
        Command::Instances {
            database_url,
            streams,
            rate,
            seconds,
        } => {
            for count in streams {
                instances::run(env, &database_url, count, rate, seconds).await?;
            }
            Ok(())
        }
        Command::Storage { .. } | Command::Index { .. } | Command::AgUiAgent { .. } => Ok(()),
    }
}
