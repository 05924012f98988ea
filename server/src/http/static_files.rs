//! The built site's assets under `/pkg` (the wasm, its JS glue, the CSS): served from the files
//! `cargo leptos build --release --precompress` wrote, brotli or gzip as the browser accepts,
//! never compressed per request. Their names are not content-hashed yet, so a browser keeps them
//! but revalidates on each visit (`no-cache`; an unchanged file answers 304 from its
//! Last-Modified date). Pages and API answers get `no-cache` too unless they set their own.

use std::path::PathBuf;

use axum::http::{header, HeaderValue};
use leptos::prelude::LeptosOptions;
use tower::Layer;
use tower_http::{
    services::ServeDir,
    set_header::{SetResponseHeader, SetResponseHeaderLayer},
};

/// What every answer without its own Cache-Control gets.
const REVALIDATE: HeaderValue = HeaderValue::from_static("no-cache");

/// `/pkg/*` from `<site root>/pkg`, precompressed variants first.
pub fn pkg_service(options: &LeptosOptions) -> SetResponseHeader<ServeDir, HeaderValue> {
    let dir = PathBuf::from(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref());
    let files = ServeDir::new(dir).precompressed_br().precompressed_gzip();
    SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, REVALIDATE).layer(files)
}

/// `Cache-Control: no-cache` on answers that set none (pages, API).
pub fn revalidate_by_default() -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::if_not_present(header::CACHE_CONTROL, REVALIDATE)
}
