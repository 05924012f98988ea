//! `"models": "discover"`: a server's models listed from `GET {base_url}/models` (OpenAI's list
//! `{"data": [{"id"}]}`, which Ollama, LM Studio, vLLM, llama.cpp's server, OpenRouter, Groq,
//! Mistral, DeepSeek, Fireworks, Gemini and Anthropic answer; Together's bare array too), at start
//! and when someone asks for the list again.

use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;

use super::{
    anthropic::Anthropic, http, openai_chat::OpenAiChat, openai_responses::OpenAiResponses,
    options::ModelOptions, provider::Endpoint, ProviderKind,
};

/// A provider's `models`: names (or objects with options), or the word `"discover"`.
#[derive(Clone, Debug)]
pub enum Models {
    List(Vec<super::options::ModelEntry>),
    Discover,
}

/// By hand rather than `untagged`, so that a wrong model entry is refused with its own error
/// (an unknown option's name) instead of "did not match any variant".
impl<'de> Deserialize<'de> for Models {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match Value::deserialize(deserializer)? {
            Value::String(word) if word == "discover" => Ok(Models::Discover),
            Value::String(word) => Err(D::Error::custom(format!(
                "`models` is a list or \"discover\", not \"{word}\""
            ))),
            list => Vec::deserialize(list)
                .map(Models::List)
                .map_err(D::Error::custom),
        }
    }
}

/// The longest list read, and the most models kept from it.
const MAX_BODY: usize = 16 << 20;
const MAX_MODELS: usize = 2000;
const TIMEOUT: Duration = Duration::from_secs(15);

/// How to ask one server for its models.
#[derive(Clone)]
pub struct Discovery {
    kind: ProviderKind,
    endpoint: Endpoint,
    client: reqwest::Client,
}

impl Discovery {
    pub fn new(kind: ProviderKind, endpoint: Endpoint, clients: http::Clients) -> Self {
        Discovery {
            kind,
            endpoint,
            client: clients.pooled,
        }
    }

    /// The server's model names, in its order, without duplicates.
    pub async fn list(&self) -> Result<Vec<String>, String> {
        let url = self.endpoint.url("/models", "");
        let options = ModelOptions::default();
        let headers = match self.kind {
            ProviderKind::Anthropic => self.endpoint.headers::<Anthropic>(&options),
            ProviderKind::OpenaiResponses => self.endpoint.headers::<OpenAiResponses>(&options),
            _ => self.endpoint.headers::<OpenAiChat>(&options),
        };
        let mut request = self.client.get(url).timeout(TIMEOUT);
        for (name, value) in &headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let response = request
            .send()
            .await
            .map_err(|error| http::without_url(&error))?;
        if !response.status().is_success() {
            return Err(format!("the server answered {}", response.status()));
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk.map_err(|error| http::without_url(&error))?);
            if body.len() > MAX_BODY {
                return Err("the list is larger than 16 MiB".into());
            }
        }
        let value: Value =
            serde_json::from_slice(&body).map_err(|_| "the list is not JSON".to_owned())?;
        Ok(model_names(&value))
    }
}

/// The ids of a model list: `{"data": [...]}`, a bare array, or Ollama's `{"models": [...]}`;
/// an id that is empty, over 256 bytes or holds a control character is left out.
pub fn model_names(list: &Value) -> Vec<String> {
    let entries = list
        .get("data")
        .or_else(|| list.get("models"))
        .unwrap_or(list)
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut names: Vec<String> = Vec::new();
    for entry in entries {
        let name = entry
            .get("id")
            .or_else(|| entry.get("name"))
            .or(Some(&entry))
            .and_then(Value::as_str);
        let Some(name) = name else { continue };
        let usable = !name.is_empty() && name.len() <= 256 && !name.chars().any(char::is_control);
        if usable && !names.iter().any(|known| known == name) {
            names.push(name.to_owned());
        }
        if names.len() >= MAX_MODELS {
            break;
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_of_every_shape_give_their_ids() {
        let openai = json!({"object": "list", "data": [{"id": "qwen3:8b", "object": "model"}, {"id": "llama3.2"}]});
        assert_eq!(model_names(&openai), ["qwen3:8b", "llama3.2"]);
        let together =
            json!([{"id": "meta-llama/Llama-3.3-70B"}, {"id": "meta-llama/Llama-3.3-70B"}]);
        assert_eq!(model_names(&together), ["meta-llama/Llama-3.3-70B"]);
        let hostile = json!({"data": [{"id": ""}, {"id": "a\u{0}b"}, {"id": 7}, {"id": "ok"}]});
        assert_eq!(model_names(&hostile), ["ok"]);
    }
}
