//! Safe to expose: host names (DNS rebinding), same-origin writes, security headers and the JSON
//! error shape on every answer. The real binary on a real socket.

mod common;

use common::*;
use reqwest::{header, Client, Response};

async fn site() -> (tempfile::TempDir, Binary) {
    let dir = tempfile::tempdir().expect("temp dir");
    let pkg = dir.path().join("site/pkg");
    std::fs::create_dir_all(&pkg).expect("site");
    std::fs::create_dir_all(dir.path().join("workspace")).expect("workspace");
    std::fs::write(pkg.join("glassbox.js"), "export default function () {}").expect("js");
    let binary = launch(&dir, &["--allowed-hosts", "chat.example.com"]).await;
    (dir, binary)
}

async fn json_of(response: Response) -> (u16, serde_json::Value) {
    let status = response.status().as_u16();
    let body = response.text().await.expect("body");
    let value =
        serde_json::from_str(&body).unwrap_or_else(|_| panic!("not JSON ({status}): {body}"));
    (status, value)
}

/// POSTs `{}` to `url` with one extra header and, if given, a Content-Type: status and error code.
async fn post_cancel(
    client: &Client,
    url: &str,
    name: &str,
    value: &str,
    content_type: Option<&str>,
) -> (u16, Option<String>) {
    let mut request = client.post(url).header(name, value).body("{}");
    if let Some(content_type) = content_type {
        request = request.header(header::CONTENT_TYPE, content_type);
    }
    let (status, body) = json_of(request.send().await.expect("POST")).await;
    (status, body["code"].as_str().map(str::to_owned))
}

fn assert_security_headers(response: &Response, what: &str) {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let csp = header("content-security-policy");
    for directive in [
        "script-src 'self' 'nonce-",
        "'wasm-unsafe-eval'",
        "frame-ancestors 'none'",
        "object-src 'none'",
        "base-uri 'none'",
    ] {
        assert!(
            csp.contains(directive),
            "{what}: CSP lacks {directive}: {csp}"
        );
    }
    assert_eq!(header("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(header("referrer-policy"), "no-referrer", "{what}");
}

#[tokio::test]
async fn a_rebound_host_name_gets_421_and_reads_nothing() {
    let (_dir, server) = site().await;
    let client = Client::new();
    for path in [
        "/",
        "/api/conversations",
        "/api/models",
        "/healthz",
        "/pkg/glassbox.js",
    ] {
        let response = client
            .get(format!("{}{path}", server.base))
            .header(header::HOST, "attacker.example:80")
            .send()
            .await
            .expect("GET");
        assert_security_headers(&response, path);
        let (status, body) = json_of(response).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (421, Some("unknown_host")),
            "{path}"
        );
    }
    for host in [
        "localhost",
        "127.0.0.1",
        "app.localhost",
        "chat.example.com",
        "CHAT.example.com:443",
    ] {
        let response = client
            .get(format!("{}/api/models", server.base))
            .header(header::HOST, host)
            .send()
            .await
            .expect("GET");
        assert_eq!(response.status(), 200, "{host}");
    }
}

#[tokio::test]
async fn writes_from_another_origin_are_refused_and_bodies_must_be_json() {
    let (_dir, server) = site().await;
    let client = Client::new();
    let cancel = format!("{}/api/runs/run_x/cancel", server.base);
    let refused = [
        ("origin", "http://attacker.example".to_owned()),
        ("origin", "null".to_owned()),
        ("origin", "http://127.0.0.1:1".to_owned()),
        ("sec-fetch-site", "cross-site".to_owned()),
        ("sec-fetch-site", "same-site".to_owned()),
    ];
    for (name, value) in refused {
        let answer = post_cancel(&client, &cancel, name, &value, None).await;
        assert_eq!(
            answer,
            (403, Some("cross_origin".into())),
            "{name}: {value}"
        );
    }
    // A text/plain body is what a cross-site page can send without asking first.
    let answer = post_cancel(&client, &cancel, "x-none", "", Some("text/plain")).await;
    assert_eq!(answer.0, 415);
    // Our own pages, and clients that are not browsers, reach the handler (no such run: 404).
    let own = [
        ("origin", format!("http://{}", server.address)),
        ("sec-fetch-site", "same-origin".to_owned()),
        ("x-none", String::new()),
    ];
    for (name, value) in own {
        let answer = post_cancel(&client, &cancel, name, &value, Some("application/json")).await;
        assert_eq!(answer, (404, Some("not_found".into())), "{name}: {value}");
    }
}

#[tokio::test]
async fn every_answer_carries_the_headers_and_every_error_is_json() {
    let (_dir, server) = site().await;
    let client = Client::new();
    let get = |path: &str| client.get(format!("{}{path}", server.base));

    // A page: the CSP names the nonce its inline scripts carry.
    let page = get("/")
        .header(header::ACCEPT, "text/html")
        .send()
        .await
        .expect("GET /");
    assert_eq!(page.status(), 200);
    assert_security_headers(&page, "page");
    let csp = page.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .expect("CSP")
        .to_owned();
    let html = page.text().await.expect("HTML");
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("a nonce");
    assert!(
        html.contains(&format!("<script type=\"module\" nonce=\"{nonce}\">")),
        "{html}"
    );
    let second = get("/").send().await.expect("GET /");
    assert!(
        !second.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .expect("CSP")
            .contains(nonce),
        "a new nonce per request"
    );

    for (path, status, code) in [
        ("/api/models", 200, None),
        ("/api/nope", 404, Some("not_found")),
        (
            "/api/traces/trace_nope/inspector.json",
            404,
            Some("not_found"),
        ),
        ("/pkg/missing.js", 404, Some("not_found")),
        ("/no/such/page", 404, Some("not_found")),
    ] {
        let response = get(path).send().await.expect("GET");
        assert_security_headers(&response, path);
        let (got, body) = json_of(response).await;
        assert_eq!(
            (got, body["code"].as_str()),
            (status, code),
            "{path}: {body}"
        );
    }
    // A browser navigating to an unknown page keeps the HTML page with its way back.
    let page = get("/no/such/page")
        .header(header::ACCEPT, "text/html")
        .send()
        .await
        .expect("GET");
    assert_eq!(page.status(), 404);
    assert!(page.text().await.expect("HTML").contains("<html"));

    let response = client
        .delete(format!("{}/api/chat", server.base))
        .send()
        .await
        .expect("DELETE");
    assert_security_headers(&response, "405");
    let (status, body) = json_of(response).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (405, Some("method_not_allowed")),
        "{body}"
    );
}

/// The reported attack: with a `.env` in the workspace, asking about the key streamed it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_never_read_list_or_search_secret_files() {
    let dir = test_dir();
    let workspace = dir.path().join("workspace");
    let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    std::fs::write(workspace.join(".env"), format!("OPENAI_API_KEY={secret}\n")).expect(".env");
    std::fs::create_dir_all(workspace.join("keys")).expect("keys");
    std::fs::write(
        workspace.join("keys/server.pem"),
        format!("OPENAI_API_KEY {secret}\n"),
    )
    .expect("pem");
    std::os::unix::fs::symlink(workspace.join(".env"), workspace.join("innocent.txt"))
        .expect("symlink");
    let server = TestServer::start_in(dir).await;
    server.scenario(
        "reader",
        serde_json::json!({"delta_interval_ms": 0, "steps": [
            {"tool_calls": [
                {"name": "read_file", "args": {"path": ".env"}},
                {"name": "read_file", "args": {"path": "keys/server.pem"}},
                {"name": "read_file", "args": {"path": "innocent.txt"}},
                {"name": "list_dir", "args": {"path": "."}},
                {"name": "grep_search", "args": {"query": "OPENAI_API_KEY"}}
            ]},
            {"text": "done"}
        ]}),
    );
    for model in ["scenario:reader", "demo"] {
        let events = server
            .chat_stream(model, "What is OPENAI_API_KEY?")
            .await
            .collect()
            .await;
        let text = serde_json::to_string(&events).expect("JSON");
        assert!(
            !text.contains(secret),
            "{model}: the key was streamed: {text}"
        );
        if model == "scenario:reader" {
            let results: Vec<String> = events
                .iter()
                .filter(|event| is_type(event, "tool_result"))
                .map(|event| serde_json::to_string(event).expect("JSON"))
                .collect();
            let denied = results
                .iter()
                .filter(|result| result.contains(r#""kind":"denied""#))
                .count();
            assert_eq!(denied, 3, "the three reads are refused: {results:?}");
            // A refused read is a tool error; status `denied` is only for approval and policy.
            let refused_as_errors = results
                .iter()
                .filter(|result| result.contains(r#""kind":"denied""#))
                .all(|result| result.contains(r#""status":"error""#));
            assert!(refused_as_errors, "{results:?}");
            let listing = results
                .iter()
                .find(|result| result.contains("entries)"))
                .expect("list_dir");
            assert!(
                !listing.contains(".env") && !listing.contains(".pem"),
                "{listing}"
            );
        }
    }
}

/// The usual secret files, whatever their case: every read is refused, a listing hides them and a
/// search finds nothing in them. Their contents have no credential shape, so only the deny list
/// can keep them out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_usual_secret_files_are_denied_in_any_case() {
    const FILES: &[&str] = &[
        ".env",
        ".ENV",
        ".env.local",
        ".env-production",
        ".envrc",
        "prod.env",
        ".bash_history",
        ".zsh_history",
        ".vault-token",
        "terraform.tfstate",
        "infra/terraform.tfstate.backup",
        ".config/gcloud/credentials.db",
        ".config/gh/hosts.yml",
        ".cargo/credentials.toml",
        ".cargo/credentials",
        ".streamlit/secrets.toml",
        "secrets.yaml",
        "deploy/Secrets.JSON",
        "ID_RSA",
        ".ssh/config",
        ".aws/credentials",
        ".npmrc",
        ".git-credentials",
        "certs/server.PEM",
        ".docker/config.json",
    ];
    let dir = test_dir();
    let workspace = dir.path().join("workspace");
    for (n, file) in FILES.iter().enumerate() {
        let path = workspace.join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("folder");
        std::fs::write(&path, format!("leak-marker-{n} in {file}\n")).expect("write");
    }
    let server = TestServer::start_in(dir).await;
    let mut calls: Vec<serde_json::Value> = FILES
        .iter()
        .map(|file| serde_json::json!({"name": "read_file", "args": {"path": file}}))
        .collect();
    for folder in [".", ".config", ".cargo", ".streamlit", "deploy", "infra"] {
        calls.push(serde_json::json!({"name": "list_dir", "args": {"path": folder}}));
    }
    calls.push(serde_json::json!({"name": "grep_search", "args": {"query": "leak-marker"}}));
    server.scenario(
        "reader",
        serde_json::json!({"delta_interval_ms": 0, "steps": [{"tool_calls": calls}, {"text": "done"}]}),
    );
    let events = server
        .chat_stream("scenario:reader", "read them all")
        .await
        .collect()
        .await;
    // The calls run at once: results come in any order, and are paired with their call by id.
    let mut reads = std::collections::HashMap::new();
    let mut results = 0;
    let mut read = Vec::new();
    for event in &events {
        match &event.kind {
            app::protocol::EventKind::ToolCallStarted {
                call_id,
                name,
                args,
                ..
            } if name == "read_file" => {
                reads.insert(call_id.clone(), args["path"].clone());
            }
            app::protocol::EventKind::ToolResult { call_id, error, .. } => {
                results += 1;
                if let Some(file) = reads.get(call_id) {
                    if error.as_ref().map(|error| error.kind.as_str()) != Some("denied") {
                        read.push(file.clone());
                    }
                }
            }
            _ => {}
        }
    }
    assert_eq!((reads.len(), results), (FILES.len(), FILES.len() + 7));
    assert!(
        read.is_empty(),
        "{} of {} read: {read:?}",
        read.len(),
        FILES.len()
    );
    let text = serde_json::to_string(&events).expect("JSON");
    assert!(
        !text.contains("leak-marker-"),
        "a secret file was read: {text}"
    );
    // A listing is a header line, then one entry a line.
    for name in [
        "secrets.yaml",
        "prod.env",
        ".envrc",
        "credentials.toml",
        "Secrets.JSON",
        "gcloud/",
        "gh/",
        "secrets.toml",
        "terraform.tfstate.backup",
    ] {
        assert!(
            !text.contains(&format!("\\n{name}")),
            "{name} was listed: {text}"
        );
    }
    assert!(text.contains("\\nnotes.md"), "the rest is listed: {text}");
    server.stop().await;
}

/// Key-shaped values in the usual configuration forms are redacted in what a tool returns (YAML,
/// JSON, TOML, INI, an `export`), and in stored malformed arguments with single-quoted and bare
/// keys and names such as `auth` and `credentials`. Code and ordinary settings stay as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_shaped_values_are_redacted_in_config_forms_and_malformed_arguments() {
    let dir = test_dir();
    let workspace = dir.path().join("workspace");
    std::fs::write(
        workspace.join("app.yaml"),
        "db:\n  host: db.internal\n  password: yaml-pass-001\n  api_key: \"yaml-key-002\"\n",
    )
    .expect("yaml");
    std::fs::write(
        workspace.join("settings.json"),
        r#"{"name": "app", "apiKey": "json-key-003", "clientSecret": "json-secret-004", "author": "Ada"}"#,
    )
    .expect("json");
    std::fs::write(
        workspace.join("app.toml"),
        "[service]\nport = 8080\ntoken = \"toml-token-005\"\nauth_token = 'toml-token-006'\n",
    )
    .expect("toml");
    std::fs::write(
        workspace.join("app.ini"),
        "[database]\nuser = app\npassword = ini-pass-007\naws_secret_access_key=ini-key-008\n\
         export DEPLOY_TOKEN=\"sh-token-009\"\n",
    )
    .expect("ini");
    std::fs::write(
        workspace.join("code.rs"),
        "struct Login {\n    password: String,\n}\nlet token = next_token();\n",
    )
    .expect("code");
    let server = TestServer::start_in(dir).await;
    let raw = "{'path': 'app.yaml', 'password': 'raw-pass-010', auth: raw-auth-011, \
               \"credentials\": \"raw-cred-012\", 'apiKey': \"raw-key-013\"";
    let mut calls: Vec<serde_json::Value> = [
        "app.yaml",
        "settings.json",
        "app.toml",
        "app.ini",
        "code.rs",
    ]
    .iter()
    .map(|file| serde_json::json!({"name": "read_file", "args": {"path": file}}))
    .collect();
    calls.push(serde_json::json!({"name": "read_file", "args": {"_raw": raw}}));
    server.scenario(
        "config",
        serde_json::json!({"delta_interval_ms": 0, "steps": [{"tool_calls": calls}, {"text": "done"}]}),
    );
    let events = server
        .chat_stream("scenario:config", "read the settings")
        .await
        .collect()
        .await;
    let text = serde_json::to_string(&events).expect("JSON");
    // Each secret's last word and number (`pass-010` of `raw-pass-010`): the bare number could be
    // part of a random UUID (`…-410a-873f-0102…`), which is not a secret.
    let secrets = [
        "pass", "key", "key", "secret", "token", "token", "pass", "key", "token", "pass", "auth",
        "cred", "key",
    ];
    for (n, word) in (1..).zip(secrets) {
        let marker = format!("{word}-{n:03}");
        assert!(
            !text.contains(&marker),
            "value {marker} was not redacted: {text}"
        );
    }
    for kept in [
        "host: db.internal",
        "\\\"author\\\": \\\"Ada\\\"",
        "port = 8080",
        "user = app",
        "password: String,",
        "let token = next_token();",
    ] {
        assert!(text.contains(kept), "{kept} was changed: {text}");
    }
    server.stop().await;
}
