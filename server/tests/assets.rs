//! The site's assets: precompressed variants by Accept-Encoding, and caching headers.

mod common;

use common::*;

fn header<'a>(response: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

/// `GET url` with one request header.
async fn get_with(server: &TestServer, url: &str, name: &str, value: &str) -> reqwest::Response {
    server
        .client
        .get(url)
        .header(name, value)
        .send()
        .await
        .expect("GET")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assets_come_precompressed_as_accepted_and_are_revalidated_not_refetched() {
    let dir = test_dir();
    let pkg = dir.path().join("site/pkg");
    for (name, body) in [
        ("glassbox.wasm", "raw wasm"),
        ("glassbox.wasm.br", "brotli wasm"),
        ("glassbox.wasm.gz", "gzip wasm"),
    ] {
        std::fs::write(pkg.join(name), body).expect("write asset");
    }
    std::fs::write(dir.path().join("site/favicon.svg"), "<svg/>").expect("write the icon");
    let server = TestServer::start_in(dir).await;
    let url = server.url("/pkg/glassbox.wasm");
    for (accept, encoding, body) in [
        ("br, gzip", Some("br"), "brotli wasm"),
        ("gzip, deflate", Some("gzip"), "gzip wasm"),
        ("identity", None, "raw wasm"),
    ] {
        let response = get_with(&server, &url, "accept-encoding", accept).await;
        assert_eq!(response.status(), 200, "{accept}");
        assert_eq!(header(&response, "content-encoding"), encoding, "{accept}");
        assert_eq!(header(&response, "cache-control"), Some("no-cache"));
        assert_eq!(header(&response, "content-type"), Some("application/wasm"));
        assert_eq!(response.text().await.expect("body"), body);
    }
    let first = server.client.get(&url).send().await.expect("GET");
    let modified = header(&first, "last-modified")
        .expect("Last-Modified")
        .to_owned();
    let again = get_with(&server, &url, "if-modified-since", &modified).await;
    assert_eq!(again.status(), 304, "an unchanged asset is not sent again");

    // The icon every page names, too (it was a full 200 on every visit).
    let icon = server
        .client
        .get(server.url("/favicon.svg"))
        .send()
        .await
        .expect("GET");
    assert_eq!(icon.status(), 200);
    assert_eq!(header(&icon, "content-type"), Some("image/svg+xml"));
    assert_eq!(header(&icon, "cache-control"), Some("no-cache"));
    let modified = header(&icon, "last-modified")
        .expect("Last-Modified")
        .to_owned();
    let again = get_with(
        &server,
        &server.url("/favicon.svg"),
        "if-modified-since",
        &modified,
    )
    .await;
    assert_eq!(again.status(), 304, "an unchanged icon is not sent again");

    let page = server
        .client
        .get(server.url("/"))
        .send()
        .await
        .expect("GET /");
    assert_eq!(page.status(), 200);
    assert_eq!(header(&page, "cache-control"), Some("private, no-store"));
    server.stop().await;
}
