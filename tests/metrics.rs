//! `nodedown report --format prometheus` on the recorded run directories (real runs, see
//! tests/fixtures/runs/README.md): the text is what Prometheus's own checker accepts (promtool,
//! built from github.com/prometheus/prometheus by scripts/test), every family is well formed by a
//! reader written here from the exposition format's rules, and the values are the ones
//! results.json holds — read from the JSON, not from the code that renders them.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(name)
}

fn metrics_of(dir: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .args(["report", "--format", "prometheus"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One sample: its name, labels and value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Reads the text format: `# HELP`/`# TYPE` once per family before its samples, samples of a
/// family together, names `[a-zA-Z_:][a-zA-Z0-9_:]*`, label values quoted with `\\`, `\"`
/// and `\n` escapes, no series twice.
fn parse(text: &str) -> Vec<Sample> {
    let valid_name = |n: &str| {
        let mut c = n.chars();
        c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
            && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
    };
    let mut samples = Vec::new();
    let mut declared: Vec<String> = Vec::new();
    let mut typed: HashSet<String> = HashSet::new();
    let mut series: HashSet<String> = HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap().to_string();
            assert!(!declared.contains(&name), "family {name} declared twice");
            declared.push(name);
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert_eq!(Some(name), declared.last().map(String::as_str), "{line}");
            assert!(
                ["gauge", "counter", "histogram", "summary", "untyped"].contains(&kind),
                "{line}"
            );
            typed.insert(name.to_string());
            continue;
        }
        assert!(
            !line.starts_with('#') && !line.is_empty(),
            "stray line {line:?}"
        );
        let (name, rest) = match line.find('{') {
            Some(i) => (&line[..i], &line[i..]),
            None => line.split_at(line.find(' ').unwrap()),
        };
        assert!(valid_name(name), "{name}");
        assert_eq!(
            Some(name),
            declared.last().map(String::as_str),
            "a sample of another family than the last declared: {line}"
        );
        assert!(typed.contains(name), "{name} has no TYPE");
        let mut labels = BTreeMap::new();
        let mut value_text = rest.trim();
        if let Some(body) = rest.strip_prefix('{') {
            let mut chars = body.char_indices();
            loop {
                let (start, c) = chars.next().unwrap();
                if c == '}' {
                    value_text = body[start + 1..].trim();
                    break;
                }
                let eq = body[start..].find('=').unwrap() + start;
                let key = &body[start..eq];
                assert!(valid_name(key), "label {key}");
                while chars.next().unwrap().1 != '"' {}
                let mut value = String::new();
                loop {
                    match chars.next().unwrap().1 {
                        '\\' => match chars.next().unwrap().1 {
                            'n' => value.push('\n'),
                            c @ ('\\' | '"') => value.push(c),
                            c => panic!("bad escape \\{c} in {line}"),
                        },
                        '"' => break,
                        '\n' => panic!("raw newline"),
                        c => value.push(c),
                    }
                }
                assert!(labels.insert(key.to_string(), value).is_none(), "{line}");
                let (_, next) = chars.clone().next().unwrap();
                if next == ',' {
                    chars.next();
                }
            }
        }
        let value: f64 = value_text.parse().unwrap_or_else(|_| panic!("{line}"));
        assert!(
            series.insert(format!("{name}{labels:?}")),
            "series twice: {line}"
        );
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    samples
}

/// The value of `name` for the run `variant` (and `extra` labels), if there is such a series.
fn value(samples: &[Sample], name: &str, variant: &str, extra: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && s.labels.get("variant").map(String::as_str) == Some(variant)
                && extra
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
}

fn results(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

#[test]
fn every_recorded_runs_metrics_are_well_formed_and_say_what_results_json_says() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixture(""))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("run.json").exists() || p.join("order.txt").exists())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 5, "{dirs:?}");
    for dir in dirs {
        let text = metrics_of(&dir);
        let samples = parse(&text);
        let json = results(&dir);
        for exp in json["experiments"].as_array().unwrap() {
            for run in exp["runs"].as_array().unwrap() {
                let variant = run["variant"].as_str().unwrap();
                let rep = run["repetition"].to_string();
                let at = [("repetition", rep.as_str())];
                // The verdict: one state 1, the others 0.
                for v in ["pass", "fail", "unknown"] {
                    let want = if run["verdict"] == v { 1.0 } else { 0.0 };
                    let mut l = at.to_vec();
                    l.push(("verdict", v));
                    assert_eq!(
                        value(&samples, "nodedown_run_verdict", variant, &l),
                        Some(want),
                        "{} {variant} {v}",
                        dir.display()
                    );
                }
                // Each metric results.json holds, in seconds; none it does not hold.
                let metrics = run["metrics"].as_object().unwrap();
                for m in [
                    "time-to-not-ready",
                    "time-to-remediation",
                    "time-to-delete",
                    "time-to-detach",
                    "time-to-schedule",
                    "time-to-attach",
                    "time-to-running",
                    "time-to-ready",
                ] {
                    let name = format!("nodedown_run_{}_seconds", m.replace('-', "_"));
                    assert_eq!(
                        value(&samples, &name, variant, &at),
                        metrics.get(m).map(|ms| ms.as_f64().unwrap() / 1000.0),
                        "{} {variant} {m}",
                        dir.display()
                    );
                }
                let outcome = &run["outcome"];
                let recovery = outcome["recovery"].as_str().unwrap();
                let mut l = at.to_vec();
                l.push(("recovery", recovery));
                assert_eq!(
                    value(&samples, "nodedown_run_recovery", variant, &l),
                    Some(1.0)
                );
                // Every harm its own series at 1, the others 0: none merged into another.
                match outcome["data"].as_array() {
                    Some(harms) => {
                        let harms: Vec<&str> = harms.iter().map(|d| d.as_str().unwrap()).collect();
                        for d in [
                            "intact",
                            "split-brain",
                            "lost-writes",
                            "corrupt",
                            "failed",
                            "undecided",
                        ] {
                            let mut l = at.to_vec();
                            l.push(("data", d));
                            let want = if harms.contains(&d) { 1.0 } else { 0.0 };
                            assert_eq!(
                                value(&samples, "nodedown_run_data", variant, &l),
                                Some(want),
                                "{} {variant} {d}",
                                dir.display()
                            );
                        }
                    }
                    None => assert_eq!(value(&samples, "nodedown_run_data", variant, &at), None),
                }
                assert_eq!(
                    value(&samples, "nodedown_run_write_outage_seconds", variant, &at),
                    run["writeOutage"]["durationMs"]
                        .as_f64()
                        .map(|ms| ms / 1000.0),
                    "{} {variant}",
                    dir.display()
                );
                assert_eq!(
                    value(
                        &samples,
                        "nodedown_run_lost_acknowledged_writes",
                        variant,
                        &at
                    ),
                    run["integrity"]["lostAcknowledged"].as_f64()
                );
                assert_eq!(
                    value(
                        &samples,
                        "nodedown_run_fleet_all_ready_seconds",
                        variant,
                        &at
                    ),
                    run["fleet"]["timeToAllReadyMs"]
                        .as_f64()
                        .map(|ms| ms / 1000.0)
                );
            }
        }
    }
}

/// What the recordings show, as a dashboard would read it: the unfenced taint's split brain,
/// the fence's intact data, no recovery without a remediation — and nothing standing in for a
/// number nobody observed.
#[test]
fn the_recordings_read_as_metrics() {
    let partition = parse(&metrics_of(&fixture("network-partition")));
    let data = |variant, state| value(&partition, "nodedown_run_data", variant, &[("data", state)]);
    assert_eq!(data("oos-taint-unfenced", "split-brain"), Some(1.0));
    assert_eq!(data("oos-taint-unfenced", "intact"), Some(0.0));
    assert_eq!(data("oos-taint-fenced", "intact"), Some(1.0));
    // Recorded before results carried the environment: its labels are there, empty.
    let s = partition
        .iter()
        .find(|s| s.name == "nodedown_run_verdict")
        .unwrap();
    assert_eq!(s.labels["storage_class"], "");
    assert_eq!(s.labels["experiment"], "network-partition");
    assert_eq!(s.labels["remediation"], "out-of-service-taint");
    assert_eq!(s.labels["fault"], "network-partition");

    let shutdown = parse(&metrics_of(&fixture("node-shutdown")));
    assert_eq!(
        value(
            &shutdown,
            "nodedown_run_recovery",
            "none",
            &[("recovery", "not-recovered")]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(&shutdown, "nodedown_run_time_to_ready_seconds", "none", &[]),
        None,
        "never Ready: no series, not a 0"
    );
    assert!(value(
        &shutdown,
        "nodedown_run_time_to_ready_seconds",
        "out-of-service-taint",
        &[]
    )
    .is_some_and(|s| s > 1.0));
}

/// Prometheus's own checker (`promtool check metrics`, which also lints names and units) on
/// the metrics of every recorded directory, a fleet's included.
#[test]
fn promtool_accepts_the_metrics() {
    for name in [
        "network-partition",
        "node-shutdown",
        "fleet",
        "attach-detach-lanes",
    ] {
        promtool_check(name, &metrics_of(&fixture(name)));
    }
}

/// `promtool check metrics` on `text`: exit 0, nothing said.
fn promtool_check(name: &str, text: &str) {
    let promtool = std::env::var_os("NODEDOWN_PROMTOOL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/nodedown/promtool-v0.316.0/promtool"));
    assert!(
        promtool.is_file(),
        "{} missing: scripts/test installs it (go install github.com/prometheus/prometheus/cmd/promtool@v0.316.0), or set NODEDOWN_PROMTOOL",
        promtool.display()
    );
    let mut child = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "{name}: promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[path = "support/pushgateway.rs"]
mod pushgateway;
use pushgateway::Gateway;

fn gateway() -> Gateway {
    pushgateway::start("127.0.0.1")
}

/// What the gateway exposes now (its /metrics, parsed by the reader above, its own series
/// left out).
fn exposed(g: &Gateway) -> Vec<Sample> {
    parse(&pushgateway::nodedown_families(g))
}

/// `--pushgateway`: the metrics reach a real Pushgateway (github.com/prometheus/pushgateway,
/// built by scripts/test) and are read back from it under the group's job; a second push
/// replaces the group (PUT), and a push that cannot be made is exit 3 naming the URL.
#[test]
fn a_pushgateway_receives_the_metrics_and_a_push_replaces_the_group() {
    let g = gateway();
    let push = |dir: &str, url: &str| {
        Command::new(env!("CARGO_BIN_EXE_nodedown"))
            .args(["report", "--format", "json", "--pushgateway", url])
            .arg(fixture(dir))
            .output()
            .unwrap()
    };
    let out = push("fleet", &g.url);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = results(&fixture("fleet"));
    let all_ms = json["experiments"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["variant"] == "oos-taint-10")
        .unwrap()["fleet"]["timeToAllReadyMs"]
        .as_f64()
        .unwrap();
    let seen = exposed(&g);
    let all = seen
        .iter()
        .find(|s| {
            s.name == "nodedown_run_fleet_all_ready_seconds"
                && s.labels["variant"] == "oos-taint-10"
        })
        .expect("the fleet's all-ready time in the gateway");
    assert_eq!(all.value, all_ms / 1000.0);
    assert_eq!(all.labels["job"], "nodedown", "{:?}", all.labels);

    // A second invocation's push replaces the group: the fleet's series are gone.
    let out = push("node-shutdown", &format!("{}/metrics/job/nodedown", g.url));
    assert!(out.status.success());
    let seen = exposed(&g);
    assert!(seen
        .iter()
        .all(|s| s.labels.get("experiment").map(String::as_str) != Some("fleet")));
    assert!(seen
        .iter()
        .any(|s| s.labels.get("experiment").map(String::as_str) == Some("node-shutdown")));

    // Nothing listening: exit 3, naming where it tried.
    drop(g);
    let out = push("node-shutdown", "http://127.0.0.1:9/");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("push to http://127.0.0.1:9/metrics/job/nodedown"),
        "{stderr}"
    );
}

/// A qualification sheet's metrics (the committed reference sheet, made on testenv): each row's
/// verdict and time to Ready as sheet.json says, and promtool accepts them.
#[test]
fn a_sheets_metrics_are_its_rows() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/qualification/nodedown-attach");
    let text = metrics_of(&dir);
    let samples = parse(&text);
    let sheet: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sheet.json")).unwrap()).unwrap();
    let rows = sheet["rows"].as_array().unwrap();
    assert!(rows.len() >= 5);
    for row in rows {
        let id = row["id"].as_str().unwrap();
        let verdict = row["verdict"].as_str().unwrap();
        let of = |name: &str, extra: &[(&str, &str)]| {
            samples
                .iter()
                .find(|s| {
                    s.name == name
                        && s.labels["row"] == id
                        && extra.iter().all(|(k, v)| s.labels[*k] == *v)
                })
                .map(|s| s.value)
        };
        assert_eq!(
            of("nodedown_qualify_row_verdict", &[("verdict", verdict)]),
            Some(1.0),
            "{id}"
        );
        assert_eq!(
            of(
                "nodedown_qualify_row_time_to_ready_seconds",
                &[("stat", "p50")]
            ),
            row["timeToReady"]["p50Ms"].as_f64().map(|ms| ms / 1000.0),
            "{id}"
        );
        if verdict != "not-applicable" {
            assert_eq!(
                of("nodedown_qualify_row_runs", &[]),
                row["runs"].as_f64(),
                "{id}"
            );
        }
        let s = samples
            .iter()
            .find(|s| s.name == "nodedown_qualify_row_verdict" && s.labels["row"] == id)
            .unwrap();
        assert_eq!(s.labels["storage_class"], "nodedown-attach");
    }
    promtool_check("sheet", &text);
}
