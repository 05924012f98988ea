//! Agents: what decides a run's reasoning, tool calls and answer. The model name picks one:
//! `demo` is the built-in rule-based demo agent, `scenario:<name>` plays a scenario file. Agents talk to the engine only through
//! [`RunContext`], which streams their output as events and runs their tool calls.

mod ag_ui;
mod demo;
mod model_loop;
mod model_state;
mod scenario;

pub use demo::DEMO_MODEL;

use app::protocol::ErrorCode;
use futures::future::BoxFuture;
use std::{
    path::PathBuf,
    sync::{
        atomic::{AtomicU32, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use app::protocol::{EventKind, Message, Usage};

use crate::{
    error::Error,
    sanitize::MAX_DELTA_CHARS,
    sink::RunSink,
    stamps::new_id,
    tools::{self, ToolCallRequest, ToolOutcome, ToolRegistry},
};

/// How an agent's own work ended. Cancellation is not here: the engine drops the agent's future.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentOutcome {
    Completed,
    Failed { code: ErrorCode, message: String },
}

pub trait Agent: Send + Sync {
    fn run<'a>(&'a self, context: &'a RunContext) -> BoxFuture<'a, AgentOutcome>;
}

/// Picks the agent for a model name.
pub struct Agents {
    scenarios_dir: Option<PathBuf>,
    providers: crate::providers::Providers,
}

impl Agents {
    pub fn new(scenarios_dir: Option<PathBuf>, providers: crate::providers::Providers) -> Self {
        Agents {
            scenarios_dir,
            providers,
        }
    }

    pub fn providers(&self) -> &crate::providers::Providers {
        &self.providers
    }

    /// Every model a conversation can choose: the demo agent, the providers' models, scenarios.
    pub fn model_ids(&self) -> Vec<String> {
        let mut ids = vec![DEMO_MODEL.to_owned()];
        ids.extend(self.providers.model_ids());
        if let Some(dir) = &self.scenarios_dir {
            let mut scenarios: Vec<String> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|entry| {
                    entry
                        .file_name()
                        .to_str()?
                        .strip_suffix(".json")
                        .map(|name| format!("scenario:{name}"))
                })
                .collect();
            scenarios.sort();
            ids.extend(scenarios);
        }
        ids
    }

    /// The agent for `model`, or a 422 that says what models exist.
    pub fn resolve(&self, model: &str) -> Result<Arc<dyn Agent>, Error> {
        if let Some(name) = model.strip_prefix("scenario:") {
            let Some(dir) = &self.scenarios_dir else {
                return Err(Error::InvalidField(
                    "scenario models need the server started with --scenarios-dir".into(),
                ));
            };
            return Ok(Arc::new(scenario::ScenarioAgent::load(dir, name)?));
        }
        if model == DEMO_MODEL {
            return Ok(Arc::new(demo::DemoAgent));
        }
        if let Some(agent) = self.providers.agent(model) {
            return Ok(Arc::new(ag_ui::AgUiAgent {
                model_id: model.to_owned(),
                config: agent.config.clone(),
                client: agent.client.clone(),
            }));
        }
        if let Some(choice) = self.providers.find(model) {
            return Ok(Arc::new(model_loop::ModelAgent {
                provider: choice.adapter,
                model_id: model.to_owned(),
                model: choice.model,
                system_prompt: choice.system_prompt,
                options: choice.options,
                max_steps: self.providers.max_steps,
            }));
        }
        Err(Error::InvalidField(format!("unknown model '{model}'")))
    }
}

/// Pacing of streamed text: how many characters per delta, and the pause between deltas.
#[derive(Clone, Copy, Debug)]
pub struct Pacing {
    pub delta_chars: usize,
    pub interval: Duration,
}

/// An agent's handle on its run.
pub struct RunContext {
    pub run: Arc<dyn RunSink>,
    pub tools: Arc<ToolRegistry>,
    /// Earlier messages of the conversation, oldest first.
    pub history: Vec<Message>,
    pub user_message: Message,
    sequence: AtomicU32,
    /// The text segment later text continues, until a reasoning or tool segment comes between.
    open_text_segment: Mutex<Option<String>>,
    /// Each model turn's request and response, stored with the trace.
    model_turns: Mutex<Vec<crate::store::ModelTurn>>,
}

impl RunContext {
    pub fn new(
        run: Arc<dyn RunSink>,
        tools: Arc<ToolRegistry>,
        history: Vec<Message>,
        user_message: Message,
    ) -> Self {
        RunContext {
            run,
            tools,
            history,
            user_message,
            sequence: AtomicU32::new(0),
            open_text_segment: Mutex::new(None),
            model_turns: Mutex::new(Vec::new()),
        }
    }

    /// The place the next segment of the message will take.
    pub fn peek_sequence_number(&self) -> u32 {
        self.sequence.load(Ordering::Relaxed)
    }

    /// Orders every segment of the message as it happened.
    pub fn next_sequence_number(&self) -> u32 {
        self.sequence.fetch_add(1, Ordering::Relaxed)
    }

    fn close_text_segment(&self) {
        *self
            .open_text_segment
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
    }

    /// Runs one turn's tool calls concurrently through the engine.
    ///
    /// Stopped runs end their tools at once; the agent then waits here to be dropped (the run's
    /// watcher aborts it), never going on to its next step (more text, another model request) in
    /// the moment before the abort lands.
    pub async fn run_tools(&self, calls: Vec<ToolCallRequest>) -> Vec<ToolOutcome> {
        self.close_text_segment();
        let outcomes = tools::execute(&self.tools, &self.run, calls, || {
            self.next_sequence_number()
        })
        .await;
        if self.run.cancellation().is_cancelled() {
            std::future::pending::<()>().await;
        }
        outcomes
    }

    /// Streams reasoning parts (one segment, `summary_index` 0, 1, ...) in paced deltas.
    pub async fn stream_reasoning(&self, parts: &[String], pacing: Pacing) {
        self.close_text_segment();
        let segment_id = new_id("rs");
        let sequence_number = self.next_sequence_number();
        for (index, part) in parts.iter().enumerate() {
            let summary_index = index as u32;
            self.run.emit(EventKind::ReasoningPartStarted {
                segment_id: segment_id.clone(),
                summary_index,
                sequence_number,
            });
            for delta in chunks(part, pacing.delta_chars.min(MAX_DELTA_CHARS)) {
                pause(pacing.interval).await;
                self.run.emit(EventKind::ReasoningPartDelta {
                    segment_id: segment_id.clone(),
                    summary_index,
                    text_delta: delta.to_owned(),
                });
            }
            self.run.emit(EventKind::ReasoningPartCompleted {
                segment_id: segment_id.clone(),
                summary_index,
                final_text: Some(part.clone()),
            });
        }
    }

    /// Streams answer text in paced deltas, continuing the open text segment.
    pub async fn stream_text(&self, text: &str, pacing: Pacing) {
        for delta in chunks(text, pacing.delta_chars) {
            pause(pacing.interval).await;
            self.emit_text(delta);
        }
    }

    /// Emits one text delta as it is (a provider's delta, say).
    pub fn emit_text(&self, delta: &str) {
        let (segment_id, sequence_number) = {
            let mut open = self
                .open_text_segment
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match open.as_ref() {
                Some(id) => (id.clone(), None),
                None => {
                    let id = new_id("txt");
                    *open = Some(id.clone());
                    (id, Some(self.next_sequence_number()))
                }
            }
        };
        let mut first = sequence_number;
        for piece in chunks(delta, MAX_DELTA_CHARS) {
            self.run.emit(EventKind::TextDelta {
                segment_id: segment_id.clone(),
                sequence_number: first.take(),
                delta: piece.to_owned(),
            });
        }
    }

    /// Starts a reasoning part that arrives in deltas (a provider's thinking stream).
    pub fn begin_reasoning(&self) -> ReasoningWriter<'_> {
        self.close_text_segment();
        ReasoningWriter {
            context: self,
            segment_id: new_id("rs"),
            sequence_number: self.next_sequence_number(),
            current: None,
        }
    }

    /// Records a model turn (already redacted) for the inspector.
    pub fn record_model_turn(&self, turn: crate::store::ModelTurn) {
        self.model_turns
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(turn);
    }

    /// The recorded model turns, taken when the run ends.
    pub fn take_model_turns(&self) -> Vec<crate::store::ModelTurn> {
        std::mem::take(
            &mut *self
                .model_turns
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    pub fn emit_usage(&self, usage: Usage) {
        self.run.emit(EventKind::Usage(usage));
    }

    /// The model's request is sent again after `delay` (shown as "retrying in N s").
    pub fn emit_retrying(&self, attempt: u32, delay: Duration, reason: app::protocol::ErrorCode) {
        self.run.emit(EventKind::Retrying {
            attempt,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            reason,
        });
    }
}

async fn pause(interval: Duration) {
    if interval.is_zero() {
        tokio::task::yield_now().await;
    } else {
        tokio::time::sleep(interval).await;
    }
}

/// Splits `text` into pieces of at most `size` characters (never inside a character).
pub fn chunks(text: &str, size: usize) -> Vec<&str> {
    let size = size.max(1);
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest
            .char_indices()
            .nth(size)
            .map_or(rest.len(), |(index, _)| index);
        pieces.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    pieces
}

/// A reasoning segment streamed delta by delta, in parts numbered by `summary_index`. A part
/// completes when the next one starts; `finish` (or dropping the writer) completes the last.
pub struct ReasoningWriter<'a> {
    context: &'a RunContext,
    segment_id: String,
    sequence_number: u32,
    /// The part being written: (summary_index, its text so far).
    current: Option<(u32, String)>,
}

impl ReasoningWriter<'_> {
    pub fn delta(&mut self, summary_index: u32, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if self
            .current
            .as_ref()
            .is_some_and(|(index, _)| *index != summary_index)
        {
            self.complete();
        }
        if self.current.is_none() {
            self.current = Some((summary_index, String::new()));
            self.context.run.emit(EventKind::ReasoningPartStarted {
                segment_id: self.segment_id.clone(),
                summary_index,
                sequence_number: self.sequence_number,
            });
        }
        if let Some((_, text)) = self.current.as_mut() {
            text.push_str(delta);
        }
        for piece in chunks(delta, MAX_DELTA_CHARS) {
            self.context.run.emit(EventKind::ReasoningPartDelta {
                segment_id: self.segment_id.clone(),
                summary_index,
                text_delta: piece.to_owned(),
            });
        }
    }

    pub fn finish(mut self) {
        self.complete();
    }

    fn complete(&mut self) {
        if let Some((summary_index, final_text)) = self.current.take() {
            self.context.run.emit(EventKind::ReasoningPartCompleted {
                segment_id: self.segment_id.clone(),
                summary_index,
                final_text: Some(final_text),
            });
        }
    }
}

impl Drop for ReasoningWriter<'_> {
    fn drop(&mut self) {
        self.complete();
    }
}

#[cfg(test)]
mod tests {
    use super::chunks;

    #[test]
    fn chunks_respect_characters() {
        assert_eq!(chunks("héllo wörld", 4), ["héll", "o wö", "rld"]);
        assert!(chunks("", 4).is_empty());
    }
}
