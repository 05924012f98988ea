//! One run: its append-only event log, the reducer that keeps its message, its cancellation.

use app::protocol::{ErrorCode, ToolCallStatus, ToolErrorKind};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use app::protocol::{
    CancelledBy, Event, EventKind, Message, MessageStatus, Reducer, ToolResultStatus,
};
use tokio::sync::{oneshot, watch, Notify};
use tokio_util::sync::CancellationToken;

use super::MemoryBudget;
use crate::{
    redact::Streams,
    sanitize::{sanitize, MAX_EVENT_BYTES},
    sink::{ApprovalAnswer, ApprovalRefused, RunSink},
};

/// A run whose log outgrows this ends with `message_error` (`run_too_large`): the bound on one
/// run's memory. Subscribers hold only a cursor, so they add nothing per event.
pub const MAX_RUN_LOG_BYTES: usize = 32 * 1024 * 1024;

/// What subscribers may read: events up to `last_seq`, and whether that is all there will be.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Published {
    pub last_seq: u64,
    pub finished: bool,
}

/// What names a run and what it belongs to.
#[derive(Clone, Debug)]
pub struct RunIds {
    pub run_id: String,
    pub trace_id: String,
    pub conversation_id: String,
    /// The assistant message the run writes.
    pub message_id: String,
    pub owner_id: String,
    pub model: String,
}

/// How a run ended, decided by the engine.
#[derive(Clone, Debug)]
pub enum RunEnding {
    Completed,
    Cancelled { by: CancelledBy, reason: String },
    Failed { code: ErrorCode, error: String },
}

pub struct Run {
    pub run_id: String,
    pub trace_id: String,
    pub conversation_id: String,
    pub message_id: String,
    pub owner_id: String,
    pub model: String,
    pub started_at: Instant,
    pub started_ts: String,
    log: Mutex<Log>,
    published: watch::Sender<Published>,
    cancel: CancellationToken,
    cancel_request: Mutex<Option<(CancelledBy, String)>>,
    /// Wakes the checkpointer early (after a `tool_result`).
    checkpoint_now: Arc<Notify>,
    /// Every event's bytes are charged here, and released when the run is dropped.
    budget: Arc<MemoryBudget>,
    approvals: Mutex<Approvals>,
}

/// Calls that asked for approval, and how long the run has waited for people.
#[derive(Default)]
struct Approvals {
    /// The waiting call's sender until the first answer, then `None` (later answers are refused).
    calls: HashMap<String, Option<oneshot::Sender<ApprovalAnswer>>>,
    /// Since when at least one call has been waiting, if one is.
    waiting_since: Option<Instant>,
    /// Earlier spans of waiting, added up.
    waited: Duration,
}

/// Why a run's log took no more events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// This run's log reached [`MAX_RUN_LOG_BYTES`].
    RunTooLarge,
    /// All runs in memory together reached the server's memory budget.
    MemoryExhausted,
}

#[derive(Default)]
struct Log {
    /// Event JSON; index `i` holds seq `i + 1`.
    events: Vec<Arc<str>>,
    bytes: usize,
    /// Bytes charged to the memory budget: the log, and the text the events added to the
    /// reducer's message (see [`held_bytes`]).
    charged: usize,
    reducer: Reducer,
    /// The held-back ends of running texts, so a credential split across deltas is still redacted.
    streams: Streams,
    /// Set once the terminal event is stamped; later emits are dropped.
    closed: bool,
    overflowed: Option<Overflow>,
    /// Reasoning parts completed and tool results so far: the checkpointer indexes the finished
    /// steps for search when this moves.
    steps_done: u64,
    /// Where each event is serialized before its JSON is copied into the log at its exact size:
    /// no buffer of its own per event, and none grown on the way (see [`SCRATCH_KEPT`]).
    scratch: Vec<u8>,
    /// The run id and the time each event is stamped with, lent to the event while it is
    /// serialized and reduced and given back after: no string of their own per event.
    stamp: (String, String),
}

/// The serialization buffer is kept up to this size; a larger event's (a terminal event carries
/// the whole message) is given back after it.
const SCRATCH_KEPT: usize = 4 * 1024;

impl Run {
    pub fn new(
        ids: RunIds,
        started_ts: String,
        checkpoint_now: Arc<Notify>,
        budget: Arc<MemoryBudget>,
    ) -> Arc<Self> {
        let RunIds {
            run_id,
            trace_id,
            conversation_id,
            message_id,
            owner_id,
            model,
        } = ids;
        Arc::new(Run {
            run_id,
            trace_id,
            conversation_id,
            message_id,
            owner_id,
            model,
            started_at: Instant::now(),
            started_ts,
            log: Mutex::new(Log::default()),
            published: watch::channel(Published::default()).0,
            cancel: CancellationToken::new(),
            cancel_request: Mutex::new(None),
            checkpoint_now,
            budget,
            approvals: Mutex::new(Approvals::default()),
        })
    }

    fn approvals(&self) -> MutexGuard<'_, Approvals> {
        self.approvals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How long this run has waited for a person to answer (now included, while one is asked).
    /// The run's time limit does not count it.
    pub fn time_waiting_for_people(&self) -> Duration {
        let approvals = self.approvals();
        approvals.waited
            + approvals
                .waiting_since
                .map_or(Duration::ZERO, |since| since.elapsed())
    }

    /// Records that a call waits for approval (`tool_approval_requested`); the receiver gets
    /// the first answer.
    pub fn request_approval(
        &self,
        call_id: &str,
        name: &str,
        args: &serde_json::Value,
    ) -> oneshot::Receiver<ApprovalAnswer> {
        let (sender, receiver) = oneshot::channel();
        {
            let mut approvals = self.approvals();
            approvals.calls.insert(call_id.to_owned(), Some(sender));
            approvals.waiting_since.get_or_insert_with(Instant::now);
        }
        self.emit(EventKind::ToolApprovalRequested {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            args: args.clone(),
        });
        receiver
    }

    /// Whether a call has asked for approval and has no answer yet.
    pub fn awaits_answer(&self, call_id: &str) -> bool {
        matches!(self.approvals().calls.get(call_id), Some(Some(_)))
    }

    /// Takes the first answer to a call's request: records `tool_approval_resolved`, then wakes
    /// the call. Later answers are refused.
    pub fn resolve_approval(
        &self,
        call_id: &str,
        answer: ApprovalAnswer,
    ) -> Result<(), ApprovalRefused> {
        let sender = {
            let mut approvals = self.approvals();
            let sender = match approvals.calls.get_mut(call_id) {
                None => return Err(ApprovalRefused::UnknownCall),
                Some(slot) => slot.take().ok_or(ApprovalRefused::AlreadyAnswered)?,
            };
            if approvals.calls.values().all(Option::is_none) {
                if let Some(since) = approvals.waiting_since.take() {
                    approvals.waited += since.elapsed();
                }
            }
            sender
        };
        self.emit(EventKind::ToolApprovalResolved {
            call_id: call_id.to_owned(),
            decision: answer.decision,
            by: answer.by.clone(),
            reason: answer.reason.clone(),
        });
        let _ = sender.send(answer);
        Ok(())
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        // A panic while holding the lock cannot leave the log half-written (every mutation is a
        // push after validation; the stamp strings lent to an event are set again by the next
        // one), so a poisoned lock is still safe to use.
        self.log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sanitizes, stamps (`seq`, `ts`), logs and publishes one event. Returns its seq, or `None`
    /// when the run has already ended (late output from an abandoned tool, say).
    pub fn emit(&self, kind: EventKind) -> Option<u64> {
        // Checkpointed at once: a result, and a question a person may answer from anywhere and
        // its answer (so that a page on any instance shows it soon).
        let is_tool_result = matches!(
            kind,
            EventKind::ToolResult { .. }
                | EventKind::ToolApprovalRequested { .. }
                | EventKind::ToolApprovalResolved { .. }
        );
        let seq = self.append(&mut self.log(), kind)?;
        // Concurrent emits may publish out of order: the published seq only moves forward.
        self.published
            .send_modify(|published| published.last_seq = published.last_seq.max(seq));
        if is_tool_result {
            self.checkpoint_now.notify_one();
        }
        Some(seq)
    }

    /// Redacts and appends one event, after the held-back text it ends (see [`Streams`]). A delta
    /// held back whole appends nothing and answers the newest seq.
    fn append(&self, log: &mut Log, kind: EventKind) -> Option<u64> {
        if log.closed {
            return None;
        }
        let (ended, kind) = sanitize(&mut log.streams, kind);
        let mut seq = None;
        for held in ended {
            seq = self.append_one(log, held).or(seq);
        }
        match kind {
            Some(kind) => self.append_one(log, kind),
            None => seq.or(Some(log.events.len() as u64)),
        }
    }

    fn append_one(&self, log: &mut Log, kind: EventKind) -> Option<u64> {
        let (mut run_id, mut ts) = std::mem::take(&mut log.stamp);
        // Empty for the run's first event, and after a panic lost the lent strings.
        if run_id != self.run_id {
            run_id.clone_from(&self.run_id);
        }
        app::protocol::write_rfc3339_millis(&mut ts, crate::stamps::now_unix_ms());
        let mut event = Event {
            seq: log.events.len() as u64 + 1,
            run_id,
            ts,
            kind,
        };
        let seq = self.append_event(log, &mut event);
        log.stamp = (event.run_id, event.ts);
        seq
    }

    /// Serializes, charges, reduces and logs `event`: [`Self::append_one`]'s work.
    fn append_event(&self, log: &mut Log, event: &mut Event) -> Option<u64> {
        let seq = event.seq;
        let mut len = serialize(&mut log.scratch, event)?;
        if len > MAX_EVENT_BYTES && !event.kind.is_terminal() {
            shrink_to_cap(&mut event.kind, len);
            len = serialize(&mut log.scratch, event)?;
        }
        if event.kind.is_terminal() {
            // It carries the whole message: cut to what is left under both caps.
            if super::terminal::fit(event, self.room_left(log)) {
                len = serialize(&mut log.scratch, event)?;
            }
            self.budget.charge(len);
            log.charged += len;
        } else if let Err(overflow) = self.charge(log, len, &event.kind) {
            if log.overflowed.is_none() {
                log.overflowed = Some(overflow);
                self.cancel.cancel();
            }
            return None;
        }
        log.reducer.apply(event);
        if matches!(
            event.kind,
            EventKind::ReasoningPartCompleted { .. } | EventKind::ToolResult { .. }
        ) {
            log.steps_done += 1;
        }
        log.bytes += len;
        // serde_json writes UTF-8: borrowed as it is, never replaced.
        let json: Arc<str> = Arc::from(String::from_utf8_lossy(&log.scratch).as_ref());
        if log.scratch.capacity() > SCRATCH_KEPT {
            log.scratch = Vec::new();
        }
        log.events.push(json);
        Some(seq)
    }

    /// The bytes this run's log may still take under its own cap and the memory budget.
    fn room_left(&self, log: &Log) -> usize {
        let budget_left = self.budget.limit().saturating_sub(self.budget.used());
        MAX_RUN_LOG_BYTES.saturating_sub(log.bytes).min(budget_left)
    }

    /// Charges `bytes` more of log to the memory budget, or says which limit they would pass.
    fn charge(&self, log: &mut Log, bytes: usize, kind: &EventKind) -> Result<(), Overflow> {
        let held = held_bytes(kind, bytes);
        if log.bytes + bytes > MAX_RUN_LOG_BYTES {
            Err(Overflow::RunTooLarge)
        } else if !self.budget.try_charge(held) {
            Err(Overflow::MemoryExhausted)
        } else {
            log.charged += held;
            Ok(())
        }
    }

    /// Ends the log: a `cancelled` result for every tool still running, then the terminal event
    /// carrying the message as the reducer built it. The new events are not published yet: the
    /// engine stores the trace first, then calls [`Run::publish_end`]. Returns the final message.
    pub fn close(&self, ending: &RunEnding) -> Message {
        let mut log = self.log();
        if !log.closed {
            for held in log.streams.flush_all() {
                self.append_one(&mut log, held);
            }
            if !matches!(ending, RunEnding::Completed) {
                self.cancel_running_tools(&mut log, ending);
            }
            let mut message = log
                .reducer
                .message()
                .cloned()
                .unwrap_or_else(|| self.empty_message());
            message.duration_ms = Some(self.started_at.elapsed().as_millis() as u64);
            let terminal = self.terminal_event(message, ending);
            self.append(&mut log, terminal);
            log.closed = true;
        }
        log.reducer
            .message()
            .cloned()
            .unwrap_or_else(|| self.empty_message())
    }

    /// A `cancelled` result for every call the reducer still holds as going, in the order they
    /// began.
    fn cancel_running_tools(&self, log: &mut Log, ending: &RunEnding) {
        let now = crate::stamps::now_rfc3339();
        let running: Vec<(String, u64)> = log
            .reducer
            .message()
            .into_iter()
            .flat_map(Message::tool_calls)
            .filter(|call| {
                matches!(
                    call.status,
                    ToolCallStatus::Running | ToolCallStatus::AwaitingApproval
                )
            })
            .map(|call| {
                let ran = app::protocol::elapsed_ms(&call.started_at, &now).unwrap_or(0);
                (call.call_id.clone(), ran)
            })
            .collect();
        let reason = match ending {
            RunEnding::Failed { error, .. } => error.clone(),
            _ => "The run was stopped before this tool finished.".to_owned(),
        };
        for (call_id, duration_ms) in running {
            let error = app::protocol::ToolError {
                kind: ToolErrorKind::Cancelled,
                message: reason.clone(),
            };
            let result = EventKind::ToolResult {
                call_id,
                status: ToolResultStatus::Cancelled,
                duration_ms,
                output: None,
                truncated: false,
                full_length: None,
                error: Some(error),
            };
            self.append(log, result);
        }
    }

    /// The terminal event for `ending`, carrying `message` with its final status.
    fn terminal_event(&self, mut message: Message, ending: &RunEnding) -> EventKind {
        message.retrying = None;
        match ending {
            RunEnding::Completed => {
                message.status = MessageStatus::Complete;
                EventKind::MessageFinal {
                    message,
                    trace_id: self.trace_id.clone(),
                }
            }
            RunEnding::Cancelled { by, reason } => {
                message.status = MessageStatus::Cancelled;
                message.ended_reason = Some(reason.clone());
                EventKind::MessageCancelled {
                    reason: reason.clone(),
                    cancelled_by: *by,
                    message,
                }
            }
            RunEnding::Failed { code, error } => {
                message.status = MessageStatus::Error;
                message.ended_reason = Some(error.clone());
                EventKind::MessageError {
                    code: code.clone(),
                    error: error.clone(),
                    message,
                }
            }
        }
    }

    /// Makes everything in the log visible, including the terminal event, and ends subscriptions.
    pub fn publish_end(&self) {
        let last_seq = self.log().events.len() as u64;
        self.published.send_replace(Published {
            last_seq,
            finished: true,
        });
    }

    pub fn subscribe(&self) -> watch::Receiver<Published> {
        self.published.subscribe()
    }

    pub fn published(&self) -> Published {
        *self.published.borrow()
    }

    /// Published events with `after < seq <= up_to`, at most `limit` of them.
    pub fn events_between(&self, after: u64, up_to: u64, limit: usize) -> Vec<(u64, Arc<str>)> {
        let mut events = Vec::new();
        self.extend_with_events(&mut events, after, up_to, limit);
        events
    }

    /// [`Run::events_between`] added to `out` (a reader's queue: no list of its own per read).
    pub fn extend_with_events(
        &self,
        out: &mut impl Extend<(u64, Arc<str>)>,
        after: u64,
        up_to: u64,
        limit: usize,
    ) {
        let log = self.log();
        let end = (up_to as usize).min(log.events.len());
        let start = (after as usize).min(end);
        out.extend(
            log.events[start..end]
                .iter()
                .take(limit)
                .enumerate()
                .map(|(offset, json)| ((start + offset + 1) as u64, json.clone())),
        );
    }

    /// All events so far (published or not), for the final write.
    pub fn all_events(&self) -> Vec<Arc<str>> {
        self.log().events.clone()
    }

    pub fn event_count(&self) -> u64 {
        self.log().events.len() as u64
    }

    pub fn is_closed(&self) -> bool {
        self.log().closed
    }

    pub fn overflowed(&self) -> Option<Overflow> {
        self.log().overflowed
    }

    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Asks the run to stop. The first request's reason wins.
    pub fn request_cancel(&self, by: CancelledBy, reason: String) {
        {
            let mut request = self
                .cancel_request
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            request.get_or_insert((by, reason));
        }
        self.cancel.cancel();
    }

    pub fn cancel_request(&self) -> Option<(CancelledBy, String)> {
        self.cancel_request
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The assistant message before any content (used only if the log lost `message_started`).
    fn empty_message(&self) -> Message {
        let mut message = Message::assistant(
            self.message_id.clone(),
            self.model.clone(),
            self.started_ts.clone(),
        );
        message.trace_id = Some(self.trace_id.clone());
        message
    }

    /// The message as the events so far build it.
    pub fn message(&self) -> Option<Message> {
        self.log().reducer.message().cloned()
    }

    /// How many steps (reasoning parts, tool calls) have finished so far, and the search pieces
    /// of those not in `indexed`, when that is more than `seen`: what the checkpointer indexes
    /// while the run goes. Built from the message where it stands, under the log's lock: only
    /// the new steps' text is copied, not the whole message.
    pub fn finished_step_docs(
        &self,
        seen: u64,
        indexed: &std::collections::HashSet<String>,
    ) -> Option<(u64, Vec<crate::store::search::SearchDoc>)> {
        let log = self.log();
        if log.steps_done <= seen {
            return None;
        }
        let message = log.reducer.message()?;
        let docs = crate::store::search::finished_step_docs(message, indexed);
        Some((log.steps_done, docs))
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let bytes = self.log().charged;
        self.budget.release(bytes);
    }
}

/// What an event of `json` bytes adds to what a run holds: its JSON in the log, and the text it
/// adds to the reducer's message, which the terminal event carries (reasoning twice: the part
/// and the parts combined). Charging only the log let ten runs under a 200 MiB budget hold
/// 1.3 GB (issue 30).
fn held_bytes(kind: &EventKind, json: usize) -> usize {
    json + match kind {
        EventKind::ReasoningPartDelta { text_delta, .. } => 2 * text_delta.len(),
        EventKind::TextDelta { delta, .. } => delta.len(),
        EventKind::ToolCallUpdate {
            output_delta: Some(delta),
            ..
        } => delta.len(),
        EventKind::ToolResult {
            output: Some(output),
            ..
        } => output.len(),
        _ => 0,
    }
}

/// Serializes `event` into `scratch` (cleared first): its length.
fn serialize(scratch: &mut Vec<u8>, event: &Event) -> Option<usize> {
    scratch.clear();
    serde_json::to_writer(&mut *scratch, event).ok()?;
    Some(scratch.len())
}

/// Brings an over-size event under [`MAX_EVENT_BYTES`] by replacing its bulkiest payload.
fn shrink_to_cap(kind: &mut EventKind, size: usize) {
    let note = |what: &str| serde_json::json!({ "_truncated": format!("{what} were {size} bytes of JSON, over the {MAX_EVENT_BYTES}-byte event limit") });
    match kind {
        EventKind::ToolCallStarted { args, .. } => *args = note("the arguments"),
        EventKind::ToolCallUpdate {
            progress,
            output_delta,
            args,
            ..
        } => {
            *progress = progress.as_ref().map(|_| note("the progress values"));
            *args = args.as_ref().map(|_| note("the arguments"));
            if let Some(delta) = output_delta {
                if let Some(cut) = crate::sanitize::shorten(delta, MAX_EVENT_BYTES / 8) {
                    *delta = cut.to_owned();
                }
            }
        }
        EventKind::ToolResult {
            output: Some(text),
            truncated,
            full_length,
            ..
        } => {
            let total = text.chars().count() as u64;
            if let Some(cut) = crate::sanitize::shorten(text, MAX_EVENT_BYTES / 8) {
                *text = cut.to_owned();
                *truncated = true;
                *full_length = Some(full_length.unwrap_or(0).max(total));
            }
        }
        // The deltas before it carried the whole text.
        EventKind::ReasoningPartCompleted { final_text, .. } => *final_text = None,
        _ => {}
    }
}

/// Agents and tools reach their run through [`RunSink`] only.
impl RunSink for Run {
    fn emit(&self, kind: EventKind) -> Option<u64> {
        Run::emit(self, kind)
    }
    fn run_id(&self) -> &str {
        &self.run_id
    }
    fn conversation_id(&self) -> &str {
        &self.conversation_id
    }
    fn event_count(&self) -> u64 {
        Run::event_count(self)
    }
    fn cancellation(&self) -> &CancellationToken {
        Run::cancellation(self)
    }
    fn request_approval(
        &self,
        call_id: &str,
        name: &str,
        args: &serde_json::Value,
    ) -> oneshot::Receiver<ApprovalAnswer> {
        Run::request_approval(self, call_id, name, args)
    }
    fn resolve_approval(
        &self,
        call_id: &str,
        answer: ApprovalAnswer,
    ) -> Result<(), ApprovalRefused> {
        Run::resolve_approval(self, call_id, answer)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn the_published_seq_never_moves_backwards_under_concurrent_emits() {
        let ids = RunIds {
            run_id: "run_t".into(),
            trace_id: "trace_t".into(),
            conversation_id: "c".into(),
            message_id: "m".into(),
            owner_id: "o".into(),
            model: "demo".into(),
        };
        let run = Run::new(
            ids,
            "2026-01-01T00:00:00.000Z".into(),
            Arc::new(Notify::new()),
            MemoryBudget::new(usize::MAX),
        );
        let done = AtomicBool::new(false);
        let backwards = std::thread::scope(|scope| {
            let watcher = scope.spawn(|| {
                let (mut previous, mut backwards) = (0, 0);
                while !done.load(Ordering::Relaxed) {
                    let now = run.published().last_seq;
                    backwards += usize::from(now < previous);
                    previous = now;
                }
                backwards
            });
            let emitters: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        for _ in 0..20_000 {
                            run.emit(EventKind::TextDelta {
                                segment_id: "txt".into(),
                                sequence_number: None,
                                // Whole words: a word's end is held back until it is complete.
                                delta: "x ".into(),
                            });
                        }
                    })
                })
                .collect();
            for emitter in emitters {
                emitter.join().expect("emitter");
            }
            done.store(true, Ordering::Relaxed);
            watcher.join().expect("watcher")
        });
        assert_eq!(backwards, 0, "the published seq moved backwards");
        assert_eq!(run.published().last_seq, 80_000);
    }
}
