//! The built site's assets under `/pkg` (the wasm, its JS glue, the CSS): served from the files
//! `cargo leptos build --release --precompress` wrote, brotli or gzip as the browser accepts,
//! never compressed per request. Content-hashed names (see [`crate::site`]) are cached for a year
//! as immutable; any other file is kept but revalidated on each visit (`no-cache`; an unchanged
//! file answers 304 from its Last-Modified date). Pages and API answers carry a user's data: they
//! get `private, no-store` unless they set their own, so no shared cache or back-forward store
//! keeps them.

use std::{collections::HashSet, path::PathBuf, sync::Arc};

use axum::{
    extract::{Request, State},
    http::{header, HeaderValue},
    middleware::{self, Next},
    response::Response,
    Router,
};
use leptos::prelude::LeptosOptions;
use tower_http::{
    services::{ServeDir, ServeFile},
    set_header::{SetResponseHeader, SetResponseHeaderLayer},
};

const REVALIDATE: HeaderValue = HeaderValue::from_static("no-cache");
const PRIVATE: HeaderValue = HeaderValue::from_static("private, no-store");
const IMMUTABLE: HeaderValue = HeaderValue::from_static("public, max-age=31536000, immutable");

/// `/pkg/*` from `<site root>/pkg`, precompressed variants first.
pub fn pkg_router(options: &LeptosOptions, immutable: Arc<HashSet<String>>) -> Router {
    let dir = PathBuf::from(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref());
    let files = ServeDir::new(dir).precompressed_br().precompressed_gzip();
    Router::new()
        .fallback_service(files)
        .layer(middleware::from_fn_with_state(immutable, cache_policy))
}

async fn cache_policy(
    State(immutable): State<Arc<HashSet<String>>>,
    request: Request,
    next: Next,
) -> Response {
    let hashed = request
        .uri()
        .path()
        .rsplit('/')
        .next()
        .is_some_and(|name| immutable.contains(name));
    let mut response = next.run(request).await;
    let policy = if hashed && response.status().is_success() {
        IMMUTABLE
    } else {
        REVALIDATE
    };
    response.headers_mut().insert(header::CACHE_CONTROL, policy);
    response
}

/// `/favicon.svg`, which every page names: revalidated like `/pkg` (304 when unchanged), where
/// Leptos's file handler answered a full 200 on every visit.
pub fn favicon(options: &LeptosOptions) -> SetResponseHeader<ServeFile, HeaderValue> {
    let file = ServeFile::new(PathBuf::from(options.site_root.as_ref()).join("favicon.svg"));
    SetResponseHeader::overriding(file, header::CACHE_CONTROL, REVALIDATE)
}

/// `Cache-Control: private, no-store` on answers that set none (pages, API).
pub fn private_by_default() -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::if_not_present(header::CACHE_CONTROL, PRIVATE)
}
