//! Model providers: the services that answer a conversation with text, reasoning and tool calls.
//! One [`provider::Provider`] speaks every API through a [`provider::WireFormat`] (serde types for
//! each API's request and stream) and reports a turn through a [`TurnSink`]; the agent loop
//! (`agents::model_loop`) turns that into events. Configuration comes from a JSON file
//! (`--providers-file`); API keys come only from environment variables it names, and never reach
//! the browser, the events, the database or the logs.

mod anthropic;
mod discover;
mod http;
pub use http::{error_message, without_url};
mod openai_chat;
mod openai_responses;
pub mod options;
mod provider;
pub mod sse;

use app::protocol::ErrorCode;
use std::{collections::BTreeMap, path::Path, sync::Arc, time::Duration};

use futures::future::BoxFuture;

use crate::records::ProviderKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::{approval::ApprovalConfig, mcp::McpServerConfig};
use anthropic::Anthropic;
use openai_chat::OpenAiChat;
use openai_responses::OpenAiResponses;
use provider::Provider;

/// A token count as a provider reports it: a whole number from 0 to `u64::MAX`, or nothing. A
/// negative, fractional or oversized number (or any other JSON) counts as not reported, so a
/// provider's bad bookkeeping never fails the run it belongs to.
pub fn lenient_count<'de, D>(deserializer: D) -> Result<Option<u64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value = Value::deserialize(deserializer)?;
    if !value.is_null() && value.as_u64().is_none() {
        tracing::debug!("a provider reported a token count that is not a count; ignored");
    }
    Ok(value.as_u64())
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvidersFile {
    #[serde(default)]
    pub providers: Vec<ProviderConfig>,
    /// MCP tool servers by name, in the shape other MCP clients use (docs/providers.md).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Which tool calls wait for a person (docs/providers.md).
    #[serde(default)]
    pub approval: ApprovalConfig,
    /// Model turns per run before it ends with `step_limit`.
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    /// Agents of their own that speak AG-UI (docs/agents.md): each is the model `agent/<name>`.
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
}

/// An AG-UI agent Glassbox runs by URL (pydantic-ai, LangGraph, CrewAI, ADK, one's own code).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Its model id is `agent/<name>`.
    pub name: String,
    /// Where `RunAgentInput` is POSTed.
    pub url: String,
    /// Sent with every request; `${NAME}` is read from Glassbox's environment, as for MCP servers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub description: Option<String>,
    /// A run whose agent sends nothing (no event, no comment) this long ends with `agent_timeout`.
    #[serde(default = "default_idle_timeout_secs")]
    pub idle_timeout_secs: u64,
    /// How long to wait for the agent's connection (and then its answer's headers, with the idle
    /// timeout).
    #[serde(default = "default_connect_timeout_secs")]
    pub connect_timeout_secs: u64,
}

fn default_idle_timeout_secs() -> u64 {
    300
}

fn default_connect_timeout_secs() -> u64 {
    10
}

fn default_max_steps() -> u32 {
    12
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The prefix of its models' ids: `openai` gives `openai/gpt-4o-mini`.
    pub name: String,
    pub kind: ProviderKind,
    /// e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// The environment variable that holds the API key (none for local servers).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Sends the bare key in this header instead of the format's own (Azure's `api-key`).
    #[serde(default)]
    pub api_key_header: Option<String>,
    /// Query parameters of every request (Azure's `api-version`).
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    /// Names, or `{"id": name, ...options}` objects whose options override the provider's; or
    /// `"discover"`: listed from `GET {base_url}/models` at start (with the provider's options).
    pub models: discover::Models,
    /// Options for every model of the provider (docs/providers.md).
    #[serde(default)]
    pub options: options::ModelOptions,
    /// Sent as the first (system) message.
    #[serde(default)]
    pub system_prompt: Option<String>,
}

/// The provider that speaks `kind`'s API.
fn provider_for(
    kind: ProviderKind,
    clients: http::Clients,
    endpoint: provider::Endpoint,
) -> Result<Arc<dyn ChatProvider>, String> {
    Ok(match kind {
        ProviderKind::OpenaiChat => Arc::new(Provider::<OpenAiChat>::new(clients, endpoint)),
        ProviderKind::OpenaiResponses => {
            Arc::new(Provider::<OpenAiResponses>::new(clients, endpoint))
        }
        ProviderKind::Anthropic => Arc::new(Provider::<Anthropic>::new(clients, endpoint)),
        ProviderKind::AgUi => {
            return Err(
                "kind 'ag_ui' is not a model provider: list AG-UI agents under 'agents'".into(),
            )
        }
    })
}

/// A request recorded in `kind`'s wire format, back in OpenAI chat format (the inspector's).
pub fn conversation(kind: ProviderKind, sent: &Value) -> Option<Vec<ChatMessage>> {
    match kind {
        ProviderKind::OpenaiChat => provider::conversation::<OpenAiChat>(sent),
        ProviderKind::OpenaiResponses => provider::conversation::<OpenAiResponses>(sent),
        ProviderKind::Anthropic => provider::conversation::<Anthropic>(sent),
        ProviderKind::AgUi => ag_ui_conversation(sent),
    }
}

/// An AG-UI `RunAgentInput`'s messages in OpenAI chat format (reasoning and activity left out).
fn ag_ui_conversation(sent: &Value) -> Option<Vec<ChatMessage>> {
    use crate::ag_ui::wire::{Message, RunAgentInput};
    let input = RunAgentInput::deserialize(sent).ok()?;
    let messages = input.messages.into_iter().filter_map(|message| {
        Some(match message {
            Message::User { content, .. } => ChatMessage::text(
                "user",
                content
                    .as_str()
                    .map_or_else(|| content.to_string(), str::to_owned),
            ),
            Message::System { content, .. } | Message::Developer { content, .. } => {
                ChatMessage::text("system", content)
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => ChatMessage {
                role: "assistant".into(),
                content,
                tool_calls: tool_calls
                    .unwrap_or_default()
                    .into_iter()
                    .map(|call| RequestedCall {
                        id: call.id,
                        name: call.function.name,
                        arguments: call.function.arguments,
                    })
                    .collect(),
                tool_call_id: None,
                reasoning: Vec::new(),
            },
            Message::Tool {
                content,
                tool_call_id,
                ..
            } => ChatMessage {
                role: "tool".into(),
                content: Some(content),
                tool_calls: Vec::new(),
                tool_call_id: Some(tool_call_id),
                reasoning: Vec::new(),
            },
            Message::Reasoning { .. } | Message::Activity { .. } => return None,
        })
    });
    Some(messages.collect())
}

/// A message of the conversation sent to the model, in OpenAI chat format (the inspector's format
/// too); adapters for other APIs convert from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<RequestedCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// An assistant turn's reasoning as the provider recorded it, sent back before its calls by
    /// the format that made it (any other leaves it out). Never serialized: absent from exports.
    #[serde(skip)]
    pub reasoning: Vec<ReasoningBlock>,
}

impl ChatMessage {
    pub fn text(role: &str, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.to_owned(),
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: Vec::new(),
        }
    }

    /// The blocks of this message that `format` made.
    pub fn reasoning_of(&self, format: ProviderKind) -> impl Iterator<Item = &Value> {
        self.reasoning
            .iter()
            .filter(move |block| block.format == format)
            .map(|block| &block.block)
    }
}

/// A provider's own record of a turn's reasoning (an Anthropic `thinking` or `redacted_thinking`
/// block, a Responses `reasoning` item), kept exactly as it came: the provider checks its
/// signature or decrypts it when it comes back. Opaque to Glassbox, never shown, never redacted.
#[derive(Clone, Debug, PartialEq)]
pub struct ReasoningBlock {
    pub format: ProviderKind,
    pub block: Value,
}

/// A tool call the model asked for, with its arguments as the JSON text the model wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestedCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

#[derive(Clone, Debug)]
pub struct TurnRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSchema>,
    /// The model's options from the providers file (docs/providers.md).
    pub options: Arc<options::ModelOptions>,
}

/// What one model turn produced.
#[derive(Clone, Debug, Default)]
pub struct TurnOutput {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<RequestedCall>,
    pub usage: Option<app::protocol::Usage>,
    pub finish_reason: Option<String>,
    /// The provider's own records of the turn's reasoning, in the order they came.
    pub reasoning_blocks: Vec<ReasoningBlock>,
}

/// Receives a turn's stream as it arrives. Reasoning comes in parts numbered by `summary_index`
/// (0 when the provider has a single stream of thinking).
pub trait TurnSink: Send {
    fn reasoning(&mut self, summary_index: u32, delta: &str);
    fn text(&mut self, delta: &str);
    /// The request failed (`reason`: `rate_limited`, `overloaded`, ...) and is sent again, for
    /// the `attempt`th time, after `delay`.
    fn retrying(&mut self, _attempt: u32, _delay: Duration, _reason: &ErrorCode) {}
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderError {
    /// `provider_auth`, `unknown_model`, `rate_limited`, `provider_unavailable`, `provider_error`,
    /// `malformed_stream`, `stream_interrupted`, `connection_failed`.
    pub code: ErrorCode,
    pub message: String,
}

impl ProviderError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ProviderError {
            code,
            message: message.into(),
        }
    }
}

/// One model turn on the wire: the request body exactly as it went out, and what came back.
pub struct Exchange {
    pub format: ProviderKind,
    pub sent: Value,
    pub result: Result<TurnOutput, ProviderError>,
}

pub trait ChatProvider: Send + Sync {
    fn stream_turn<'a>(
        &'a self,
        request: &'a TurnRequest,
        sink: &'a mut dyn TurnSink,
    ) -> BoxFuture<'a, Exchange>;
}

/// Retries on 429 and 5xx, only before the first streamed byte.
pub const RETRY_DELAYS: [Duration; 3] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
];

/// A provider's models, each with its options.
type ModelList = Vec<(String, Arc<options::ModelOptions>)>;

/// One configured provider: its adapter, its models and its system prompt.
#[derive(Clone)]
struct Configured {
    adapter: Arc<dyn ChatProvider>,
    /// Each model with its options (the provider's, overridden by the model's own). Shared by
    /// every clone: a discovered list is replaced in place.
    models: Arc<std::sync::RwLock<ModelList>>,
    /// The provider's own options, which a discovered model gets.
    options: Arc<options::ModelOptions>,
    system_prompt: Option<String>,
    /// Set when the models are listed by the server (`"models": "discover"`).
    discovery: Option<discover::Discovery>,
}

impl Configured {
    /// The model names, in the file's (or the server's) order.
    fn models(&self) -> Vec<String> {
        self.models
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// A model's options, if the provider has that model.
    fn options_of(&self, model: &str) -> Option<Arc<options::ModelOptions>> {
        self.models
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .find(|(name, _)| name == model)
            .map(|(_, options)| options.clone())
    }
}

/// A configured model: its provider's adapter, its name there, the system prompt and its options.
pub struct ModelChoice {
    pub adapter: Arc<dyn ChatProvider>,
    pub model: String,
    pub system_prompt: Option<String>,
    pub options: Arc<options::ModelOptions>,
}

/// The configured providers, by name, and their models.
#[derive(Clone, Default)]
pub struct Providers {
    providers: BTreeMap<String, Configured>,
    pub max_steps: u32,
    /// Started by the tool registry, not here.
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    pub approval: ApprovalConfig,
    /// AG-UI agents by name.
    pub agents: BTreeMap<String, ConfiguredAgent>,
    /// Held while the servers are asked for their models: one listing at a time, however often
    /// someone presses Reload.
    discovering: Arc<tokio::sync::Mutex<()>>,
}

impl Providers {
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        let file: ProvidersFile = serde_json::from_str(&text).map_err(|error| {
            format!("{} is not a valid providers file: {error}", path.display())
        })?;
        let clients = http::Clients::new()?;
        let mut providers = BTreeMap::new();
        for config in file.providers {
            let configured = configure(config.clone(), clients.clone())
                .map_err(|error| format!("provider '{}': {error}", config.name))?;
            providers.insert(config.name.clone(), configured);
        }
        for name in file.mcp_servers.keys() {
            crate::tools::mcp::check_server_name(name)?;
        }
        Ok(Providers {
            providers,
            max_steps: file.max_steps.max(1),
            mcp_servers: file.mcp_servers,
            approval: file.approval,
            agents: agents_by_name(file.agents)?,
            discovering: Arc::default(),
        })
    }

    /// Lists again the models of every provider configured with `"models": "discover"`; a server
    /// that cannot be asked keeps the list it had. How many models each such provider has now.
    pub async fn discover(&self) -> BTreeMap<String, usize> {
        let _one_at_a_time = self.discovering.lock().await;
        let mut counts = BTreeMap::new();
        for (name, configured) in &self.providers {
            let Some(discovery) = &configured.discovery else {
                continue;
            };
            match discovery.list().await {
                Ok(models) => {
                    tracing::info!(provider = %name, models = models.len(), "listed the server's models");
                    let models = models
                        .into_iter()
                        .map(|name| (name, configured.options.clone()))
                        .collect();
                    *configured
                        .models
                        .write()
                        .unwrap_or_else(|poisoned| poisoned.into_inner()) = models;
                }
                Err(error) => {
                    tracing::warn!(provider = %name, %error, "could not list the server's models")
                }
            }
            counts.insert(name.clone(), configured.models().len());
        }
        counts
    }

    /// The AG-UI agent of a model id such as `agent/research`.
    pub fn agent(&self, model_id: &str) -> Option<&ConfiguredAgent> {
        let name = model_id.strip_prefix(AGENT_PREFIX)?.strip_prefix('/')?;
        self.agents.get(name)
    }

    /// The configured model of an id such as `openai/gpt-4o-mini`.
    pub fn find(&self, model_id: &str) -> Option<ModelChoice> {
        let (provider, model) = model_id.split_once('/')?;
        let configured = self.providers.get(provider)?;
        let options = configured.options_of(model)?;
        Some(ModelChoice {
            adapter: configured.adapter.clone(),
            model: model.to_owned(),
            system_prompt: configured.system_prompt.clone(),
            options,
        })
    }

    /// Every model id, for the model picker: the providers' models, then the agents.
    pub fn model_ids(&self) -> Vec<String> {
        self.providers
            .iter()
            .flat_map(|(name, configured)| {
                configured
                    .models()
                    .into_iter()
                    .map(move |model| format!("{name}/{model}"))
            })
            .chain(
                self.agents
                    .keys()
                    .map(|name| format!("{AGENT_PREFIX}/{name}")),
            )
            .collect()
    }
}

/// Each listed model of a provider with its options (the provider's, then the model's own),
/// checked.
fn model_options(
    kind: ProviderKind,
    provider: &options::ModelOptions,
    entries: &[options::ModelEntry],
) -> Result<ModelList, String> {
    let mut models: ModelList = Vec::new();
    for entry in entries {
        if entry.id.is_empty() || models.iter().any(|(id, _)| id == &entry.id) {
            return Err(format!("model '{}' is empty or listed twice", entry.id));
        }
        let options = provider.overridden_by(&entry.options);
        options
            .check()
            .and_then(|()| anthropic_check(kind, &options))
            .map_err(|error| format!("model '{}': {error}", entry.id))?;
        models.push((entry.id.clone(), Arc::new(options)));
    }
    Ok(models)
}

/// Anthropic refuses a temperature other than 1 with thinking: say so at start, not per request.
fn anthropic_check(kind: ProviderKind, options: &options::ModelOptions) -> Result<(), String> {
    let thinking = options.thinking_budget.is_some() || options.reasoning == Some(true);
    match options.temperature {
        Some(temperature) if kind == ProviderKind::Anthropic && thinking && temperature != 1.0 => {
            Err(format!(
                "temperature {temperature} with thinking: Anthropic takes none (drop temperature, or set reasoning to false)"
            ))
        }
        _ => Ok(()),
    }
}

/// Checks a provider's name and options, reads its key and builds its adapter.
fn configure(config: ProviderConfig, clients: http::Clients) -> Result<Configured, String> {
    if config.name.is_empty()
        || config.name.contains('/')
        || config.name.starts_with("scenario")
        || config.name == "demo"
        || config.name == AGENT_PREFIX
    {
        return Err(format!(
            "provider name '{}' is not allowed (no '/', not 'demo', 'agent' or 'scenario')",
            config.name
        ));
    }
    if let Some(header) = &config.api_key_header {
        reqwest::header::HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| format!("api_key_header '{header}' is not a header name"))?;
    }
    config.options.check()?;
    anthropic_check(config.kind, &config.options)?;
    let endpoint = provider::Endpoint {
        base_url: config.base_url.clone(),
        api_key: api_key(&config),
        api_key_header: config.api_key_header.clone(),
        query: config.query.clone().into_iter().collect(),
    };
    let adapter = provider_for(config.kind, clients.clone(), endpoint.clone())?;
    let (models, discovery) = match &config.models {
        discover::Models::List(entries) => {
            (model_options(config.kind, &config.options, entries)?, None)
        }
        discover::Models::Discover => (
            Vec::new(),
            Some(discover::Discovery::new(config.kind, endpoint, clients)),
        ),
    };
    Ok(Configured {
        adapter,
        models: Arc::new(std::sync::RwLock::new(models)),
        options: Arc::new(config.options),
        system_prompt: config.system_prompt,
        discovery,
    })
}

/// The provider's key, from the variable `api_key_env` names (none for local servers).
fn api_key(config: &ProviderConfig) -> Option<String> {
    let variable = config.api_key_env.as_ref()?;
    match std::env::var(variable) {
        Ok(key) if !key.is_empty() => Some(key),
        _ => {
            tracing::warn!(provider = %config.name, variable = %variable, "the API key variable is not set");
            None
        }
    }
}

/// An AG-UI agent and its HTTP client (its connect timeout; no overall one, a run is long).
#[derive(Clone)]
pub struct ConfiguredAgent {
    pub config: Arc<AgentConfig>,
    pub client: reqwest::Client,
}

/// The prefix of an AG-UI agent's model id: `agent/research`.
pub const AGENT_PREFIX: &str = "agent";

/// Checks each agent's name and URL; two agents may not share a name.
fn agents_by_name(agents: Vec<AgentConfig>) -> Result<BTreeMap<String, ConfiguredAgent>, String> {
    let mut by_name = BTreeMap::new();
    for agent in agents {
        let valid_name = !agent.name.is_empty()
            && agent
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid_name {
            return Err(format!(
                "agent name '{}' is not allowed (letters, digits, '-', '_' and '.')",
                agent.name
            ));
        }
        match reqwest::Url::parse(&agent.url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            _ => {
                return Err(format!(
                    "agent '{}': its url is not an http(s) URL",
                    agent.name
                ))
            }
        }
        if agent.idle_timeout_secs == 0 || agent.connect_timeout_secs == 0 {
            return Err(format!(
                "agent '{}': timeouts must be at least 1 second",
                agent.name
            ));
        }
        // No redirects: reqwest would send the agent's headers (its token) to wherever one points.
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(agent.connect_timeout_secs))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
        let name = agent.name.clone();
        let configured = ConfiguredAgent {
            config: Arc::new(agent),
            client,
        };
        if by_name.insert(name.clone(), configured).is_some() {
            return Err(format!("two agents are named '{name}'"));
        }
    }
    Ok(by_name)
}
