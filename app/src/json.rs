//! Every JSON the browser reads goes through one parser: serde_json's over bytes, the one server
//! functions use for their answers. Each type's deserializer is compiled once per kind of parser
//! input, so `from_str` (Leptos's JSON codec for resources, gloo-net's `json()`) beside
//! `from_slice` compiled every deserializer twice: 74 KB of the bundle's code before `wasm-opt`
//! (docs/benchmarks.md, "Bundle size"). The codec is written here because Leptos's JSON codec
//! reads text with `from_str`; the JSON is the same. `app/clippy.toml` turns the four calls that
//! would bring the second parser back into clippy errors.

use leptos::server::codee::{Decoder, Encoder};
use serde::{de::DeserializeOwned, Serialize};

/// Parses JSON text with the bundle's one parser.
pub fn parse<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    serde_json::from_slice(text.as_bytes())
}

/// The codec of the app's resources: the JSON text Leptos's default codec writes into the page,
/// read back with [`parse`].
pub struct Json;

impl<T: Serialize> Encoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &T) -> Result<String, Self::Error> {
        serde_json::to_string(value)
    }
}

impl<T: DeserializeOwned> Decoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(text: &str) -> Result<T, Self::Error> {
        parse(text)
    }
}

/// A resource whose value travels from the server's render to the browser with [`Json`].
pub type Resource<T> = leptos::prelude::Resource<T, Json>;

/// `Resource::new` with [`Json`]: reruns `fetcher` when `source` changes.
#[track_caller]
pub fn resource<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    S: PartialEq + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}

/// A one-shot resource whose value travels with [`Json`].
pub type OnceResource<T> = leptos::prelude::OnceResource<T, Json>;

/// A response's body as JSON, read with [`parse`] (gloo-net's `json()` would use `from_str`).
#[cfg(feature = "hydrate")]
pub async fn read<T: DeserializeOwned>(
    response: &gloo_net::http::Response,
) -> Result<T, gloo_net::Error> {
    Ok(parse(&response.text().await?)?)
}
