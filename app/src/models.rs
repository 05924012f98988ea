//! The shapes the read API and the pages share.

use serde::{Deserialize, Serialize};

use crate::protocol::Message;

/// One line of the sidebar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub model: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A conversation with its messages, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    #[serde(flatten)]
    pub summary: ConversationSummary,
    pub messages: Vec<Message>,
}
