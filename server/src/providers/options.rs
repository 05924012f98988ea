//! Per-model options from the providers file: set on a provider (`"options": {...}`) and
//! overridden per model (`"models": ["a", {"id": "b", "thinking_budget": 4096}]`). Each wire format
//! maps what it can (docs/providers.md, "Reasoning and per-model options"); `extra_body` is merged
//! into every request as it is, and `headers` are sent with it. Checked once, at start.

use std::{collections::BTreeMap, fmt};

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// The options one model is asked with. Every field is optional: an unset one leaves the wire
/// format's default (which asks for visible reasoning where the model can reason).
#[derive(Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelOptions {
    /// Ask for reasoning (Anthropic thinking, Responses summaries and encrypted reasoning): `true`
    /// or `false`; unset, the format decides from the model's name.
    #[serde(default)]
    pub reasoning: Option<bool>,
    /// `none`, `minimal`, `low`, `medium`, `high`, `xhigh` or `max`, as the model takes it.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// Anthropic: thinking tokens per turn (at least 1,024), or `"adaptive"`.
    #[serde(default)]
    pub thinking_budget: Option<ThinkingBudget>,
    /// Anthropic: the `interleaved-thinking-2025-05-14` beta (thinking between tool calls).
    #[serde(default)]
    pub interleaved_thinking: Option<bool>,
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Merged into the request body as it is (top-level members; a member here wins).
    #[serde(default)]
    pub extra_body: Option<Map<String, Value>>,
    /// Sent with every request; `${NAME}` is read from Glassbox's environment. Never logged.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
}

/// A thinking budget in tokens, or the model deciding (`"adaptive"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinkingBudget {
    Tokens(u32),
    Adaptive,
}

impl<'de> Deserialize<'de> for ThinkingBudget {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) if text == "adaptive" => Ok(ThinkingBudget::Adaptive),
            Value::Number(number) => number
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(ThinkingBudget::Tokens)
                .ok_or_else(|| serde::de::Error::custom("thinking_budget must be a whole number")),
            _ => Err(serde::de::Error::custom(
                "thinking_budget must be a number of tokens or \"adaptive\"",
            )),
        }
    }
}

/// Header values may hold keys: never printed.
impl fmt::Debug for ModelOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelOptions")
            .field("reasoning", &self.reasoning)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("thinking_budget", &self.thinking_budget)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("temperature", &self.temperature)
            .field("headers", &self.headers.as_ref().map(BTreeMap::len))
            .finish_non_exhaustive()
    }
}

const EFFORTS: [&str; 7] = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];
/// Set by Glassbox itself: a header of these names would break the request.
const RESERVED_HEADERS: [&str; 4] = [
    "content-type",
    "content-length",
    "host",
    "transfer-encoding",
];

impl ModelOptions {
    /// These options with `over`'s set fields on top (maps merged member by member).
    pub fn overridden_by(&self, over: &ModelOptions) -> ModelOptions {
        let merge_map =
            |base: &Option<Map<String, Value>>, top: &Option<Map<String, Value>>| match (base, top)
            {
                (Some(base), Some(top)) => {
                    let mut merged = base.clone();
                    merged.extend(top.clone());
                    Some(merged)
                }
                _ => top.clone().or_else(|| base.clone()),
            };
        let headers = match (&self.headers, &over.headers) {
            (Some(base), Some(top)) => {
                let mut merged = base.clone();
                merged.extend(top.clone());
                Some(merged)
            }
            (base, top) => top.clone().or_else(|| base.clone()),
        };
        ModelOptions {
            reasoning: over.reasoning.or(self.reasoning),
            reasoning_effort: over
                .reasoning_effort
                .clone()
                .or_else(|| self.reasoning_effort.clone()),
            thinking_budget: over.thinking_budget.or(self.thinking_budget),
            interleaved_thinking: over.interleaved_thinking.or(self.interleaved_thinking),
            max_output_tokens: over.max_output_tokens.or(self.max_output_tokens),
            temperature: over.temperature.or(self.temperature),
            extra_body: merge_map(&self.extra_body, &over.extra_body),
            headers,
        }
    }

    /// Refuses what no provider would take, with what to change.
    pub fn check(&self) -> Result<(), String> {
        if let Some(effort) = &self.reasoning_effort {
            if !EFFORTS.contains(&effort.as_str()) {
                return Err(format!(
                    "reasoning_effort '{effort}' is not one of {}",
                    EFFORTS.join(", ")
                ));
            }
        }
        if let Some(ThinkingBudget::Tokens(budget)) = self.thinking_budget {
            if budget < 1024 {
                return Err(format!(
                    "thinking_budget {budget} is below Anthropic's minimum of 1024 tokens"
                ));
            }
            if let Some(max) = self.max_output_tokens.filter(|max| *max <= budget) {
                return Err(format!(
                    "max_output_tokens {max} must be larger than thinking_budget {budget}"
                ));
            }
        }
        if self.max_output_tokens == Some(0) {
            return Err("max_output_tokens must be at least 1".into());
        }
        if let Some(temperature) = self.temperature {
            if !(0.0..=2.0).contains(&temperature) {
                return Err(format!("temperature {temperature} is not between 0 and 2"));
            }
        }
        if self.reasoning == Some(false) && self.thinking_budget.is_some() {
            return Err("thinking_budget is set but reasoning is false".into());
        }
        self.check_headers()
    }

    fn check_headers(&self) -> Result<(), String> {
        for (name, value) in self.headers.iter().flatten() {
            let lower = name.to_ascii_lowercase();
            if RESERVED_HEADERS.contains(&lower.as_str()) {
                return Err(format!("header '{name}' is set by Glassbox itself"));
            }
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(format!("'{name}' is not a valid header name"));
            }
            // The value as written (before `${NAME}` is read) must be a valid header value too.
            if reqwest::header::HeaderValue::from_str(value).is_err() {
                return Err(format!("header '{name}' has a value that is not valid"));
            }
        }
        Ok(())
    }

    /// The headers to send, `${NAME}` read from the environment.
    pub fn expanded_headers(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .flatten()
            .map(|(name, value)| (name.clone(), crate::tools::mcp::expand_env(value)))
            .collect()
    }
}

/// One entry of a provider's `models`: a name, or `{"id": name, ...options}`.
#[derive(Clone, Debug)]
pub struct ModelEntry {
    pub id: String,
    pub options: ModelOptions,
}

impl<'de> Deserialize<'de> for ModelEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(deserializer)? {
            Value::String(id) => Ok(ModelEntry {
                id,
                options: ModelOptions::default(),
            }),
            Value::Object(mut object) => {
                let Some(Value::String(id)) = object.remove("id") else {
                    return Err(D::Error::custom("a model object needs an \"id\" string"));
                };
                let options = ModelOptions::deserialize(Value::Object(object))
                    .map_err(|error| D::Error::custom(format!("model '{id}': {error}")))?;
                Ok(ModelEntry { id, options })
            }
            _ => Err(D::Error::custom(
                "a model is a name or an object {\"id\": name, ...options}",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn model_options_override_the_provider_member_by_member() {
        let base: ModelOptions = serde_json::from_value(
            json!({"temperature": 0.5, "extra_body": {"a": 1, "b": 2}, "headers": {"x-a": "1"}}),
        )
        .expect("options");
        let top: ModelOptions =
            serde_json::from_value(json!({"extra_body": {"b": 3}, "max_output_tokens": 100}))
                .expect("options");
        let merged = base.overridden_by(&top);
        assert_eq!(merged.temperature, Some(0.5));
        assert_eq!(merged.max_output_tokens, Some(100));
        assert_eq!(
            Value::Object(merged.extra_body.expect("body")),
            json!({"a": 1, "b": 3})
        );
        assert_eq!(merged.headers.expect("headers").len(), 1);
    }

    #[test]
    fn bad_options_are_refused_with_what_to_change() {
        let cases = [
            (json!({"reasoning_effort": "extreme"}), "reasoning_effort"),
            (json!({"thinking_budget": 100}), "minimum"),
            (
                json!({"thinking_budget": 4096, "max_output_tokens": 4096}),
                "larger",
            ),
            (json!({"temperature": 3.0}), "between"),
            (json!({"headers": {"content-type": "x"}}), "set by Glassbox"),
            (json!({"headers": {"bad name": "x"}}), "valid header name"),
        ];
        for (options, expected) in cases {
            let options: ModelOptions = serde_json::from_value(options).expect("options");
            let error = options.check().expect_err("refused");
            assert!(error.contains(expected), "{error}");
        }
        assert!(serde_json::from_value::<ModelEntry>(json!({"id": "m", "nope": 1})).is_err());
        assert!(
            serde_json::from_value::<ModelEntry>(json!({"id": "m", "thinking_budget": "x"}))
                .is_err()
        );
    }
}
