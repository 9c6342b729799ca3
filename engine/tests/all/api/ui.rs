//! The web UI served by the binary: `index.html` at `/`, hashed assets under `/assets/` with
//! long caching, a content security policy; nothing else of the file system, and JSON 404s
//! for everything else.

use crate::server;

use server::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_is_served_from_the_binary() {
    let server = TestServer::start(|_| {}).await;
    let http = reqwest::Client::new();
    let index = http.get(format!("{}/", server.url)).send().await.unwrap();
    assert_eq!(index.status(), 200);
    let headers = index.headers().clone();
    assert!(headers["content-type"].to_str().unwrap().starts_with("text/html"), "{headers:?}");
    assert_eq!(headers["cache-control"], "no-cache");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let html = index.text().await.unwrap();
    // Every asset the page names is served, with the right type and long caching.
    let assets: Vec<&str> = html
        .split('"')
        .filter(|s| s.starts_with("/assets/"))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(assets.iter().any(|a| a.ends_with(".js")), "no script in {html}");
    for asset in &assets {
        let response = http.get(format!("{}{asset}", server.url)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{asset}");
        let kind = response.headers()["content-type"].to_str().unwrap().to_string();
        if asset.ends_with(".js") {
            assert!(kind.contains("javascript"), "{asset}: {kind}");
        } else if asset.ends_with(".css") {
            assert!(kind.starts_with("text/css"), "{asset}: {kind}");
        }
        assert_eq!(response.headers()["cache-control"], "public, max-age=31536000, immutable");
        assert!(!response.bytes().await.unwrap().is_empty(), "{asset} is empty");
    }
    assert!(weir::api::ui::files().iter().any(|f| f == "index.html"));

    // Nothing but the UI's files: other paths are the API's JSON 404, whatever they look like.
    for path in ["/nope", "/assets/nope.js", "/assets/../weir.redb", "/weir.redb", "/modules", "/api/v1/nope"]
    {
        let response = http.get(format!("{}{path}", server.url)).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert!(body["error"].as_str().unwrap().contains("no route"), "{path}: {body}");
    }
    let response = http.post(format!("{}/", server.url)).send().await.unwrap();
    assert_eq!(response.status(), 404);
}
