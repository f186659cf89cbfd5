//! report.html in a real browser (Debian's chromium, headless): it renders, its DOM holds the
//! timeline's phase marks, and the page logs no console error. scripts/test installs chromium;
//! a missing browser is a failure. The screenshot goes to a temporary directory, not to git.

use std::process::Command;

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
