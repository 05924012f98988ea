//! Branches (issue 36), the part that does not depend on the database: what a rerun asks, where
//! its messages go, the errors for a bad target, and each message's place among its siblings.
//!
//! A conversation's messages form a tree (each keeps the message it follows, `parent_id`); the
//! active path is the conversation every reader sees. A regenerate or an edit deactivates the
//! target and everything after it and inserts the new version at the same position; switching to
//! a sibling activates it and, below it, the branch chosen last.

use std::collections::HashMap;

use app::protocol::{Message, Siblings};

use super::records::{NewRun, Rerun};
use crate::error::{Error, Result};

/// A message a rerun or a switch names, as stored.
#[derive(Clone, Debug)]
pub struct Target {
    pub position: i64,
    pub role: String,
    pub parent_id: Option<String>,
    pub active: bool,
}

/// Where a run's messages go: the history the model gets (the active path before the question),
/// the question's position and parent, and the question itself when it is already stored (a
/// regenerate). `deactivate_from`: the first position taken out of the active path, if any.
#[derive(Debug)]
pub struct Placement {
    pub history: Vec<Message>,
    pub position: i64,
    pub parent_id: Option<String>,
    pub question: Option<Message>,
    pub deactivate_from: Option<i64>,
}

impl Placement {
    /// The first question of a new conversation.
    pub fn first() -> Self {
        Placement::after(Vec::new())
    }

    /// A new question after the whole active path `history`.
    pub fn after(history: Vec<Message>) -> Self {
        Placement {
            position: history.len() as i64,
            parent_id: history.last().map(|message| message.id.clone()),
            history,
            question: None,
            deactivate_from: None,
        }
    }

    /// A regenerate of the answer `target`: its stored `question` asked again after `history`
    /// (the active path before the question), the old answer and what follows it deactivated.
    pub fn regenerate(target: &Target, history: Vec<Message>, question: Message) -> Self {
        Placement {
            history,
            position: target.position - 1,
            parent_id: None,
            question: Some(question),
            deactivate_from: Some(target.position),
        }
    }

    /// An edit of the question `target`: a new question in its place after `history` (the active
    /// path before it), the old one and what follows it deactivated.
    pub fn edit(target: Target, history: Vec<Message>) -> Self {
        Placement {
            history,
            position: target.position,
            parent_id: target.parent_id,
            question: None,
            deactivate_from: Some(target.position),
        }
    }
}

impl Target {
    /// The question a regenerated answer follows: its parent (`NotFound` when it has none).
    pub fn question_id(&self) -> Result<&str> {
        self.parent_id.as_deref().ok_or(Error::NotFound("message"))
    }
}

/// The run's question (new, or the stored one a regenerate answers) and its empty answer.
pub fn run_messages(new: &NewRun, model: &str, question: Option<Message>) -> (Message, Message) {
    let question = question.unwrap_or_else(|| {
        Message::user(
            new.user_message_id.clone(),
            new.content.clone(),
            new.now.clone(),
        )
    });
    let mut answer = Message::assistant(
        new.assistant_message_id.clone(),
        model.to_owned(),
        new.now.clone(),
    );
    answer.trace_id = Some(new.trace_id.clone());
    (question, answer)
}

/// Checks a rerun's target: it must be on the active path and have the right role.
pub fn check_target(rerun: &Rerun, target: &Target) -> Result<()> {
    match (rerun, target.role.as_str()) {
        (Rerun::Regenerate(_), "user") => {
            return Err(Error::InvalidField(
                "regenerate names an answer (an assistant message); to change a question, edit it"
                    .into(),
            ))
        }
        (Rerun::Edit(_), "assistant") => {
            return Err(Error::InvalidField(
                "edit names a question (a user message); to get a new answer, regenerate it".into(),
            ))
        }
        _ => {}
    }
    if !target.active {
        return Err(Error::Conflict(
            "that message is not on the conversation's current branch; switch to it first".into(),
        ));
    }
    Ok(())
}

/// The message id a rerun names.
pub fn target_id(rerun: &Rerun) -> &str {
    match rerun {
        Rerun::Regenerate(id) | Rerun::Edit(id) => id,
    }
}

/// One message of a group of siblings, as read: id, parent, role, and its trace (answers).
/// Rows come oldest first.
#[derive(Debug, sqlx::FromRow)]
pub struct SiblingRow {
    pub id: String,
    pub parent_id: Option<String>,
    pub role: String,
    pub trace_id: Option<String>,
}

/// A group of siblings, oldest first: each one's id and trace.
type Group = Vec<(String, Option<String>)>;

/// Sets `siblings` on each message that has some, from the rows of every message of the
/// conversation that has a sibling (oldest first).
pub fn mark_siblings(messages: &mut [Message], rows: Vec<SiblingRow>) {
    let mut groups: HashMap<(Option<String>, String), Group> = HashMap::new();
    for row in rows {
        groups
            .entry((row.parent_id, row.role))
            .or_default()
            .push((row.id, row.trace_id));
    }
    let mut place: HashMap<&str, (&Group, usize)> = HashMap::new();
    for group in groups.values() {
        for (index, (id, _)) in group.iter().enumerate() {
            place.insert(id.as_str(), (group, index));
        }
    }
    for message in messages {
        let Some((group, index)) = place.get(message.id.as_str()).copied() else {
            continue;
        };
        if group.len() < 2 {
            continue;
        }
        let previous = index.checked_sub(1).map(|i| &group[i]);
        let next = group.get(index + 1);
        message.siblings = Some(Siblings {
            index: index + 1,
            count: group.len(),
            previous_id: previous.map(|(id, _)| id.clone()),
            next_id: next.map(|(id, _)| id.clone()),
            compare_trace_id: previous.or(next).and_then(|(_, trace)| trace.clone()),
        });
    }
}

/// The 409 for switching branches while a run is going.
pub fn busy_switch() -> Error {
    Error::Conflict("a run is going in this conversation; stop it, then switch versions".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, parent: Option<&str>, role: &str) -> SiblingRow {
        SiblingRow {
            id: id.into(),
            parent_id: parent.map(str::to_owned),
            role: role.into(),
            trace_id: Some(format!("trace_{id}")),
        }
    }

    #[test]
    fn siblings_are_counted_per_parent_and_role() {
        let mut messages = vec![
            Message::user("q2".into(), "Hi".into(), "t".into()),
            Message::assistant("a2".into(), "demo".into(), "t".into()),
        ];
        let rows = vec![
            row("q1", None, "user"),
            row("q2", None, "user"),
            row("a1", Some("q2"), "assistant"),
            row("a2", Some("q2"), "assistant"),
            row("a3", Some("q2"), "assistant"),
        ];
        mark_siblings(&mut messages, rows);
        let question = messages[0].siblings.clone().expect("question siblings");
        assert_eq!((question.index, question.count), (2, 2));
        assert_eq!(question.previous_id.as_deref(), Some("q1"));
        assert_eq!(question.next_id, None);
        let answer = messages[1].siblings.clone().expect("answer siblings");
        assert_eq!((answer.index, answer.count), (2, 3));
        assert_eq!(answer.next_id.as_deref(), Some("a3"));
        assert_eq!(answer.compare_trace_id.as_deref(), Some("trace_a1"));
    }
}
