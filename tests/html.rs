//! report.html in a real browser (Debian's chromium, headless): it renders, its DOM holds the
//! timeline's phase marks, and the page logs no console error. scripts/test installs chromium;
//! a missing browser is a failure. The screenshot goes to a temporary directory, not to git.

use std::process::Command;

/// Nothing the browser resolves leaves this machine (its own update checks included).
const NO_NETWORK: &str = "--host-resolver-rules=MAP * ~NOTFOUND";

/// The URLs a page itself asked for (not the browser's own background requests), from
/// chromium's net log: requests whose network isolation key is the page's file:// origin.
fn page_requests(html: &std::path::Path) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("net.json");
    let out = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", NO_NETWORK])
        .arg(format!("--log-net-log={}", log.display()))
        .args(["--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap_or_else(|e| panic!("chromium ({e}); run scripts/test to install it"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let net: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&log).expect("a net log")).unwrap();
    let start_job = net["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_i64()
        .expect("URL_REQUEST_START_JOB in the net log's constants");
    net["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_i64() == Some(start_job))
        .filter(|e| {
            e["params"]["network_isolation_key"]
                .as_str()
                .is_some_and(|k| k.starts_with("file://"))
        })
        .filter_map(|e| e["params"]["url"].as_str().map(String::from))
        .filter(|u| !u.starts_with("file:") && !u.starts_with("data:"))
        .collect()
}

/// report.html is self-contained: loading it in a browser makes no request beyond the file
/// itself. The same check on a page with one remote image finds that image (so it can fail).
#[test]
fn report_html_makes_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "report",
            "--format",
            "html",
            "--output-file",
            "-",
            "tests/fixtures/runs/attach-detach",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stdout.starts_with(b"<!DOCTYPE html>"),
        "the page on stdout"
    );
    std::fs::write(&html, &out.stdout).unwrap();
    assert_eq!(page_requests(&html), Vec::<String>::new());

    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><img src=\"http://192.0.2.1/x.png\"></body></html>",
    )
    .unwrap();
    assert_eq!(
        page_requests(&bad),
        vec!["http://192.0.2.1/x.png".to_string()]
    );
}

fn chromium() -> String {
    std::env::var("NODEDOWN_CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

#[test]
fn report_html_renders_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "report",
            "--format",
            "html",
            "--output-file",
            "-",
            "tests/fixtures/runs/network-partition",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    std::fs::write(&html, &out.stdout).unwrap();
    let url = format!("file://{}", html.display());
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--enable-logging=stderr",
        "--v=0",
        NO_NETWORK,
    ];

    let dom = Command::new(chromium())
        .args(common)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap_or_else(|e| panic!("chromium ({e}); run scripts/test to install it"));
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let text = String::from_utf8_lossy(&dom.stdout);
    assert!(text.contains("<svg"), "the timeline is in the DOM");
    let marks = text.matches(r#"class="phase""#).count();
    assert!(marks >= 10, "phase marks rendered: {marks}");
    assert!(text.contains(r#"data-phase="replacement-ready""#));
    // Where the time went: a stacked bar per recovered run, each part named in the picture.
    assert!(
        text.matches(r#"class="segment""#).count() >= 6,
        "the breakdown's segments rendered"
    );
    assert!(text.contains(r#"data-segment="detection""#));
    assert!(
        text.contains(">detection "),
        "a segment's name written in the bar"
    );
    // What happened is written, not hovered: the split brain beside the green pass, the
    // milestones named under each run, a legend of the phases there.
    assert!(
        text.contains("split brain: 2 writers (as expected)"),
        "the outcome beside the verdict"
    );
    assert!(
        text.contains(">as expected: split brain</text>"),
        "under the run's name"
    );
    assert!(text.matches(r#"class="milestone""#).count() >= 8);
    assert!(text.contains(">Ready 27.7s</text>"));
    assert!(text.contains(r#"class="legend""#));
    let log = String::from_utf8_lossy(&dom.stderr);
    assert!(
        !log.contains(":CONSOLE(") && !log.contains("Uncaught"),
        "no console errors: {log}"
    );

    let shot = dir.path().join("report.png");
    let png = Command::new(chromium())
        .args(common)
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1100,1400")
        .arg(&url)
        .output()
        .unwrap();
    assert!(png.status.success());
    let bytes = std::fs::read(&shot).expect("a screenshot");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
        "a real picture"
    );
}

/// The Markdown summary's Mermaid gantt, rendered by Mermaid itself (the npm package
/// GitHub-flavoured Markdown uses; scripts/test fetches it) in headless chromium: it parses,
/// draws a gantt, and draws one milestone per phase of the first run of each variant.
#[test]
fn summary_gantt_renders_with_mermaid_in_headless_chromium() {
    let mermaid = std::env::var("NODEDOWN_MERMAID")
        .unwrap_or_else(|_| "/var/cache/nodedown/mermaid-11.17.2/mermaid.min.js".into());
    assert!(
        std::path::Path::new(&mermaid).is_file(),
        "{mermaid} missing: run scripts/test (it fetches mermaid from npm)"
    );
    let fixture = "tests/fixtures/runs/attach-detach";
    let out = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["report", "--format", "markdown", fixture])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let md = String::from_utf8(out.stdout).unwrap();
    let blocks: Vec<&str> = md
        .split("```mermaid\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("```").unwrap()])
        .collect();
    assert_eq!(blocks.len(), 2, "the phases and where the time went");
    let block = blocks[0];
    let milestones = block.matches(":milestone,").count();
    let text = render_mermaid(&mermaid, block);
    let drawn = text.matches(r#"class="task milestone"#).count();
    assert_eq!(drawn, milestones, "one drawn milestone per phase");
    assert!(milestones >= 20, "{milestones}");
    // Where the time went: one task per segment, drawn one after the other (a stacked bar).
    let segments = blocks[1].lines().filter(|l| l.contains("ms")).count();
    assert!(segments >= 10, "{}", blocks[1]);
    let text = render_mermaid(&mermaid, blocks[1]);
    let tasks = text.matches(r#"class="task "#).count() + text.matches(r#"class="task""#).count();
    assert_eq!(tasks, segments, "one drawn task per segment");
    assert!(text.contains("pod-deletion"), "segments named");
}

/// `block` rendered by Mermaid in headless chromium: the DOM, once Mermaid says it is done.
fn render_mermaid(mermaid: &str, block: &str) -> String {
    let escaped = block
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("gantt.html");
    std::fs::write(
        &page,
        format!(
            "<!doctype html><html><body><pre class=\"mermaid\">{escaped}</pre>\
             <script src=\"file://{mermaid}\"></script><script>\
             mermaid.initialize({{startOnLoad:false}});\
             mermaid.run().then(()=>document.body.setAttribute('data-done','ok'))\
             .catch(e=>document.body.setAttribute('data-done','error: '+e));</script></body></html>"
        ),
    )
    .unwrap();
    let dom = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            NO_NETWORK,
            "--allow-file-access-from-files",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| panic!("chromium ({e}); run scripts/test to install it"));
    let text = String::from_utf8_lossy(&dom.stdout).into_owned();
    assert!(
        text.contains(r#"data-done="ok""#),
        "mermaid rendered it: {}",
        &text[..text.len().min(2000)]
    );
    assert!(text.contains(r#"aria-roledescription="gantt""#));
    assert!(!text.contains("Syntax error"));
    text
}
