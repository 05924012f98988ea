//! Records that modules which must not depend on each other share: a leaf module (it uses no
//! other), so the store can name a model turn's wire format without depending on providers.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions: OpenAI, vLLM, Ollama, llama.cpp's server, OpenRouter.
    #[default]
    OpenaiChat,
    /// The OpenAI Responses API.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// An AG-UI agent's request (`RunAgentInput`) and what the trace keeps of its events.
    AgUi,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenaiChat => "openai_chat",
            ProviderKind::OpenaiResponses => "openai_responses",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::AgUi => "ag_ui",
        }
    }

    /// A stored format name; turns recorded before formats were stored are OpenAI chat.
    pub fn parse(name: &str) -> Self {
        [
            ProviderKind::OpenaiResponses,
            ProviderKind::Anthropic,
            ProviderKind::AgUi,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == name)
        .unwrap_or_default()
    }
}
