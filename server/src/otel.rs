//! Sends every finished run to an OpenTelemetry collector over OTLP/HTTP (protobuf), as the spans
//! `exports::run_spans` makes of it (see docs/observability.md).
//!
//! A run never waits for the collector: its end maps the run it has in memory (its folded
//! message, its logged events and model turns) to spans and puts them on a bounded queue (a full
//! queue drops the run and counts it). A run recovered after a crash is queued by its trace id
//! and read back from the store. One task batches the spans and hands them to the OTLP exporter,
//! which retries with backoff within its timeout; a batch that still fails, or a collector that
//! does not answer in time, is dropped and counted with its reason for `/healthz`.

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{
    trace::{SpanData, SpanExporter as _},
    Resource,
};
use serde::Serialize;
use tokio::sync::mpsc;

use app::{models::Trace, protocol::Message};

use crate::{
    exports::{otel_spans, run_spans, SpanContent, SpanSource, Timings},
    store::{ModelTurn, Store},
};

/// Finished runs waiting to be exported; one more is dropped.
const QUEUE_RUNS: usize = 4096;
/// The most runs taken from the queue at once.
const MAX_BATCH_RUNS: usize = 256;
/// A request is sent once it holds this many spans (the SDK's default batch is 512).
const MAX_REQUEST_SPANS: usize = 512;
/// How long the first run of a batch waits for others to join it.
const BATCH_WINDOW: Duration = Duration::from_millis(500);
/// An export's default time, retries included (`OTEL_EXPORTER_OTLP_TIMEOUT` changes it).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the export needs to know.
#[derive(Clone, Debug)]
pub struct OtlpConfig {
    /// The traces URL (`…/v1/traces`).
    pub endpoint: String,
    /// Whether spans carry content (tool arguments and results, messages).
    pub content: bool,
}

/// A stored run to export (recovered after a crash): whose it is and its trace.
#[derive(Clone, Debug)]
pub struct FinishedRun {
    pub owner_id: String,
    pub trace_id: String,
}

/// A run that has just ended, as its task has it in memory.
pub struct EndedRun<'a> {
    /// The trace's row as stored (its `events` are not read).
    pub trace: &'a Trace,
    pub message: &'a Message,
    /// Every event as logged, in seq order.
    pub events: &'a [Arc<str>],
    pub turns: &'a [ModelTurn],
    /// The user's question, for content.
    pub prompt: Option<&'a str>,
}

/// A run on the queue: its spans, or a stored trace to read back.
enum Queued {
    Spans(Vec<SpanData>),
    Stored(FinishedRun),
}

/// The export's counts, as `/healthz` shows them: runs whose spans the collector took, runs
/// dropped (queue full, collector down or too slow), and the last reason one was dropped.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OtlpStats {
    pub sent: u64,
    pub dropped: u64,
    pub last_error: Option<String>,
}

/// The export's handle: cheap to clone, never blocks.
#[derive(Clone)]
pub struct Otlp {
    queue: mpsc::Sender<Queued>,
    counts: Arc<Counts>,
    content: bool,
}

#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    dropped: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// Runs queued or being exported, for [`Otlp::flush`].
    pending: AtomicU64,
}

impl Counts {
    /// Counts dropped runs; logs a warning when the reason changes (a collector that is down
    /// would otherwise log every run).
    fn dropped(&self, runs: u64, why: String) {
        self.dropped.fetch_add(runs, Ordering::Relaxed);
        let mut last = self
            .last_error
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if last.as_deref() != Some(why.as_str()) {
            tracing::warn!(runs, reason = %why, "OTLP export dropped runs");
        }
        *last = Some(why);
    }
}

impl Otlp {
    /// Builds the exporter and starts the task that feeds it (on the current runtime).
    pub fn start(config: OtlpConfig, store: Store) -> Result<Otlp, String> {
        let timeout = export_timeout();
        // The exporter's reqwest 0.13 client uses the process-wide TLS provider: ring, as the
        // MCP client does (`tools::mcp`).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(config.endpoint.clone())
            .with_timeout(timeout)
            .with_retry_policy(opentelemetry_otlp::RetryPolicy::recommended())
            .build()
            .map_err(|error| {
                format!(
                    "cannot set up the OTLP export to {}: {error}",
                    origin(&config.endpoint)
                )
            })?;
        exporter.set_resource(&resource());
        let (queue, receiver) = mpsc::channel(QUEUE_RUNS);
        let counts = Arc::new(Counts::default());
        let worker = Worker {
            exporter,
            store,
            content: config.content,
            timeout,
            counts: counts.clone(),
        };
        tokio::spawn(worker.run(receiver));
        tracing::info!(collector = %origin(&config.endpoint), content = config.content, "exporting finished runs over OTLP");
        Ok(Otlp {
            queue,
            counts,
            content: config.content,
        })
    }

    /// Whether spans carry content (the caller then passes the question in [`EndedRun`]).
    pub fn content(&self) -> bool {
        self.content
    }

    /// Maps a run that has just ended (and is stored) to spans and queues them; a full queue
    /// drops them.
    pub fn ended(&self, run: EndedRun<'_>) {
        let timings = Timings::of_logged(run.events, run.turns);
        let source = SpanSource {
            trace: run.trace,
            message: Some(run.message),
            turns: run.turns,
            timings: &timings,
        };
        let content = match self.content {
            true => SpanContent::With { prompt: run.prompt },
            false => SpanContent::None,
        };
        self.queue(Queued::Spans(run_spans(&source, content)));
    }

    /// Counts a run as pending export before its end is published, so a shutdown that waits for
    /// the runs to end and then flushes cannot find the queue empty in between (the run's spans
    /// are made after the publish, off the terminal event's path). Released when dropped.
    pub fn reserve(&self) -> Reserved<'_> {
        self.counts.pending.fetch_add(1, Ordering::Relaxed);
        Reserved { otlp: self }
    }

    /// Queues a stored run (recovered after a crash) to be read back and exported.
    pub fn finished(&self, run: FinishedRun) {
        self.queue(Queued::Stored(run));
    }

    fn queue(&self, run: Queued) {
        self.counts.pending.fetch_add(1, Ordering::Relaxed);
        if let Err(error) = self.queue.try_send(run) {
            self.counts.pending.fetch_sub(1, Ordering::Relaxed);
            let why = match error {
                mpsc::error::TrySendError::Full(_) => "the export queue is full",
                mpsc::error::TrySendError::Closed(_) => "the export has stopped",
            };
            self.counts.dropped(1, why.to_owned());
        }
    }

    /// Waits until every queued run has been exported (or dropped), at most `deadline`: at
    /// shutdown, after the runs the shutdown stopped are stored.
    pub async fn flush(&self, deadline: Duration) {
        let until = tokio::time::Instant::now() + deadline;
        while self.counts.pending.load(Ordering::Relaxed) > 0 {
            if tokio::time::Instant::now() >= until {
                tracing::warn!("shutting down with runs not yet exported over OTLP");
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn stats(&self) -> OtlpStats {
        OtlpStats {
            sent: self.counts.sent.load(Ordering::Relaxed),
            dropped: self.counts.dropped.load(Ordering::Relaxed),
            last_error: self
                .counts
                .last_error
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone(),
        }
    }
}

/// A run counted as pending by [`Otlp::reserve`] until its spans are queued (or it is dropped).
pub struct Reserved<'a> {
    otlp: &'a Otlp,
}

impl Reserved<'_> {
    /// Queues the run's spans; the reservation ends after, so the count never passes through 0.
    pub fn ended(self, run: EndedRun<'_>) {
        self.otlp.ended(run);
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.otlp.counts.pending.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The task behind the queue.
struct Worker {
    exporter: opentelemetry_otlp::SpanExporter,
    store: Store,
    content: bool,
    timeout: Duration,
    counts: Arc<Counts>,
}

impl Worker {
    async fn run(self, mut queue: mpsc::Receiver<Queued>) {
        while let Some(first) = queue.recv().await {
            let mut batch = vec![first];
            let until = tokio::time::Instant::now() + BATCH_WINDOW;
            while batch.len() < MAX_BATCH_RUNS {
                match tokio::time::timeout_at(until, queue.recv()).await {
                    Ok(Some(run)) => batch.push(run),
                    Ok(None) | Err(_) => break,
                }
            }
            let runs = batch.len() as u64;
            self.export(batch).await;
            self.counts.pending.fetch_sub(runs, Ordering::Relaxed);
        }
    }

    /// Sends the batch's spans (reading stored runs back, one at a time) in requests of about
    /// [`MAX_REQUEST_SPANS`] (a run's spans never split).
    async fn export(&self, batch: Vec<Queued>) {
        let mut spans = Vec::new();
        let mut runs = 0u64;
        for run in batch {
            let run_spans = match run {
                Queued::Spans(spans) => Ok(spans),
                Queued::Stored(run) => self.spans_of(&run).await,
            };
            match run_spans {
                Ok(mut more) => {
                    spans.append(&mut more);
                    runs += 1;
                }
                Err(why) => self.counts.dropped(1, why),
            }
            if spans.len() >= MAX_REQUEST_SPANS {
                self.send(std::mem::take(&mut spans), std::mem::take(&mut runs))
                    .await;
            }
        }
        if runs > 0 {
            self.send(spans, runs).await;
        }
    }

    /// Sends the spans of `runs` runs in one request, and counts them sent or dropped.
    async fn send(&self, spans: Vec<SpanData>, runs: u64) {
        // The exporter's client gives up at the timeout; this bounds a hung call all the same.
        let outcome = tokio::time::timeout(
            self.timeout + Duration::from_secs(1),
            self.exporter.export(spans),
        )
        .await;
        match outcome {
            Ok(Ok(())) => {
                self.counts.sent.fetch_add(runs, Ordering::Relaxed);
            }
            Ok(Err(error)) => self
                .counts
                .dropped(runs, format!("the collector refused or failed: {error}")),
            Err(_) => self.counts.dropped(
                runs,
                format!(
                    "the collector did not answer within {} ms",
                    self.timeout.as_millis()
                ),
            ),
        }
    }

    /// The spans of one stored trace.
    async fn spans_of(&self, run: &FinishedRun) -> Result<Vec<SpanData>, String> {
        let read =
            |error: crate::error::Error| format!("cannot read trace {}: {error}", run.trace_id);
        let trace = self
            .store
            .get_trace(&run.owner_id, &run.trace_id)
            .await
            .map_err(read)?
            .ok_or_else(|| format!("trace {} is not stored", run.trace_id))?;
        // The demo and scenario agents record no model turns: no query for them.
        let model = trace.model.as_str();
        let turns = if model == crate::agents::DEMO_MODEL || model.starts_with("scenario:") {
            Vec::new()
        } else {
            self.store.model_turns(&run.trace_id).await.map_err(read)?
        };
        if !self.content {
            return Ok(otel_spans(&trace, &turns, SpanContent::None));
        }
        // The user's message is stored with the conversation, not the trace.
        let conversation = self
            .store
            .get_conversation(&run.owner_id, &trace.conversation_id)
            .await
            .map_err(read)?;
        let prompt = conversation.and_then(|conversation| {
            let message = conversation
                .messages
                .into_iter()
                .find(|message| message.id == trace.user_message_id)?;
            Some(message.text())
        });
        let content = SpanContent::With {
            prompt: prompt.as_deref(),
        };
        Ok(otel_spans(&trace, &turns, content))
    }
}

/// The scheme, host and port of a URL, for logs: its path, query or user part may hold a key.
fn origin(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(url) => url.origin().ascii_serialization(),
        Err(_) => "an invalid URL".to_owned(),
    }
}

/// The export's time, retries included: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else 10 s.
fn export_timeout() -> Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.trim().parse::<u64>().ok())
    .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
}

/// `service.name` `glassbox` (unless `OTEL_SERVICE_NAME` names it), its version, and what
/// `OTEL_RESOURCE_ATTRIBUTES` adds.
fn resource() -> Resource {
    let builder = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    match std::env::var("OTEL_SERVICE_NAME") {
        Ok(name) if !name.is_empty() => builder.build(),
        _ => builder.with_service_name("glassbox").build(),
    }
}
