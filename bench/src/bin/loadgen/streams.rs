//! N concurrent runs that each emit clock-stamped text deltas at a set rate, read by N clients.
//! Measures the latency the server adds (emit -> client read), throughput, memory and CPU.

use std::{
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use glassbox_bench::summary;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::{
    agent::AgentProcess,
    client::{clock_stamp, event_type, unix_micros, RunStream, StreamFormat},
    server::{process_usage, ServerProcess, Usage, Written},
    Env,
};

pub const SCENARIO: &str = "clock";

/// A run that streams clock-stamped deltas for an hour: the load generator stops it by killing
/// the server once the measurement is done.
pub fn scenario(rate_per_second: u32) -> serde_json::Value {
    json!({
        "delta_interval_ms": 1000 / rate_per_second.max(1),
        "steps": [{ "clock_text": rate_per_second.max(1) * 3600 }]
    })
}

/// The same, with a reasoning part after every `every` deltas for the first five minutes: each is
/// a finished step, which the next checkpoint indexes for search (issue 35), so the deltas around
/// it are measured while the index is written.
pub fn scenario_with_reasoning(rate_per_second: u32, every: u32) -> serde_json::Value {
    let rate = rate_per_second.max(1);
    let every = every.max(1);
    let mut steps = Vec::new();
    for part in 0..(rate * 300 / every) {
        steps.push(json!({ "clock_text": every }));
        steps.push(json!({ "reasoning": [format!(
            "Part {part}: the checkpoint indexes this finished step for search while the \
             other runs stream; the words are ordinary ones a reader would look for later."
        )] }));
    }
    steps.push(json!({ "clock_text": rate * 3600 }));
    json!({ "delta_interval_ms": 1000 / rate, "steps": steps })
}

/// Shared between the coordinator and the stream tasks.
pub struct Window {
    opened: AtomicUsize,
    start: AtomicU64,
    end: AtomicU64,
    /// The bytes of the events (their JSON) read in the window.
    event_bytes: AtomicU64,
}

impl Window {
    pub fn new() -> Arc<Self> {
        Arc::new(Window {
            opened: AtomicUsize::new(0),
            start: AtomicU64::new(u64::MAX),
            end: AtomicU64::new(u64::MAX),
            event_bytes: AtomicU64::new(0),
        })
    }

    pub fn opened(&self) -> usize {
        self.opened.load(Ordering::SeqCst)
    }

    pub fn close(&self) {
        self.end.store(unix_micros(), Ordering::SeqCst);
    }

    /// Counts a chunk read at `received` if it falls in the window, with the latency of each
    /// clock-stamped delta; `false` once the window has closed.
    pub fn record(
        &self,
        received: u64,
        events: &[String],
        latencies_us: &mut Vec<u64>,
        count: &mut u64,
    ) -> bool {
        let start = self.start();
        if received >= self.end() {
            return false;
        }
        if received < start {
            return true;
        }
        let bytes: usize = events.iter().map(String::len).sum();
        self.event_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        for event in events {
            *count += 1;
            // Glassbox's `text_delta`, the AI SDK's `text-delta` chunk or AG-UI's content.
            if !matches!(
                event_type(event),
                Some("text_delta" | "text-delta" | "TEXT_MESSAGE_CONTENT")
            ) {
                continue;
            }
            if let Some(stamp) = clock_stamp(event).filter(|stamp| *stamp >= start) {
                latencies_us.push(received.saturating_sub(stamp));
            }
        }
        true
    }

    pub fn opened_one(&self) {
        self.opened.fetch_add(1, Ordering::SeqCst);
    }

    /// When the measured window opened (Unix µs; far future until then).
    pub fn start(&self) -> u64 {
        self.start.load(Ordering::Relaxed)
    }

    pub fn end(&self) -> u64 {
        self.end.load(Ordering::Relaxed)
    }

    pub fn open_now(&self) {
        self.start.store(unix_micros(), Ordering::SeqCst);
    }
}

#[derive(Default)]
pub struct StreamResult {
    pub latencies_us: Vec<u64>,
    pub events_in_window: u64,
    pub error: Option<String>,
}

/// Opens one run and reads it until the window closes.
pub async fn follow(
    client: reqwest::Client,
    base: String,
    model: String,
    window: Arc<Window>,
    opening: Arc<Semaphore>,
    format: StreamFormat,
) -> StreamResult {
    let mut result = StreamResult::default();
    let mut permit = opening.acquire_owned().await.ok();
    let mut stream = match RunStream::start_as(&client, &base, &model, format).await {
        Ok(stream) => stream,
        Err(error) => {
            result.error = Some(error);
            return result;
        }
    };
    let mut counted_open = false;
    while let Some((received, events)) = stream.next_chunk().await {
        if !counted_open {
            counted_open = true;
            window.opened_one();
            drop(permit.take());
        }
        if !window.record(
            received,
            &events,
            &mut result.latencies_us,
            &mut result.events_in_window,
        ) {
            return result;
        }
    }
    result.error = Some("the stream ended early".into());
    result
}

pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .http1_only()
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|error| error.to_string())
}

/// The runs' source: a `clock_text` scenario, or an AG-UI agent that streams the same stamps.
fn source(
    env: &Env,
    rate: u32,
    agent: bool,
    reasoning_every: Option<u32>,
) -> Result<(ServerProcess, String, Option<AgentProcess>), String> {
    if !agent {
        let scenario = match reasoning_every {
            Some(every) => scenario_with_reasoning(rate, every),
            None => scenario(rate),
        };
        let server = ServerProcess::start(env, &[(SCENARIO, scenario)])?;
        return Ok((server, format!("scenario:{SCENARIO}"), None));
    }
    let process = AgentProcess::start(rate)?;
    let dir = tempfile::tempdir().map_err(|error| error.to_string())?;
    let file = process.providers_file(dir.path())?;
    let file = file.to_str().ok_or("a temporary path that is not UTF-8")?;
    let server = ServerProcess::start_with(env, &[], &["--providers-file", file])?;
    Ok((server, "agent/load".into(), Some(process)))
}

/// What one streams measurement gives a comparison (`compare`): the server's side of it.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub events_per_second: f64,
    pub p99_ms: f64,
    pub cpu_us_per_event: f64,
}

pub async fn run(
    env: &Env,
    streams: usize,
    (rate, seconds): (u32, u64),
    (agent, reasoning_every): (bool, Option<u32>),
    format: StreamFormat,
) -> Result<Row, String> {
    let (server, model, agent_process) = source(env, rate, agent, reasoning_every)?;
    let client = client()?;
    let baseline = server.usage();
    let window = Window::new();
    let ramp_started = std::time::Instant::now();
    let tasks = open_all(&client, &server.base, &model, &window, streams, format).await?;
    let ramp = ramp_started.elapsed();
    // Let the ramp's backlog drain before measuring.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let before = (server.usage(), process_usage("/proc/self"));
    let written_before = server.written();
    let wall = std::time::Instant::now();
    window.start.store(unix_micros(), Ordering::SeqCst);
    let mut peak_rss = before.0.rss_bytes;
    while wall.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        peak_rss = peak_rss.max(server.usage().rss_bytes);
    }
    window.close();
    let elapsed = wall.elapsed().as_secs_f64();
    let after = (server.usage(), process_usage("/proc/self"));
    let written = server.written().since(written_before);
    let (mut latencies, events, errors) = gather(tasks).await;
    drop(server);
    drop(agent_process);
    println!(
        "streams ({format:?}, {}{}): {streams} at {rate} events/s each, measured for {elapsed:.1} s (ramp {:.1} s)",
        if agent { "an AG-UI agent's runs" } else { "scenario runs" },
        reasoning_every.map_or(String::new(), |every| format!(", a reasoning part every {every} deltas")),
        ramp.as_secs_f64()
    );
    let measured = Measured {
        streams,
        rate,
        elapsed,
        events,
        baseline,
        before,
        after,
        peak_rss,
        written,
        event_bytes: window.event_bytes.load(Ordering::Relaxed),
    };
    measured.report(&mut latencies);
    if let Some(first) = errors.first() {
        return Err(format!("{} streams failed (first: {first})", errors.len()));
    }
    if latencies.is_empty() {
        return Err("no clock-stamped delta arrived in the window".into());
    }
    measured.table_row(&mut latencies)
}

/// Opens `streams` runs, 200 connections at a time (thousands at once overflow the listen
/// backlog); returns once all are open (at most 300 s).
async fn open_all(
    client: &reqwest::Client,
    base: &str,
    model: &str,
    window: &Arc<Window>,
    streams: usize,
    format: StreamFormat,
) -> Result<Vec<tokio::task::JoinHandle<StreamResult>>, String> {
    let opening = Arc::new(Semaphore::new(200));
    let tasks: Vec<_> = (0..streams)
        .map(|_| {
            tokio::spawn(follow(
                client.clone(),
                base.to_owned(),
                model.to_owned(),
                window.clone(),
                opening.clone(),
                format,
            ))
        })
        .collect();
    let ramp_started = std::time::Instant::now();
    while window.opened() < streams {
        if ramp_started.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "only {} of {streams} streams opened within 300 s",
                window.opened()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(tasks)
}

/// Every stream's latencies, the events read in the window, and the errors.
async fn gather(tasks: Vec<tokio::task::JoinHandle<StreamResult>>) -> (Vec<u64>, u64, Vec<String>) {
    let mut latencies = Vec::new();
    let mut events = 0u64;
    let mut errors = Vec::new();
    for task in tasks {
        match tokio::time::timeout(Duration::from_secs(30), task).await {
            Ok(Ok(result)) => {
                latencies.extend(result.latencies_us);
                events += result.events_in_window;
                errors.extend(result.error);
            }
            _ => errors.push("a stream did not finish".into()),
        }
    }
    (latencies, events, errors)
}

/// What a streams run measured: (server, load generator) usage before and after the window.
struct Measured {
    streams: usize,
    rate: u32,
    elapsed: f64,
    events: u64,
    baseline: Usage,
    before: (Usage, Usage),
    after: (Usage, Usage),
    peak_rss: u64,
    written: Written,
    event_bytes: u64,
}

impl Measured {
    fn per_stream_kib(&self, rss: u64) -> f64 {
        rss.saturating_sub(self.baseline.rss_bytes) as f64 / 1024.0 / self.streams as f64
    }

    fn cpu(&self) -> (f64, f64) {
        (
            (self.after.0.cpu_seconds - self.before.0.cpu_seconds) / self.elapsed,
            (self.after.1.cpu_seconds - self.before.1.cpu_seconds) / self.elapsed,
        )
    }

    fn report(&self, latencies: &mut [u64]) {
        let (p50, p99, max) = summary(latencies);
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        let (server_cpu, client_cpu) = self.cpu();
        println!(
            "events received in the window: {} ({:.0}/s)",
            self.events,
            self.events as f64 / self.elapsed
        );
        println!(
            "added latency (emit -> client read), {} samples: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            latencies.len(),
            p50 as f64 / 1000.0,
            p99 as f64 / 1000.0,
            max as f64 / 1000.0
        );
        println!("server CPU: {server_cpu:.2} cores; load generator CPU: {client_cpu:.2} cores");
        println!(
            "server CPU per event: {:.1} µs",
            server_cpu * 1e6 / (self.events as f64 / self.elapsed).max(1.0)
        );
        println!(
            "server RSS: idle {:.1} MiB, window start {:.1} MiB, peak {:.1} MiB, end {:.1} MiB",
            mib(self.baseline.rss_bytes),
            mib(self.before.0.rss_bytes),
            mib(self.peak_rss),
            mib(self.after.0.rss_bytes)
        );
        println!(
            "server memory per active stream: {:.1} KiB at the window's start, {:.1} KiB at its end",
            self.per_stream_kib(self.before.0.rss_bytes),
            self.per_stream_kib(self.after.0.rss_bytes)
        );
        self.report_written();
    }

    /// What the server wrote in the window, per second and per byte of the events read.
    fn report_written(&self) {
        let per_second = |bytes: u64| bytes as f64 / self.elapsed / 1e6;
        let per_event_byte = |bytes: u64| bytes as f64 / self.event_bytes.max(1) as f64;
        println!(
            "server writes: WAL (the writer thread) {:.1} MB/s, to disk {:.1} MB/s, all write calls {:.1} MB/s; events read {:.1} MB/s; per event byte: WAL {:.2}, to disk {:.2}",
            per_second(self.written.wal),
            per_second(self.written.write_bytes),
            per_second(self.written.wchar),
            per_second(self.event_bytes),
            per_event_byte(self.written.wal),
            per_event_byte(self.written.write_bytes),
        );
    }

    fn table_row(&self, latencies: &mut [u64]) -> Result<Row, String> {
        let (p50, p99, max) = summary(latencies);
        let (server_cpu, client_cpu) = self.cpu();
        println!(
            "| {} | {} | {:.0} | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} | {:.1} / {:.1} |",
            self.streams,
            self.rate,
            self.events as f64 / self.elapsed,
            p50 as f64 / 1000.0,
            p99 as f64 / 1000.0,
            max as f64 / 1000.0,
            server_cpu,
            client_cpu,
            self.per_stream_kib(self.before.0.rss_bytes),
            self.per_stream_kib(self.after.0.rss_bytes)
        );
        let events_per_second = self.events as f64 / self.elapsed;
        Ok(Row {
            events_per_second,
            p99_ms: p99 as f64 / 1000.0,
            cpu_us_per_event: server_cpu * 1e6 / events_per_second.max(1.0),
        })
    }
}
