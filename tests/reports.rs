//! What people read never hides a failure: the recorded node-shutdown invocation with its
//! taint run's bounds tightened (a copy made here: `timeToReady ≤ 20s`, `writeOutage ≤ 15s`,
//! the recorded run took 25.7 s and 26.7 s), and the storage-fence-lifted recording whose run
//! lost 39 acknowledged writes in a split brain. Through the binary, as a user runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn nodedown() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nodedown"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env_remove("COLUMNS");
    c
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// The recorded node-shutdown invocation, its taint run expecting Ready within 20 s and the
/// writes back within 15 s.
fn tightened(tmp: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/node-shutdown");
    let dir = tmp.join("tight");
    copy_dir(&root, &dir);
    std::fs::remove_file(dir.join("results.json")).unwrap();
    let run = dir.join("node-shutdown/out-of-service-taint/1/run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    v["expect"]["timeToReady"] = serde_json::json!({"max": "20s"});
    v["expect"]["writeOutage"] = serde_json::json!({"max": "15s"});
    std::fs::write(&run, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    dir
}

fn stdout(c: &mut Command) -> (Option<i32>, String) {
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_failed_bound_is_never_read_as_expected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tightened(tmp.path());
    // The table at 100 columns: every line fits, the row names the bound, the run is written
    // out whole below with what to do next.
    let (code, table) = stdout(nodedown().arg("report").arg(&dir).env("COLUMNS", "100"));
    assert_eq!(code, Some(0), "rendering alone exits 0");
    for l in table.lines() {
        assert!(l.chars().count() <= 100, "{} chars: {l}", l.chars().count());
    }
    assert!(
        table.contains("time-to-ready 25.7s > 20s; write-outage 26.7s > 15s"),
        "{table}"
    );
    assert!(
        table.contains("  next: a bound was missed once: rerun `nodedown run"),
        "{table}"
    );
    let words = table.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(
            "nodedown run experiments/node-shutdown.yaml --only out-of-service-taint --repeat 5"
        ),
        "{table}"
    );
    // --fail-on as on `run`.
    let (code, _) = stdout(
        nodedown()
            .arg("report")
            .arg(&dir)
            .args(["--fail-on", "fail"]),
    );
    assert_eq!(code, Some(1));
    // Every view: the failed parts first, never "(as expected)" on them.
    for format in ["markdown", "html", "junit", "json"] {
        let (code, text) =
            stdout(
                nodedown()
                    .arg("report")
                    .arg(&dir)
                    .args(["-o", format, "--output-file", "-"]),
            );
        assert_eq!(code, Some(0), "{format}");
        assert!(
            text.contains(
                "recovered in 25.7s (expected ≤ 20s) · write outage 26.7s (expected ≤ 15s)"
            ),
            "{format}: {text}"
        );
        assert!(
            !text.contains("recovered in 25.7s (as expected)"),
            "{format}"
        );
    }
    let (_, md) = stdout(nodedown().arg("report").arg(&dir).args(["-o", "markdown"]));
    assert!(
        md.starts_with("## ❌ nodedown: node-shutdown — 1 of 2 failed\n"),
        "{md}"
    );
    assert!(
        md.contains("> ❌ **1 of 2 failed: node-shutdown/out-of-service-taint/1 — time-to-ready 25.7s > 20s; write-outage 26.7s > 15s**"),
        "{md}"
    );
    assert!(md.contains("  - ➡️ next: a bound was missed once"), "{md}");
    let (_, html) =
        stdout(
            nodedown()
                .arg("report")
                .arg(&dir)
                .args(["-o", "html", "--output-file", "-"]),
        );
    assert!(html.contains("<title>nodedown: node-shutdown — 1 of 2 failed</title>"));
    assert!(html.contains(
        r#"<div class="failures"><p><b>1 of 2 failed: node-shutdown/out-of-service-taint/1"#
    ));
    assert!(html.contains(r#"<p class="next">next: a bound was missed once"#));
    // `-o` is the format: a file name is refused, not written to.
    let out = nodedown()
        .arg("report")
        .arg(&dir)
        .args(["-o", "report.html"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("report.html")
        .exists());
}

#[test]
fn lost_writes_are_never_merged_into_a_split_brain() {
    let dir = "tests/fixtures/runs/storage-fence-lifted";
    let (_, table) = stdout(nodedown().args(["report", dir]).env("COLUMNS", "100"));
    assert!(table.contains("39 lost + split brain"), "{table}");
    assert!(
        table.contains("data: 1 lost writes, 1 split brain"),
        "{table}"
    );
    let (_, md) = stdout(nodedown().args(["report", dir, "-o", "markdown"]));
    assert!(
        md.contains("39 of 575 acknowledged writes lost + split brain: 2 writers (as expected)"),
        "{md}"
    );
    let (_, prom) = stdout(nodedown().args(["report", dir, "-o", "prometheus"]));
    let sample = |data: &str| {
        prom.lines()
            .find(|l| {
                l.starts_with("nodedown_run_data{") && l.contains(&format!("data=\"{data}\""))
            })
            .unwrap_or_else(|| panic!("no {data} series in {prom}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(sample("lost-writes"), "1");
    assert_eq!(sample("split-brain"), "1");
    assert_eq!(sample("intact"), "0");
    assert!(prom.contains("nodedown_run_lost_acknowledged_writes{"));
    // The page shows the two writers as a table, and the integrity summary once.
    let (_, html) = stdout(nodedown().args(["report", dir, "-o", "html", "--output-file", "-"]));
    assert!(html.contains("<th>writer</th>"), "{html}");
    assert_eq!(html.matches("<tr><td>1</td><td>ledger-0 (").count(), 1);
    assert_eq!(html.matches("<tr><td>2</td><td>ledger-0 (").count(), 1);
    assert_eq!(
        html.matches("39 acknowledged writes lost: seqs 47..=85")
            .count(),
        1,
        "the checker's summary once, above its evidence (it was four times)"
    );
}

/// `nodedown history` over three invocations of one experiment (the recording, the
/// tightened copy, the recording again): the taint variant's verdicts the latest first.
#[test]
fn history_over_three_invocations() {
    let tmp = tempfile::tempdir().unwrap();
    let tight = tightened(tmp.path());
    let rec = "tests/fixtures/runs/node-shutdown";
    let (code, table) = stdout(nodedown().arg("history").arg(rec).arg(&tight).arg(rec));
    assert_eq!(code, Some(0), "{table}");
    // Same start times: the order given, the last given latest.
    let line = table
        .lines()
        .find(|l| l.starts_with("node-shutdown/out-of-service-taint"))
        .unwrap();
    assert!(line.contains("✓✗✓"), "{line}");
    assert!(
        table.starts_with("2 variants over 3 invocations"),
        "{table}"
    );
    let (code, _) = stdout(nodedown().args(["history", "Cargo.toml"]));
    assert_eq!(code, Some(2));
}

/// Grafana's annotation API, played by a local HTTP server (no Grafana can be had here): the
/// body of each request checked against Grafana's documented `POST /api/annotations` — JSON
/// with `time` and optional `timeEnd` in epoch ms, `tags`, `text`, optional `dashboardUID`,
/// nothing else — and the service account token as a bearer token. A refused annotation is a
/// failed report (exit 3) in Grafana's own words.
#[test]
fn grafana_gets_a_region_per_run_and_its_key_phases() {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    let seen = std::thread::spawn(move || {
        let mut seen = Vec::new();
        // Until the report is done: the first request within 20 s, the next ones close behind.
        let mut wait = std::time::Duration::from_secs(20);
        while let Ok(Some(mut req)) = server.recv_timeout(wait) {
            wait = std::time::Duration::from_secs(2);
            let mut body = String::new();
            req.as_reader().read_to_string(&mut body).unwrap();
            let auth = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Authorization"))
                .map(|h| h.value.to_string());
            let json = req.headers().iter().any(|h| {
                h.field.equiv("Content-Type") && h.value.as_str().starts_with("application/json")
            });
            seen.push((
                req.method().to_string(),
                req.url().to_string(),
                auth,
                json,
                body,
            ));
            req.respond(tiny_http::Response::from_string(
                r#"{"message":"Annotation added","id":1}"#,
            ))
            .unwrap();
        }
        seen
    });
    let out = nodedown()
        .args(["report", "tests/fixtures/runs/node-shutdown", "-o", "json"])
        .args(["--grafana-url", &format!("http://127.0.0.1:{port}/")])
        .args(["--grafana-dashboard", "nd-dash"])
        .env("NODEDOWN_GRAFANA_TOKEN", "glsa_test")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = seen.join().unwrap();
    // Two runs: two regions; the none run's NotReady; the taint run's NotReady, taint, Ready.
    let bodies: Vec<serde_json::Value> = seen
        .iter()
        .map(|(method, url, auth, json, body)| {
            assert_eq!(
                (method.as_str(), url.as_str()),
                ("POST", "/api/annotations")
            );
            assert_eq!(auth.as_deref(), Some("Bearer glsa_test"));
            assert!(json);
            serde_json::from_str(body).unwrap()
        })
        .collect();
    for b in &bodies {
        let o = b.as_object().unwrap();
        for k in o.keys() {
            assert!(
                ["dashboardUID", "time", "timeEnd", "tags", "text"].contains(&k.as_str()),
                "{k} is not a field of Grafana's annotation API"
            );
        }
        assert_eq!(o["dashboardUID"], "nd-dash");
        assert!(o["time"].as_i64().unwrap() > 1_700_000_000_000, "epoch ms");
        assert!(o["tags"].as_array().unwrap().contains(&"nodedown".into()));
    }
    let regions: Vec<&serde_json::Value> = bodies
        .iter()
        .filter(|b| b.get("timeEnd").is_some())
        .collect();
    assert_eq!(regions.len(), 2, "{bodies:?}");
    let taint = regions
        .iter()
        .find(|b| {
            b["text"]
                .as_str()
                .unwrap()
                .contains("out-of-service-taint/1")
        })
        .unwrap();
    assert_eq!(
        taint["timeEnd"].as_i64().unwrap() - taint["time"].as_i64().unwrap(),
        25_735
    );
    assert!(bodies.iter().any(|b| b["tags"]
        .as_array()
        .unwrap()
        .contains(&"phase:replacement-ready".into())));

    // A Grafana that refuses: exit 3, its words.
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    let t = std::thread::spawn(move || {
        if let Ok(Some(req)) = server.recv_timeout(std::time::Duration::from_secs(20)) {
            req.respond(
                tiny_http::Response::from_string(r#"{"message":"Unauthorized"}"#)
                    .with_status_code(401),
            )
            .unwrap();
        }
    });
    let out = nodedown()
        .args(["report", "tests/fixtures/runs/node-shutdown", "-o", "json"])
        .args(["--grafana-url", &format!("http://127.0.0.1:{port}")])
        .output()
        .unwrap();
    t.join().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("401"));
    // Not a URL: bad input before anything.
    let out = nodedown()
        .args(["report", "tests/fixtures/runs/node-shutdown"])
        .args(["--grafana-url", "grafana:3000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
