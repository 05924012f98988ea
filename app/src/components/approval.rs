//! A tool call's approval inside its block: Approve / Deny (with an optional reason) while the
//! run waits, then who answered. The request and the answer are events of the run, so a reload,
//! a second tab or a later visit shows the same state; the first answer wins.

use leptos::prelude::*;

use super::live::ChatState;
use crate::protocol::{
    Approval, ApprovalDecision, ResolvedBy, ToolCallSegment as ToolCall, ToolCallStatus,
};

/// The approval part of a tool block: the buttons while the call waits (only where a run is
/// followed: the chat, not the trace page), the answer once given.
#[component]
pub fn ApprovalPanel(call: Signal<ToolCall>) -> impl IntoView {
    let approval = Memo::new(move |_| call.with(|c| c.approval.clone()));
    let waiting = Memo::new(move |_| call.with(|c| c.status == ToolCallStatus::AwaitingApproval));
    let state = use_context::<ChatState>();
    move || {
        let approval = approval.get()?;
        Some(if waiting.get() {
            let call_id = call.with_untracked(|c| c.call_id.clone());
            view! { <ApprovalRequest call_id state /> }.into_any()
        } else {
            view! { <p class="approval-answer">{answer_line(&approval)}</p> }.into_any()
        })
    }
}

/// "Approved by alice", "Denied by bob: not that file", "Denied: no answer within 60 s".
fn answer_line(approval: &Approval) -> String {
    let by = match &approval.by {
        Some(ResolvedBy::User(name)) => Some(name.as_str()),
        Some(ResolvedBy::Timeout) => None,
        None => Some("someone"),
    };
    let reason = approval
        .reason
        .as_deref()
        .map(|reason| format!(": {reason}"))
        .unwrap_or_default();
    match (approval.decision, by) {
        (None, _) => "Waiting for approval".to_owned(),
        (Some(ApprovalDecision::Deny), None) => "Denied: not answered in time".to_owned(),
        // The timeout never approves: this is a person whose name is `timeout`.
        (Some(ApprovalDecision::Approve), None) => "Approved by timeout".to_owned(),
        (Some(ApprovalDecision::Approve), Some(by)) => format!("Approved by {by}"),
        (Some(ApprovalDecision::Deny), Some(by)) => format!("Denied by {by}{reason}"),
    }
}

#[component]
fn ApprovalRequest(call_id: String, state: Option<ChatState>) -> impl IntoView {
    let reason = RwSignal::new(String::new());
    let sending = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let run_id = move || state.and_then(|state| state.live_run.get().map(|run| run.run_id));
    let answer = move |decision: ApprovalDecision| {
        let Some(run_id) = state
            .and_then(|state| state.live_run.get_untracked())
            .map(|r| r.run_id)
        else {
            return;
        };
        let reason = Some(reason.get_untracked()).filter(|r| !r.trim().is_empty());
        sending.set(true);
        problem.set(None);
        #[cfg(feature = "hydrate")]
        {
            let call_id = call_id.clone();
            leptos::task::spawn_local(async move {
                if let Err(error) =
                    crate::client::answer_approval(&run_id, &call_id, decision, reason).await
                {
                    problem.set(Some(format!("The answer was not taken: {error}")));
                }
                sending.set(false);
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (run_id, reason, &call_id, decision);
    };
    let approve = {
        let answer = answer.clone();
        move |_| answer(ApprovalDecision::Approve)
    };
    let deny = move |_| answer(ApprovalDecision::Deny);
    view! {
        <div class="approval" role="group" aria-label="Approve this tool call?">
            <p class="approval-question">"This tool call needs your approval."</p>
            <Show when=move || run_id().is_some()>
                <div class="approval-actions">
                    <button type="button" class="approve" on:click=approve.clone() disabled=move || sending.get()>
                        "Approve"
                    </button>
                    <input
                        type="text"
                        class="approval-reason"
                        placeholder="Reason (optional)"
                        aria-label="Reason for denying"
                        maxlength="500"
                        prop:value=move || reason.get()
                        on:input=move |event| reason.set(event_target_value(&event))
                    />
                    <button type="button" class="deny" on:click=deny.clone() disabled=move || sending.get()>
                        "Deny"
                    </button>
                </div>
            </Show>
            {move || problem.get().map(|problem| view! { <p class="tool-error" role="alert">{problem}</p> })}
        </div>
    }
    .into_any()
}
