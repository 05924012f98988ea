//! An agent of one's own that speaks AG-UI 1.0 (pydantic-ai, LangGraph, CrewAI, ADK …), run by
//! URL as the model `agent/<name>`: Glassbox POSTs a `RunAgentInput` (the conversation so far) and
//! maps the agent's event stream onto its own events (`mapper`), so the run is stored, streamed,
//! stopped and replayed like any other. An interrupt (a call that needs a person) becomes a
//! Glassbox approval; the answer starts the agent's resume request, whose events continue the same
//! run. Stop drops the request's future, which closes the connection: AG-UI's only cancel.

mod input;
mod mapper;
mod stream;

use std::sync::Arc;

use app::protocol::{ErrorCode, EventKind, ToolResultStatus};
use futures::future::{join_all, BoxFuture};
use serde_json::{json, Value};

use super::{Agent, AgentOutcome, RunContext};
use crate::ag_ui::wire::{Interrupt, ResumeEntry, RunAgentInput};
use crate::providers::AgentConfig;
use crate::records::ProviderKind;
use crate::stamps::new_id;
use crate::store::ModelTurn;
use crate::tools::approval;
use mapper::{Mapper, StreamEnd};
pub use stream::Failure;

pub struct AgUiAgent {
    pub model_id: String,
    pub config: Arc<AgentConfig>,
    pub client: reqwest::Client,
}

impl Agent for AgUiAgent {
    fn run<'a>(&'a self, context: &'a RunContext) -> BoxFuture<'a, AgentOutcome> {
        Box::pin(async move {
            let messages = input::conversation(&context.history, &context.user_message);
            let mut mapper = Mapper::default();
            let mut resume = input::cancelled_interrupts(&context.history);
            for request in 0u32.. {
                let input = self.input(context, request, &messages, &mapper, resume.take());
                let end = self.exchange(context, &input, &mut mapper).await;
                match end {
                    Err(failure) => return failure.into_outcome(),
                    Ok(StreamEnd::Failed { message, code }) => {
                        return AgentOutcome::Failed {
                            code: code.map_or(ErrorCode::from("agent_error"), ErrorCode::from),
                            message,
                        }
                    }
                    Ok(StreamEnd::Finished { interrupts, usage }) => {
                        if let Some(usage) = usage {
                            context.emit_usage(usage);
                        }
                        if interrupts.is_empty() {
                            let mut out = Vec::new();
                            mapper.end_unanswered_calls(now_ms(), &mut out);
                            out.into_iter().for_each(|kind| {
                                context.run.emit(kind);
                            });
                            return AgentOutcome::Completed;
                        }
                        resume = Some(answer_interrupts(context, &mut mapper, interrupts).await);
                    }
                }
            }
            AgentOutcome::Completed
        })
    }
}

impl AgUiAgent {
    /// The `request`-th request of this run: the conversation, what the agent said so far in
    /// this run, and the answers to its interrupts.
    fn input(
        &self,
        context: &RunContext,
        request: u32,
        messages: &[crate::ag_ui::wire::Message],
        mapper: &Mapper,
        resume: Option<Vec<ResumeEntry>>,
    ) -> RunAgentInput {
        let run_id = context.run.run_id();
        let (run_id, parent_run_id) = match request {
            0 => (run_id.to_owned(), None),
            1 => (format!("{run_id}.1"), Some(run_id.to_owned())),
            n => (format!("{run_id}.{n}"), Some(format!("{run_id}.{}", n - 1))),
        };
        let mut all = messages.to_vec();
        all.extend(mapper.transcript.iter().cloned());
        RunAgentInput {
            thread_id: context.run.conversation_id().to_owned(),
            run_id,
            parent_run_id,
            state: json!({}),
            messages: all,
            tools: Vec::new(),
            context: Vec::new(),
            forwarded_props: json!({}),
            resume,
        }
    }

    /// One request: streamed into the run, and recorded (what went out, and what the trace keeps
    /// of what came back) like a model turn.
    async fn exchange(
        &self,
        context: &RunContext,
        input: &RunAgentInput,
        mapper: &mut Mapper,
    ) -> Result<StreamEnd, Failure> {
        let mut record = TurnRecord {
            context,
            turn: Some(ModelTurn {
                model: self.model_id.clone(),
                format: ProviderKind::AgUi,
                after_seq: context.run.event_count(),
                request: super::model_loop::request_record(
                    serde_json::to_value(input).unwrap_or(Value::Null),
                ),
                response: json!({"events": [], "stopped": "The run was stopped before the agent ended this request."}),
                started_at: crate::stamps::now_rfc3339(),
                completed_at: String::new(),
            }),
        };
        mapper.begin_request();
        let end = stream::request(&self.client, &self.config, input, mapper, context).await;
        if let Some(turn) = record.turn.as_mut() {
            turn.response = mapper.take_record(end.as_ref().err());
        }
        end
    }
}

/// A request's record, kept in the trace when the request ends, or when Stop drops it midway
/// (then with what went out, and that it was stopped).
struct TurnRecord<'a> {
    context: &'a RunContext,
    turn: Option<ModelTurn>,
}

impl Drop for TurnRecord<'_> {
    fn drop(&mut self) {
        if let Some(mut turn) = self.turn.take() {
            turn.completed_at = crate::stamps::now_rfc3339();
            self.context.record_model_turn(turn);
        }
    }
}

/// Asks a person about every interrupt at once, and waits for all the answers. A call the person
/// denies ends here, with its one `tool_result` (status `denied`).
async fn answer_interrupts(
    context: &RunContext,
    mapper: &mut Mapper,
    interrupts: Vec<Interrupt>,
) -> Vec<ResumeEntry> {
    let timeout = context.tools.approval_timeout();
    // Kept in the message until answered: a run stopped meanwhile leaves them for the next run
    // to cancel.
    let pending = |ids: Vec<&str>| EventKind::AgentState {
        key: input::PENDING_KEY.into(),
        state: json!({"ag_ui": {"pending": ids}}),
    };
    context
        .run
        .emit(pending(interrupts.iter().map(|i| i.id.as_str()).collect()));
    let mut asked: Vec<(Interrupt, String, String, Value)> = Vec::new();
    for interrupt in interrupts {
        let (call_id, name, args) = interrupt_call(context, mapper, &interrupt);
        asked.push((interrupt, call_id, name, args));
    }
    let answers = join_all(asked.iter().map(|(_, call_id, name, args)| {
        approval::ask(context.run.as_ref(), call_id, name, args, timeout)
    }))
    .await;
    let resume = asked
        .into_iter()
        .zip(answers)
        .map(|((interrupt, call_id, _, _), answer)| {
            let payload = settle(context, mapper, &interrupt, call_id, answer);
            ResumeEntry {
                interrupt_id: interrupt.id,
                status: "resolved".into(),
                payload: Some(payload),
            }
        })
        .collect();
    context.run.emit(pending(Vec::new()));
    resume
}

/// Applies a person's answer to the run, and says it in the resume payload's shape. An approved
/// call of the agent's runs on (its duration counts from now); an approved question of the
/// agent's own ends its block; a denied call ends here, its one `tool_result` `denied`.
fn settle(
    context: &RunContext,
    mapper: &mut Mapper,
    interrupt: &Interrupt,
    call_id: String,
    answer: Result<(), app::protocol::ToolError>,
) -> Value {
    let agents_call = interrupt
        .tool_call_id
        .as_deref()
        .and_then(|id| mapper.call_mut(id));
    let (status, output, error, payload) = match (answer, agents_call) {
        (Ok(()), Some(call)) => {
            call.restart_clock(now_ms());
            return json!({"approved": true});
        }
        (Ok(()), None) => (
            ToolResultStatus::Success,
            Some("Approved".to_owned()),
            None,
            json!({"approved": true}),
        ),
        (Err(error), call) => {
            if let Some(call) = call {
                call.ended = true;
                call.denied = true;
            }
            let payload = json!({"approved": false, "reason": error.message.clone()});
            (ToolResultStatus::Denied, None, Some(error), payload)
        }
    };
    context.run.emit(EventKind::ToolResult {
        call_id,
        status,
        duration_ms: 0,
        output,
        truncated: false,
        full_length: None,
        error,
    });
    payload
}

/// The Glassbox call an interrupt asks about: the agent's call it names, or (another reason, or
/// a call it never streamed) a block of its own that shows the agent's question.
fn interrupt_call(
    context: &RunContext,
    mapper: &mut Mapper,
    interrupt: &Interrupt,
) -> (String, String, Value) {
    if let Some(call) = interrupt
        .tool_call_id
        .as_deref()
        .and_then(|id| mapper.call(id))
    {
        return (call.glassbox_id.clone(), call.name.clone(), call.args());
    }
    let call_id = new_id("call");
    let name = interrupt.reason.clone();
    let args = json!({"question": interrupt.message.clone().unwrap_or_default()});
    context.run.emit(EventKind::ToolCallStarted {
        call_id: call_id.clone(),
        name: name.clone(),
        display: interrupt.message.clone(),
        args: args.clone(),
        sequence_number: mapper.next_sequence(),
    });
    (call_id, name, args)
}

fn now_ms() -> u64 {
    u64::try_from(crate::stamps::now_unix_ms()).unwrap_or(0)
}

impl Failure {
    fn into_outcome(self) -> AgentOutcome {
        AgentOutcome::Failed {
            code: self.code,
            message: self.message,
        }
    }
}
