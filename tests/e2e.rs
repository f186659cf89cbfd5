//! End-to-end: nodedown against the real kind cluster that testenv/up made (1 + 6 nodes, fast
//! profile). These tests kill real node containers. A test that fits one lane of two workers
//! holds a lane ([`lane`]: the `lane` test group of .config/nextest.toml runs three at once, one
//! per lane) and confines nodedown to it (`--nodes` through `NODEDOWN_NODES`); one that needs
//! the whole cluster holds it ([`lock_cluster`]: the `cluster` group, one at a time, never beside
//! a lane test — scripts/test runs the lane tests in a pass of their own). Each invocation's
//! variants go side by side in lanes of its nodes (`NODEDOWN_PARALLEL=auto`).
//! The cluster must exist: a missing cluster is a failure, never a skip.

#[path = "support/pushgateway.rs"]
mod pushgateway;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The suite runs under cargo-nextest, one process per test, and the `cluster` test group of
/// .config/nextest.toml runs these tests one at a time. This lock does the same for a plain
/// `cargo test --test e2e` (one process, many threads).
static CLUSTER: Mutex<()> = Mutex::new(());

/// A temporary directory for a test's output; kept after the test when `NODEDOWN_E2E_KEEP` is
/// set (scripts/test sets it, so a failure in CI leaves its run directories to look at, named
/// `nodedown-e2e-*` in the temp dir).
fn tempdir() -> TestDir {
    let dir = tempfile::Builder::new()
        .prefix("nodedown-e2e-")
        .disable_cleanup(std::env::var_os("NODEDOWN_E2E_KEEP").is_some())
        .tempdir()
        .unwrap();
    MADE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(dir.path().to_path_buf());
    TestDir(dir)
}

/// A test's output directory, deleted when the test passes and kept when it fails (its path
/// on stderr): the runs' events.jsonl and journals are the evidence of what went wrong — a
/// failure that happens once in many suites is otherwise lost with its directory.
struct TestDir(tempfile::TempDir);

impl std::ops::Deref for TestDir {
    type Target = tempfile::TempDir;
    fn deref(&self) -> &tempfile::TempDir {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.disable_cleanup(true);
            eprintln!(
                "kept the failed test's output for its evidence: {}",
                self.0.path().display()
            );
        }
    }
}

fn cluster_name() -> String {
    std::env::var("NODEDOWN_TEST_CLUSTER").unwrap_or_else(|_| "nodedown".into())
}

fn context() -> String {
    format!("kind-{}", cluster_name())
}

fn nodedown() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nodedown"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    // The variants of each experiment go side by side in lanes (3 on testenv's 6 workers);
    // a test that needs the runs one after the other says --parallel 1.
    c.env("NODEDOWN_PARALLEL", "auto");
    // A lane test's invocations are confined to its lane's nodes.
    match SCOPE.get() {
        Some(nodes) => c.env("NODEDOWN_NODES", nodes.join(",")),
        None => c.env_remove("NODEDOWN_NODES"),
    };
    c
}

/// The nodes of the lane this test holds (set once by [`lane`]); unset: the whole cluster.
static SCOPE: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// The output directories this test made ([`tempdir`]): where its runs' namespaces are named.
static MADE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The worker nodes of the test cluster, by name (lane `k` of three is the `k`-th pair).
fn workers() -> Vec<String> {
    let nodes = kubectl_json(&["get", "nodes"]);
    let mut names: Vec<String> = nodes["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| {
            n["metadata"]["labels"]
                .get("node-role.kubernetes.io/control-plane")
                .is_none()
        })
        .filter_map(|n| n["metadata"]["name"].as_str().map(String::from))
        .collect();
    names.sort();
    names
}

/// The lane's slot this test process runs in: nextest's stable slot of the `lane` group
/// (0, 1 or 2), else 0 (a plain `cargo test`, one test at a time under [`CLUSTER`]).
fn lane_slot() -> usize {
    std::env::var("NEXTEST_TEST_GROUP_SLOT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Holds a lane of the test cluster for the test: the two workers of its slot (sorted by name:
/// worker/worker2, worker3/worker4, worker5/worker6 — one zone each). Every nodedown the test
/// runs is confined to them, and the checks of "the cluster is whole" look at them alone
/// (another lane's node may be down in its own test meanwhile).
fn lane() -> std::sync::MutexGuard<'static, ()> {
    in_group("lane");
    let guard = CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    reachable();
    let workers = workers();
    let slot = lane_slot();
    let nodes: Vec<String> = workers.iter().skip(slot * 2).take(2).cloned().collect();
    assert_eq!(
        nodes.len(),
        2,
        "lane {slot} needs workers {} and {} of the test cluster's {}",
        slot * 2 + 1,
        slot * 2 + 2,
        workers.len()
    );
    SCOPE.set(nodes).expect("one lane per test");
    wait_until(
        Duration::from_secs(180),
        || unhealthy_nodes().is_empty(),
        "the lane's nodes Ready before the test",
    );
    guard
}

/// For a test that makes a kind cluster of its own (the `own-cluster` test group runs it beside
/// the others): it touches nothing of the test cluster, so it neither holds nor waits for it.
fn own_cluster() -> std::sync::MutexGuard<'static, ()> {
    in_group("own-cluster");
    static OWN: Mutex<()> = Mutex::new(());
    OWN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Under nextest, a test holding a lane must be in the `lane` test group and one holding the
/// whole cluster in `cluster` (.config/nextest.toml): in the wrong one it would run beside
/// tests it must not meet.
fn in_group(group: &str) {
    if let Ok(actual) = std::env::var("NEXTEST_TEST_GROUP") {
        assert_eq!(
            actual, group,
            "this test is in nextest's test group {actual}, where its way of holding the cluster needs {group}: fix .config/nextest.toml"
        );
    }
}

fn reachable() {
    let out = Command::new("kubectl")
        .args(["--context", &context(), "get", "nodes"])
        .output();
    assert!(
        out.as_ref().is_ok_and(|o| o.status.success()),
        "the test cluster {} is not reachable: run testenv/up first ({:?})",
        cluster_name(),
        out.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
    );
}

/// The namespaces the runs under `dir` made (their `run-scope` events).
fn run_namespaces_under(dir: &Path, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            run_namespaces_under(&path, found);
        } else if path.file_name().is_some_and(|n| n == "events.jsonl") {
            for line in std::fs::read_to_string(&path).unwrap_or_default().lines() {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                if v["event"] == "run-scope" {
                    if let Some(ns) = v["namespace"].as_str() {
                        found.push(ns.to_string());
                    }
                }
            }
        }
    }
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("spawn");
    eprintln!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `kubectl --context <the test cluster> ARGS`, with `stdin` fed to it when given.
fn kubectl(args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = Command::new("kubectl");
    c.args(["--context", &context()]).args(args);
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl");
    if let Some(text) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap()
}

/// [`kubectl`], which must succeed (its stderr in the failure).
fn kubectl_ok(args: &[&str], stdin: Option<&str>) -> Output {
    let out = kubectl(args, stdin);
    assert!(
        out.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn kubectl_json(args: &[&str]) -> serde_json::Value {
    let out = kubectl(&[args, &["-o", "json"]].concat(), None);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("kubectl json")
}

/// Nodes that are not Ready or carry the out-of-service taint, and a word when a Node is
/// missing (empty: the cluster is whole). A Node deleted by a `delete-node` remediation is
/// missing, not a wrong cluster: it is reported here, not asserted (a SIGKILL mid-run may come
/// after another lane deleted its Node). In a lane test, only the lane's nodes and the control
/// plane count: another lane's node may be down in its own test.
fn unhealthy_nodes() -> Vec<String> {
    let nodes = kubectl_json(&["get", "nodes"]);
    let scope = SCOPE.get();
    let mut bad = Vec::new();
    let mut seen = Vec::new();
    for n in nodes["items"].as_array().unwrap() {
        let name = n["metadata"]["name"].as_str().unwrap().to_string();
        let control_plane = n["metadata"]["labels"]
            .get("node-role.kubernetes.io/control-plane")
            .is_some();
        if scope.is_some_and(|s| !control_plane && !s.contains(&name)) {
            continue;
        }
        seen.push(name.clone());
        let ready = n["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        let oos = n["spec"]["taints"].as_array().is_some_and(|t| {
            t.iter()
                .any(|t| t["key"] == "node.kubernetes.io/out-of-service")
        });
        if !ready || oos {
            bad.push(name);
        }
    }
    match scope {
        Some(lane) => bad.extend(
            lane.iter()
                .filter(|n| !seen.contains(n))
                .map(|n| format!("no Node object {n} (a node of this test's lane)")),
        ),
        None => {
            let count = nodes["items"].as_array().unwrap().len();
            if count != 7 {
                bad.push(format!(
                    "{count} Node objects where the testenv cluster has 7 (1 + 6 workers)"
                ));
            }
        }
    }
    bad
}

/// Holds the whole test cluster for the test (the `cluster` test group runs these one at a
/// time, and never beside a lane test), once every node is Ready.
fn lock_cluster() -> std::sync::MutexGuard<'static, ()> {
    in_group("cluster");
    let guard = CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    reachable();
    // Start from a whole cluster (an earlier failed test may have left a node restarting).
    wait_until(
        Duration::from_secs(180),
        || unhealthy_nodes().is_empty(),
        "all nodes Ready before the test",
    );
    guard
}

fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn events_contain(run_dir: &Path, needle: &str) -> bool {
    std::fs::read_to_string(run_dir.join("events.jsonl")).is_ok_and(|t| t.contains(needle))
}

/// Namespaces whose name starts with `prefix` (only Active ones when `active_only`).
fn namespaces(prefix: &str, active_only: bool) -> Vec<String> {
    kubectl_json(&["get", "namespaces"])["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| !active_only || n["status"]["phase"] == "Active")
        .filter_map(|n| n["metadata"]["name"].as_str().map(String::from))
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// Run namespaces still active: in a lane test, those of this test's own runs (named in the
/// run directories it made), else any.
fn nodedown_namespaces() -> Vec<String> {
    let active = namespaces("nd-", true);
    if SCOPE.get().is_none() {
        return active;
    }
    let mut own = Vec::new();
    for dir in MADE.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        run_namespaces_under(dir, &mut own);
    }
    active.into_iter().filter(|n| own.contains(n)).collect()
}

/// The lock's Leases on the test cluster (`nodedown-node-<node>`): in a lane test, those of
/// the lane's nodes.
fn lock_leases() -> Vec<String> {
    let all: Vec<String> =
        kubectl_json(&["-n", "default", "get", "leases", "-l", "nodedown.dev/lock"])["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["metadata"]["name"].as_str().map(String::from))
            .collect();
    match SCOPE.get() {
        None => all,
        Some(lane) => all
            .into_iter()
            .filter(|l| lane.iter().any(|n| *l == format!("nodedown-node-{n}")))
            .collect(),
    }
}

/// Agent namespaces, terminating ones included: in a lane test, those of the lane's nodes.
fn agent_namespaces() -> Vec<String> {
    let all = namespaces("nd-agent-", false);
    match SCOPE.get() {
        None => all,
        Some(lane) => all
            .into_iter()
            .filter(|ns| lane.iter().any(|n| *ns == format!("nd-agent-{n}")))
            .collect(),
    }
}

#[test]
fn node_shutdown_experiment_compares_four_remediations() {
    const VARIANTS: [&str; 4] = [
        "none",
        "out-of-service-taint",
        "force-delete-pod",
        "delete-node",
    ];
    let _g = lock_cluster();
    let out = tempdir();
    let dir = out.path().join("run");
    // An independent observer of the same runs: Docker's own event stream.
    let mut docker_events = Command::new("docker")
        .args([
            "events",
            "--filter",
            "type=container",
            "--filter",
            "event=die",
            "--format",
            "{{.Actor.Attributes.name}} {{.TimeNano}}",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("docker events");
    let res = run_ok(
        nodedown()
            .args([
                "run",
                "experiments/node-shutdown.yaml",
                "--cluster-name",
                &cluster_name(),
                "--out",
            ])
            .arg(&dir),
    );
    assert_eq!(
        res.status.code(),
        Some(0),
        "every expectation of node-shutdown.yaml met"
    );
    // Nothing went wrong, so nothing on the terminal says ERROR (the pod proxy's expected 503s
    // while the node is down are evidence in events.jsonl, not errors).
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(!stderr.contains("ERROR"), "no ERROR line: {stderr}");
    assert!(
        std::fs::read_to_string(dir.join("node-shutdown/out-of-service-taint/1/events.jsonl"))
            .unwrap()
            .contains("\"probe-failing\""),
        "the failing probe is recorded as evidence"
    );
    // Time zero lies within 50 ms of Docker's die event for the node container.
    docker_events.kill().unwrap();
    let died = String::from_utf8(docker_events.wait_with_output().unwrap().stdout).unwrap();
    let deaths: Vec<(String, i128)> = died
        .lines()
        .filter_map(|l| {
            let (name, nanos) = l.split_once(' ')?;
            Some((
                name.to_string(),
                nanos.trim().parse::<i128>().ok()? / 1_000_000,
            ))
        })
        .collect();
    for variant in VARIANTS {
        let events =
            std::fs::read_to_string(dir.join(format!("node-shutdown/{variant}/1/events.jsonl")))
                .unwrap();
        let find = |kind: &str| {
            events
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .find(|e| e["event"] == kind)
                .unwrap_or_else(|| panic!("{variant}: no {kind} event"))
        };
        let wall_ms = |e: &serde_json::Value| {
            let t = humantime::parse_rfc3339(e["wall"].as_str().unwrap()).unwrap();
            t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i128
        };
        let (injecting, injected) = (find("fault-injecting"), find("fault-injected"));
        let node = injected["node"].as_str().unwrap();
        let died_ms = deaths
            .iter()
            .filter(|(n, ms)| n == node && *ms >= wall_ms(&injecting) - 5)
            .map(|(_, ms)| *ms)
            .min()
            .unwrap_or_else(|| panic!("{variant}: Docker saw {node} die: {died}"));
        let off = (wall_ms(&injected) - died_ms).abs();
        assert!(
            off <= 50,
            "{variant}: fault-injected {} ms from Docker's die event",
            off
        );
        assert_eq!(injected["basis"], "runtime-die-event", "{variant}");
    }

    // JUnit parses back, one testcase per variant, no failures.
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let parsed = quick_junit::Report::deserialize_from_str(&junit).expect("junit.xml parses");
    let cases: Vec<_> = parsed
        .test_suites
        .iter()
        .flat_map(|s| s.test_cases.iter())
        .collect();
    assert_eq!(cases.len(), 4);
    assert!(
        cases
            .iter()
            .all(|c| matches!(c.status, quick_junit::TestCaseStatus::Success { .. })),
        "{junit}"
    );

    // results.json round-trips and holds the measurements.
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    let report = nodedown::report::json::from_str(&text).expect("results.json parses");
    assert_eq!(nodedown::report::json::to_string(&report), text);
    let runs = &report.experiments[0].runs;
    for r in runs {
        assert!(
            r.metrics
                .contains_key(&nodedown::timeline::Metric::TimeToNotReady),
            "{}: NotReady observed",
            r.id
        );
        if r.variant == "none" {
            assert!(
                !r.metrics
                    .contains_key(&nodedown::timeline::Metric::TimeToRunning),
                "none: no replacement within the timeout"
            );
            assert!(
                r.phases.iter().any(|p| p.name.name() == "pod-terminating"),
                "none: old pod stuck Terminating"
            );
        } else {
            assert!(
                r.metrics[&nodedown::timeline::Metric::TimeToRunning]
                    > r.metrics[&nodedown::timeline::Metric::TimeToNotReady],
                "{}",
                r.id
            );
            assert!(
                r.metrics
                    .contains_key(&nodedown::timeline::Metric::TimeToRemediation),
                "{}",
                r.id
            );
            let target = r.target_node.as_ref().unwrap();
            assert_ne!(
                r.replacement_node.as_ref(),
                Some(target),
                "{}: replacement on another node",
                r.id
            );
        }
    }

    // `nodedown report` re-renders identical output from the run dir.
    for (format, file) in [
        ("json", "results.json"),
        ("junit", "junit.xml"),
        ("markdown", "summary.md"),
    ] {
        let r = nodedown()
            .args(["report", "--format", format])
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(0));
        assert_eq!(
            String::from_utf8(r.stdout).unwrap(),
            std::fs::read_to_string(dir.join(file)).unwrap(),
            "{format}"
        );
    }
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
    assert!(nodedown_namespaces().is_empty(), "run namespaces deleted");
    // Every storage directory a run journaled is gone, the namespace's own one included.
    let mut dirs = 0;
    for variant in VARIANTS {
        let journal =
            std::fs::read_to_string(dir.join(format!("node-shutdown/{variant}/1/journal.jsonl")))
                .unwrap();
        for entry in journal.lines() {
            let entry: serde_json::Value = serde_json::from_str(entry).unwrap();
            if entry["undo"] == "remove-dir" {
                let path = entry["path"].as_str().unwrap();
                assert!(!Path::new(path).exists(), "{variant}: {path} left behind");
                dirs += 1;
            }
        }
    }
    assert_eq!(
        dirs, 8,
        "each run journaled its volume's and its namespace's directory"
    );
}

/// The variants an interrupt test starts side by side, one per lane (3 lanes on testenv's 6
/// workers); the first is the one whose remediation the SIGKILL test waits for.
const LANED: [&str; 3] = ["out-of-service-taint", "force-delete-pod", "delete-node"];

fn spawn_run(dir: &Path, variants: &[&str]) -> std::process::Child {
    let mut cmd = nodedown();
    cmd.args(["run", "experiments/node-shutdown.yaml", "--parallel", "3"]);
    for v in variants {
        cmd.args(["--only", v]);
    }
    cmd.args(["--cluster-name", &cluster_name(), "--out"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn run_dir(dir: &Path, variant: &str) -> PathBuf {
    dir.join("node-shutdown").join(variant).join("1")
}

/// Two invocations confined to disjoint pairs of workers (`--nodes`) run at the same time on
/// the one cluster, each faulting and replacing inside its own pair; a third whose nodes
/// overlap one of theirs is refused at once, naming the node and its holder, before it
/// touches anything; afterwards nothing is left (nodes Ready, no taint, no lock).
#[test]
fn invocations_on_disjoint_nodes_run_at_once_and_an_overlapping_one_is_refused() {
    let _g = lock_cluster();
    let out = tempdir();
    let workers = workers();
    let pairs = [&workers[0..2], &workers[2..4]];
    let spawn = |nodes: &[String], name: &str| {
        nodedown()
            .args([
                "run",
                "experiments/smoke.yaml",
                "--cluster-name",
                &cluster_name(),
            ])
            .args(["--nodes", &nodes.join(","), "--out"])
            .arg(out.path().join(name))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let first = spawn(pairs[0], "first");
    let second = spawn(pairs[1], "second");
    // Both hold their nodes' Leases before the third asks.
    wait_until(
        Duration::from_secs(120),
        || lock_leases().len() == 4,
        "both invocations hold the Leases of their two nodes",
    );
    // The control plane's Lease sorts first: taken, then given back when worker2's is not.
    let control_plane = format!("{}-control-plane", cluster_name());
    let overlap = [workers[1].clone(), control_plane.clone()];
    let third = nodedown()
        .args([
            "run",
            "experiments/smoke.yaml",
            "--cluster-name",
            &cluster_name(),
        ])
        .args(["--nodes", &overlap.join(","), "--out"])
        .arg(out.path().join("third"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&third.stderr);
    assert_eq!(third.status.code(), Some(3), "refused: {said}");
    let holder = std::fs::canonicalize(out.path().join("first")).unwrap();
    assert!(
        said.contains(&format!(
            "node {} is taken by another nodedown invocation",
            workers[1]
        )) && said.contains(&holder.display().to_string()),
        "names the node and its holder: {said}"
    );
    assert!(
        !out.path().join("third").join("smoke").exists(),
        "nothing of the third ran"
    );
    assert!(
        !lock_leases().contains(&format!("nodedown-node-{control_plane}")),
        "the refused invocation gave back the Lease it had taken"
    );
    for (child, name, pair) in [(first, "first", pairs[0]), (second, "second", pairs[1])] {
        let done = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(0), "{name}: {said}");
        let report = nodedown::report::json::from_str(
            &std::fs::read_to_string(out.path().join(name).join("results.json")).unwrap(),
        )
        .unwrap();
        let run = &report.experiments[0].runs[0];
        let target = run.target_node.clone().expect("a target node");
        let replacement = run.replacement_node.clone().expect("a replacement node");
        assert!(
            pair.contains(&target) && pair.contains(&replacement) && target != replacement,
            "{name}: faulted {target} and replaced on {replacement}, inside {pair:?}"
        );
    }
    assert_eq!(lock_leases(), Vec::<String>::new(), "no lock left");
    assert!(unhealthy_nodes().is_empty(), "cluster whole afterwards");
}

#[test]
fn sigint_during_the_fault_heals_the_cluster() {
    let _g = lock_cluster();
    let out = tempdir();
    let dir = out.path().join("run");
    // Three runs in three lanes, each with its node down when the signal comes.
    let mut child = spawn_run(&dir, &LANED);
    wait_until(
        Duration::from_secs(240),
        || {
            LANED
                .iter()
                .all(|v| events_contain(&run_dir(&dir, v), "\"fault-injected\""))
        },
        "a fault injected in every lane",
    );
    // A second invocation on the same cluster meanwhile is refused before it deploys anything,
    // naming the one that holds the cluster.
    let namespaces_before = nodedown_namespaces();
    let second_out = out.path().join("second");
    let second = nodedown()
        .args([
            "run",
            "experiments/smoke.yaml",
            "--cluster-name",
            &cluster_name(),
            "--out",
        ])
        .arg(&second_out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(3), "refused: {said}");
    assert!(
        said.contains("is taken by another nodedown invocation")
            && said.contains(&std::fs::canonicalize(&dir).unwrap().display().to_string()),
        "names the holder by its output directory: {said}"
    );
    assert_eq!(nodedown_namespaces(), namespaces_before, "nothing deployed");
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "interrupted exit code");
    assert_eq!(
        lock_leases(),
        Vec::<String>::new(),
        "the lock (a Lease default/nodedown-node-<node> per node) released on the way out"
    );
    for v in LANED {
        let rd = run_dir(&dir, v);
        assert!(
            events_contain(&rd, "interrupted by SIGINT"),
            "{v}: run-finished says why"
        );
        assert!(
            events_contain(&rd, "\"run-scope\"") && events_contain(&rd, "\"lane\""),
            "{v}: ran in a lane"
        );
    }
    assert!(
        unhealthy_nodes().is_empty(),
        "all nodes Ready, no out-of-service taint after SIGINT: every lane healed"
    );
}

#[test]
fn sigkill_then_cleanup_heals_the_cluster() {
    let _g = lock_cluster();
    let out = tempdir();
    let dir = out.path().join("run");
    let mut child = spawn_run(&dir, &LANED);
    let rd = run_dir(&dir, "out-of-service-taint");
    // Kill after the taint is on (and every lane's node is down): cleanup must restart the
    // nodes of all three lanes AND remove the taint.
    wait_until(
        Duration::from_secs(240),
        || {
            events_contain(&rd, "\"remediation-applied\"")
                // nodedown's own taint write, named by its field manager in managedFields
                && events_contain(&rd, "\"by\":\"nodedown\"")
                && LANED
                    .iter()
                    .all(|v| events_contain(&run_dir(&dir, v), "\"fault-injected\""))
        },
        "taint applied, every lane faulted",
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !unhealthy_nodes().is_empty(),
        "SIGKILL left the node down / tainted (nothing healed it)"
    );
    let res = run_ok(nodedown().arg("cleanup").arg(&dir));
    assert_eq!(res.status.code(), Some(0));
    let first = String::from_utf8_lossy(&res.stderr).into_owned();
    assert!(
        first.contains("cleanup: healed ") && !first.contains("healed 0 action"),
        "the first cleanup acted: {first}"
    );
    assert!(
        first.contains("removed the lock its invocation held"),
        "the killed invocation's lock went with its cleanup: {first}"
    );
    assert!(
        unhealthy_nodes().is_empty(),
        "all nodes Ready, no out-of-service taint after cleanup"
    );
    wait_until(
        Duration::from_secs(60),
        || nodedown_namespaces().is_empty(),
        "run namespace deleted",
    );
    // A second cleanup has nothing left to do: it says so, and the journal gains no line.
    let journal = rd.join("journal.jsonl");
    let before = std::fs::read(&journal).unwrap();
    let again = run_ok(nodedown().arg("cleanup").arg(&dir));
    assert_eq!(again.status.code(), Some(0));
    let second = String::from_utf8_lossy(&again.stderr);
    assert!(
        second.contains("cleanup: nothing to heal"),
        "the second cleanup did nothing: {second}"
    );
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        before,
        "journal untouched"
    );
    // A line in the middle of a journal that cannot be read: cleanup heals what it can read,
    // then says which line it could not undo and exits 3 (never a quiet partial heal).
    let text = String::from_utf8(before).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    lines.insert(1, "{\"op\":\"do\",\"id\":99,\"undo\":\"start-nod");
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let third = nodedown().arg("cleanup").arg(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&third.stderr);
    assert_eq!(third.status.code(), Some(3), "{said}");
    assert!(
        said.contains("journal.jsonl: journal: line 2 cannot be read")
            && said.contains("NOT undone"),
        "cleanup names the unreadable line: {said}"
    );
}

/// Ctrl-C after the runs, while the invocation waits for their namespaces to go: it stops
/// waiting at once and exits 130, the cluster whole (the namespaces go by themselves).
#[test]
fn sigint_during_the_final_wait_exits_130_with_the_cluster_healed() {
    use std::io::BufRead;
    let _g = lane();
    // A namespace of this invocation's that stays Terminating until this test lets it go (a
    // finalizer of the test's own, the invocation's label, which the invocation names when it
    // starts), so the final wait lasts as long as the test needs, whatever the cluster's pace
    // (a smoke run's own namespace can be gone before a signal arrives).
    let hold = format!("nd-e2e-hold-{}", std::process::id());
    struct Release<'a>(&'a dyn Fn());
    impl Drop for Release<'_> {
        fn drop(&mut self) {
            (self.0)()
        }
    }
    let release = || {
        let _ = kubectl(
            &[
                "patch",
                "namespace",
                &hold,
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#,
            ],
            None,
        );
    };
    let _release = Release(&release);
    let out = tempdir();
    let mut child = nodedown()
        .args([
            "run",
            "experiments/smoke.yaml",
            "--cluster-name",
            &cluster_name(),
            "--out",
        ])
        .arg(out.path().join("run"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut signalled = false;
    for line in lines.by_ref() {
        let line = line.unwrap();
        eprintln!("{line}");
        if let Some(id) = line
            .split("invocation ")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .filter(|id| id.len() == 12 && id.chars().all(|c| c.is_ascii_hexdigit()))
        {
            let made = kubectl(
                &["apply", "-f", "-"],
                Some(&format!(
                    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {hold}\n  labels: {{{}: e2e-hold, {}: \"{id}\"}}\n  finalizers: [nodedown.dev/e2e-hold]\n",
                    nodedown::workload::RUN_LABEL,
                    nodedown::vocab::INVOCATION_LABEL
                )),
            );
            assert!(made.status.success(), "{made:?}");
            let deleted = kubectl(&["delete", "namespace", &hold, "--wait=false"], None);
            assert!(deleted.status.success(), "{deleted:?}");
        }
        if line.contains("waiting for the runs' namespaces to finish terminating") {
            // SAFETY: plain kill(2) on our own child.
            assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
            signalled = true;
            break;
        }
    }
    assert!(signalled, "the invocation reached its final wait");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(
        rest.iter()
            .any(|l| l.contains("not waiting for the namespaces any longer")),
        "{rest:?}"
    );
    assert!(unhealthy_nodes().is_empty(), "the cluster is whole");
    release();
    wait_until(
        Duration::from_secs(90),
        || nodedown_namespaces().is_empty() && namespaces(&hold, false).is_empty(),
        "the run namespaces went by themselves",
    );
}

/// A cluster nodedown created is deleted on every way out, also when the invocation cannot
/// write its session file (here session.json is a directory): exit 3, and the cluster is gone.
#[test]
fn a_failed_session_write_deletes_the_cluster_it_created() {
    let _g = own_cluster();
    let name = "nd-session-fail";
    let out = tempdir();
    let dir = out.path().join("run");
    std::fs::create_dir_all(dir.join("session.json")).unwrap();
    // A one-node cluster from the fast profile (its kubeadm patches: no CoreDNS offline).
    let fast = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/kind-configs/fast.yaml"
    ))
    .unwrap();
    let head = &fast[..fast.find("\nnodes:").expect("fast.yaml lists its nodes")];
    let config = out.path().join("one-node.yaml");
    std::fs::write(&config, format!("{head}\nnodes:\n- role: control-plane\n")).unwrap();
    let image = Command::new("docker")
        .args([
            "inspect",
            "--format",
            "{{.Config.Image}}",
            &format!("{}-control-plane", cluster_name()),
        ])
        .output()
        .unwrap();
    let image = String::from_utf8(image.stdout).unwrap().trim().to_string();
    let res = nodedown()
        .args(["run", "experiments/smoke.yaml", "--cluster-name", name])
        .arg("--kind-config")
        .arg(&config)
        .args(["--node-image", &image, "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&res.stderr);
    let clusters = Command::new("kind")
        .args(["get", "clusters"])
        .output()
        .unwrap();
    let clusters = String::from_utf8_lossy(&clusters.stdout).into_owned();
    if clusters.lines().any(|l| l == name) {
        let _ = Command::new("kind")
            .args(["delete", "cluster", "--name", name])
            .status();
        panic!("cluster {name} leaked: {said}");
    }
    assert_eq!(res.status.code(), Some(3), "{said}");
    assert!(said.contains("session.json"), "names the file: {said}");
}

/// Refused before anything is touched, on the testenv cluster reached by kubeconfig alone
/// (README's "Running on your own cluster", the agent only, no power hooks): the fenced
/// variant needs to power the node off, which nothing here can.
#[test]
fn an_unsupported_variant_is_refused_on_an_existing_cluster_before_anything_is_touched() {
    let _g = lane();
    let out = tempdir();
    let before = nodedown_namespaces();
    let res = nodedown()
        .args([
            "run",
            "experiments/kubelet-stop.yaml",
            "--provider",
            "existing",
            "--context",
            &context(),
            "--allow-context",
            &context(),
            "--out",
        ])
        .arg(out.path().join("run"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "{said}");
    assert!(
        said.contains("variant `oos-taint-fenced`") && said.contains("--power-off"),
        "{said}"
    );
    assert_eq!(nodedown_namespaces(), before, "nothing deployed");
    assert!(!out.path().join("run").exists(), "nothing written");

    // With --skip-unsupported the rest runs, through the agent alone (no power hooks), and the
    // fenced variant is reported as not run, with the reason.
    let dir = out.path().join("skip");
    let res = run_ok(
        nodedown()
            .args([
                "run",
                "experiments/kubelet-stop.yaml",
                "--only",
                "force-delete-pod",
                "--only",
                "oos-taint-fenced",
                "--skip-unsupported",
                "--provider",
                "existing",
                "--context",
                &context(),
                "--allow-context",
                &context(),
                "--test-nodes",
                "--workload-image",
                &exported_image(),
                "--out",
            ])
            .arg(&dir),
    );
    assert_eq!(res.status.code(), Some(0), "the supported variant passed");
    let report = nodedown::report::json::from_str(
        &std::fs::read_to_string(dir.join("results.json")).unwrap(),
    )
    .unwrap();
    let runs = &report.experiments[0].runs;
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0].variant, "force-delete-pod");
    assert_eq!(
        runs[0]
            .environment
            .as_ref()
            .and_then(|e| e.backend)
            .map(|b| b.to_string()),
        Some("agent".to_string()),
        "faulted through the agent"
    );
    let not_run = serde_json::to_string(&report.not_run).unwrap();
    assert!(
        not_run.contains("oos-taint-fenced") && not_run.contains("--power-off"),
        "{not_run}"
    );
    wait_until(
        Duration::from_secs(60),
        || agent_namespaces().is_empty(),
        "agent namespaces gone",
    );
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// The cluster lock taken away in the middle of a run (as another tool or a person deleting the
/// Lease would): the holder notices at its next renewal, stops faulting, heals and exits 3.
#[test]
fn a_lock_taken_away_mid_run_stops_heals_and_exits_3() {
    let _g = lane();
    let out = tempdir();
    let dir = out.path().join("run");
    let mut child = spawn_run(&dir, &["out-of-service-taint"]);
    let rd = run_dir(&dir, "out-of-service-taint");
    wait_until(
        Duration::from_secs(240),
        || events_contain(&rd, "\"fault-injected\""),
        "the fault injected",
    );
    // One of its Leases, as another tool or a person would delete it.
    let leases = lock_leases();
    assert_eq!(
        leases.len(),
        2,
        "one Lease per node of the lane: {leases:?}"
    );
    let deleted = kubectl(&["-n", "default", "delete", "lease", &leases[0]], None);
    assert!(deleted.status.success(), "{deleted:?}");
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(3),
        "a lost lock is the harness's failure"
    );
    assert!(
        events_contain(&rd, "lost the cluster lock") && events_contain(&rd, "was deleted"),
        "run-finished says why it stopped"
    );
    assert!(
        unhealthy_nodes().is_empty(),
        "all nodes Ready, no out-of-service taint: healed on the way out"
    );
}

/// One line per run that did not pass: its verdict, error, unmet expectations and integrity
/// evidence — what a failed assertion on an exit code should print (CI keeps only a part of the
/// output).
fn not_passed(runs: &[nodedown::report::RunResult]) -> String {
    use nodedown::report::Verdict;
    let mut out = String::new();
    for r in runs.iter().filter(|r| r.verdict != Verdict::Pass) {
        out.push_str(&format!("\n{}: {:?}", r.id, r.verdict));
        if let Some(e) = &r.error {
            out.push_str(&format!("; error: {e}"));
        }
        for x in r.expectations.iter().filter(|x| x.verdict != Verdict::Pass) {
            out.push_str(&format!(
                "; {} expected {} got {} ({})",
                x.name, x.expected, x.actual, x.evidence
            ));
        }
        if let Some(i) = &r.integrity {
            out.push_str(&format!("; integrity {:?}: {}", i.verdict, i.evidence));
        }
        let phases: Vec<String> = r
            .phases
            .iter()
            .map(|p| format!("{}@{}", p.name.name(), p.at_ms))
            .collect();
        out.push_str(&format!("; phases: {}", phases.join(" ")));
    }
    out
}

fn run_experiment(
    file: &str,
    only: &[&str],
) -> (std::process::ExitStatus, nodedown::report::Report, TestDir) {
    let out = tempdir();
    let dir = out.path().join("run");
    let mut cmd = nodedown();
    cmd.args(["run", file, "--cluster-name", &cluster_name(), "--out"])
        .arg(&dir);
    let mut args = only.iter();
    while let Some(o) = args.next() {
        if o.starts_with("--") {
            cmd.arg(o).args(args.next());
        } else {
            cmd.args(["--only", o]);
        }
    }
    let res = run_ok(&mut cmd);
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json written");
    (
        res.status,
        nodedown::report::json::from_str(&text).unwrap(),
        out,
    )
}

/// The storage-side fence (issue 31): the ledger's node cut off while it keeps writing, a
/// csi-addons NetworkFence through testenv's NetworkFenceClass before the taint. The storage
/// refuses the old writer from the fence on (the node plugin logs the refused write on the
/// run's volume), nothing of it lands after the fence (fenceEfficacy held), the replacement
/// loses nothing, and the heal lifts the fence only after the node is back: no NetworkFence and
/// an empty fence table afterwards.
#[test]
fn storage_fence_refuses_the_cut_off_writer_and_is_lifted_after_the_node_is_back() {
    let _g = lock_cluster();
    let (status, report, dir) = run_experiment(
        "experiments/storage-fence.yaml",
        &["oos-taint-storage-fenced"],
    );
    let run = &report.experiments[0].runs[0];
    let describe = |r: &nodedown::report::RunResult| {
        let phases: Vec<String> = r
            .phases
            .iter()
            .map(|p| format!("{}@{}", p.name.name(), p.at_ms))
            .collect();
        format!(
            "{}; phases: {}",
            not_passed(std::slice::from_ref(r)),
            phases.join(" ")
        )
    };
    assert_eq!(status.code(), Some(0), "{}", describe(run));
    let at = |name: &str| {
        run.phases
            .iter()
            .find(|p| p.name.name() == name)
            .map(|p| p.at_ms)
            .unwrap_or_else(|| panic!("phase {name}: {}", describe(run)))
    };
    assert!(
        at("node-not-ready") <= at("fence-requested")
            && at("fence-requested") <= at("fence-succeeded")
            && at("fence-succeeded") <= at("out-of-service-taint")
            && at("fence-succeeded") < at("write-refused")
            && at("fault-healed") <= at("unfenced"),
        "{}",
        describe(run)
    );
    let fence = run
        .expectations
        .iter()
        .find(|e| e.name == "fenceEfficacy")
        .expect("a storage-fenced run has the fence's own verdict");
    assert_eq!(fence.verdict, nodedown::report::Verdict::Pass, "{fence:?}");
    let i = run.integrity.as_ref().expect("ledger evidence");
    assert_eq!(i.verdict, nodedown::report::Verdict::Pass, "{}", i.evidence);
    let f = i
        .fence
        .as_ref()
        .expect("fence efficacy in the integrity result");
    assert_eq!(
        (f.through_fence, f.node.as_str()),
        (0, run.target_node.as_deref().unwrap())
    );
    assert!(
        f.last_before.is_some(),
        "the cut-off node was writing until the fence: {f:?}"
    );
    // The refusal is the storage's: the node plugin on the fenced node logged it for this
    // run's volume (its PersistentVolume's name is the volume handle).
    let events = std::fs::read_to_string(
        dir.path()
            .join("run/storage-fence/oos-taint-storage-fenced/1/events.jsonl"),
    )
    .unwrap();
    let pv = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "claim-bound")
        .and_then(|e| e["pv"].as_str().map(String::from))
        .expect("a claim-bound event");
    let node = run.target_node.as_deref().unwrap();
    let plugin = kubectl_ok(
        &[
            "-n",
            "nodedown-csi",
            "get",
            "pods",
            "-l",
            "app=nodedown-csi-node",
            "--field-selector",
            &format!("spec.nodeName={node}"),
            "-o",
            "name",
        ],
        None,
    );
    let plugin = String::from_utf8(plugin.stdout).unwrap();
    let logs = kubectl_ok(
        &[
            "-n",
            "nodedown-csi",
            "logs",
            plugin.trim(),
            "-c",
            "csi-driver",
        ],
        None,
    );
    let logs = String::from_utf8_lossy(&logs.stdout);
    assert!(
        logs.lines()
            .any(|l| l.contains("fence: refused") && l.contains(&format!("on volume {pv} "))),
        "the node plugin of {node} logged a refused operation on volume {pv}"
    );
    // Lifted at the heal: no NetworkFence, an empty fence table, the cluster whole.
    let left = kubectl_ok(&["get", "networkfences", "-o", "name"], None);
    assert!(
        left.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&left.stdout)
    );
    let table = Command::new("docker")
        .args([
            "exec",
            &format!("{}-control-plane", cluster_name()),
            "cat",
            "/mnt/nodedown-shared/csi/fences.json",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&table.stdout).trim(), "[]");
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// The NetworkFences on the cluster, by name (none: empty).
fn network_fences() -> String {
    let out = kubectl_ok(&["get", "networkfences", "-o", "name"], None);
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The storage's fence table (testenv's driver keeps it in the shared directory).
fn fence_table() -> String {
    let out = Command::new("docker")
        .args([
            "exec",
            &format!("{}-control-plane", cluster_name()),
            "cat",
            "/mnt/nodedown-shared/csi/fences.json",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `nodedown run FILE [--only VARIANT]` on the test cluster, in the background.
fn spawn_file(file: &Path, variant: Option<&str>, dir: &Path) -> std::process::Child {
    let mut cmd = nodedown();
    cmd.arg("run").arg(file);
    if let Some(v) = variant {
        cmd.args(["--only", v]);
    }
    cmd.args(["--cluster-name", &cluster_name(), "--out"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// A storage fence is never left behind: SIGINT while the node is fenced heals it on the way
/// out (exit 130); SIGKILL leaves the fence in place (the node stays refused, which is the safe
/// side), and `nodedown cleanup` lifts it from the journal once the node is back.
#[test]
fn a_storage_fence_is_lifted_after_sigint_and_by_cleanup_after_sigkill() {
    let _g = lock_cluster();
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let out = tempdir();
        let dir = out.path().join("run");
        let mut child = spawn_file(
            Path::new("experiments/storage-fence.yaml"),
            Some("oos-taint-storage-fenced"),
            &dir,
        );
        let rd = dir.join("storage-fence/oos-taint-storage-fenced/1");
        wait_until(
            Duration::from_secs(240),
            || events_contain(&rd, "\"state\":\"succeeded\""),
            "the storage fence in place",
        );
        assert!(!network_fences().is_empty(), "a NetworkFence while fenced");
        assert_ne!(
            fence_table(),
            "[]",
            "the fence table names the node while fenced"
        );
        // SAFETY: plain kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = child.wait().unwrap();
        if signal == libc::SIGINT {
            assert_eq!(status.code(), Some(130), "interrupted exit code");
        } else {
            assert!(
                !network_fences().is_empty(),
                "SIGKILL healed nothing: the fence is still there"
            );
            let res = run_ok(nodedown().arg("cleanup").arg(&dir));
            assert_eq!(
                res.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&res.stderr)
            );
        }
        assert_eq!(network_fences(), "", "no NetworkFence left after {signal}");
        assert_eq!(
            fence_table(),
            "[]",
            "the node is served again after {signal}"
        );
        assert!(
            events_contain(&rd, "\"state\":\"unfenced\"") || signal == libc::SIGKILL,
            "the interrupted run recorded the unfence"
        );
        assert!(unhealthy_nodes().is_empty(), "cluster whole after {signal}");
        wait_until(
            Duration::from_secs(60),
            || nodedown_namespaces().is_empty(),
            "run namespace deleted",
        );
    }
}

/// Deletes a NetworkFence the test made, whatever happens to the test.
struct FenceGuard(String);

impl Drop for FenceGuard {
    fn drop(&mut self) {
        let _ = kubectl(
            &[
                "delete",
                "networkfence",
                &self.0,
                "--wait=true",
                "--timeout=60s",
            ],
            None,
        );
    }
}

/// `remediation: external` with a remediator that fences at the storage as Rook does (played
/// here by the test: a NetworkFence for the cut-off node once it is NotReady, then the
/// out-of-service taint): nodedown recognises the fence by the node's address, times it from
/// the object (fence-requested, fence-succeeded), sees the storage refuse the old writer, and
/// judges the fence from the ledger; the remediator's taint is removed at the heal, its fence is
/// the remediator's to lift.
#[test]
fn an_external_remediators_storage_fence_is_recognised_and_timed() {
    let _g = lock_cluster();
    let out = tempdir();
    let file = out.path().join("external-storage-fence.yaml");
    std::fs::write(
        &file,
        "name: external-storage-fence\n\
         workload: {kind: ledger, storageClass: nodedown-fence, size: 1Gi}\n\
         fault: {kind: network-partition, target: {nodeOf: ledger-0}}\n\
         remediation: {kind: external}\n\
         timeouts: {recovery: 2m}\n\
         expect: {recovered: true, integrity: pass}\n",
    )
    .unwrap();
    let dir = out.path().join("run");
    let mut child = spawn_file(&file, None, &dir);
    let rd = dir.join("external-storage-fence/default/1");
    wait_until(
        Duration::from_secs(240),
        || events_contain(&rd, "\"fault-injected\""),
        "the fault injected",
    );
    let events = std::fs::read_to_string(rd.join("events.jsonl")).unwrap();
    let node = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "fault-injected")
        .and_then(|e| e["node"].as_str().map(String::from))
        .unwrap();
    let ready = || {
        let out = kubectl_ok(
            &[
                "get",
                "node",
                &node,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ],
            None,
        );
        String::from_utf8_lossy(&out.stdout).trim() == "True"
    };
    wait_until(Duration::from_secs(120), || !ready(), "the node NotReady");
    let ip = kubectl_ok(
        &[
            "get",
            "node",
            &node,
            "-o",
            "jsonpath={.status.addresses[?(@.type==\"InternalIP\")].address}",
        ],
        None,
    );
    let ip = String::from_utf8(ip.stdout).unwrap().trim().to_string();
    let name = format!("remediator-{node}");
    let _fence = FenceGuard(name.clone());
    kubectl_ok(
        &["apply", "-f", "-"],
        Some(&format!(
            "apiVersion: csiaddons.openshift.io/v1alpha1\nkind: NetworkFence\nmetadata: {{name: {name}}}\n\
             spec: {{networkFenceClassName: nodedown-fence, fenceState: Fenced, cidrs: [{ip}/32]}}\n"
        )),
    );
    wait_until(
        Duration::from_secs(60),
        || {
            let out = kubectl_ok(
                &[
                    "get",
                    "networkfence",
                    &name,
                    "-o",
                    "jsonpath={.status.result}",
                ],
                None,
            );
            String::from_utf8_lossy(&out.stdout).trim() == "Succeeded"
        },
        "the remediator's fence Succeeded",
    );
    kubectl_ok(
        &[
            "taint",
            "node",
            &node,
            "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute",
        ],
        None,
    );
    let status = child.wait().unwrap();
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    let report = nodedown::report::json::from_str(&text).unwrap();
    let run = &report.experiments[0].runs[0];
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        not_passed(std::slice::from_ref(run))
    );
    let at = |p: &str| {
        run.phases
            .iter()
            .find(|x| x.name.name() == p)
            .map(|x| x.at_ms)
            .unwrap_or_else(|| panic!("no phase {p}: {:?}", run.phases))
    };
    assert!(
        at("node-not-ready") <= at("fence-requested")
            && at("fence-requested") <= at("fence-succeeded")
            && at("fence-succeeded") <= at("out-of-service-taint")
            && at("fence-succeeded") < at("write-refused"),
        "{:?}",
        run.phases
    );
    assert!(
        run.remediation_detail
            .as_deref()
            .is_some_and(|d| d.contains("field manager")),
        "{:?}",
        run.remediation_detail
    );
    let f = run
        .integrity
        .as_ref()
        .and_then(|i| i.fence.as_ref())
        .expect("the fence judged");
    assert_eq!(
        (f.through_fence, f.node.as_str()),
        (0, node.as_str()),
        "{f:?}"
    );
    assert!(
        unhealthy_nodes().is_empty(),
        "the remediator's taint removed at the heal"
    );
    // The fence is the remediator's: still there until it lifts it.
    assert!(network_fences().contains(&name));
    drop(_fence);
    assert_eq!(network_fences(), "");
    assert_eq!(fence_table(), "[]");
}

/// The workload image the way a user gets it onto a cluster nodedown cannot load into:
/// `nodedown image export`, then `kind load image-archive` (once per test process).
fn exported_image() -> String {
    static IMAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    // scripts/test exports and loads it once for the whole suite (nextest runs each test in a
    // process of its own, so a OnceLock alone would load it once per test).
    if let Ok(reference) = std::env::var("NODEDOWN_E2E_IMAGE") {
        return reference;
    }
    IMAGE
        .get_or_init(|| {
            let dir = tempdir();
            let archive = dir.path().join("image.tar");
            let export = run_ok(nodedown().args(["image", "export"]).arg(&archive));
            assert_eq!(export.status.code(), Some(0));
            let reference = String::from_utf8(export.stdout).unwrap().trim().to_string();
            let kind = std::env::var("NODEDOWN_KIND").unwrap_or_else(|_| "kind".into());
            let load = Command::new(kind)
                .args(["load", "image-archive"])
                .arg(&archive)
                .args(["--name", &cluster_name()])
                .output()
                .expect("kind");
            assert!(
                load.status.success(),
                "{}",
                String::from_utf8_lossy(&load.stderr)
            );
            reference
        })
        .clone()
}

/// Flags that reach the testenv cluster as a foreign one: kubeconfig context only, allowed,
/// the exported image, power hooks that call the docker CLI as a user's commands would.
fn foreign(cmd: &mut Command) -> &mut Command {
    let ctx = context();
    cmd.args([
        "--context",
        &ctx,
        "--allow-context",
        &ctx,
        "--test-nodes",
        "--workload-image",
        &exported_image(),
    ])
    .args(POWER_HOOKS)
}

/// Power hooks that call the docker CLI on testenv's node containers, as a user's commands would.
const POWER_HOOKS: [&str; 6] = [
    "--power-off",
    "docker kill {node}",
    "--power-on",
    "docker start {node}",
    "--power-state",
    "docker inspect -f '{{if .State.Running}}on{{else}}off{{end}}' {node}",
];

/// kubelet-stop and network-partition through the node agent (no Docker backend: the cluster
/// is reached by kubeconfig alone), fencing through power hooks: the same verdicts as through
/// Docker (tests above), and the agent removed afterwards.
#[test]
fn agent_faults_give_the_same_verdicts_as_docker() {
    let _g = lane();
    let out = tempdir();
    let dir = out.path().join("np");
    let res = run_ok(
        foreign(nodedown().args([
            "run",
            "experiments/network-partition.yaml",
            "--only",
            "oos-taint-unfenced",
            "--only",
            "oos-taint-fenced",
            "--node-control",
            "agent",
        ]))
        .arg("--out")
        .arg(&dir),
    );
    assert_eq!(
        res.status.code(),
        Some(0),
        "both variants meet their expectations"
    );
    let report = nodedown::report::json::from_str(
        &std::fs::read_to_string(dir.join("results.json")).unwrap(),
    )
    .unwrap();
    let runs = &report.experiments[0].runs;
    let i = |v: &str| {
        runs.iter()
            .find(|r| r.variant == v)
            .unwrap()
            .integrity
            .clone()
            .unwrap()
    };
    assert!(
        i("oos-taint-unfenced").split_brain,
        "split brain caught through the agent"
    );
    let fenced = i("oos-taint-fenced");
    assert_eq!(
        fenced.verdict,
        nodedown::report::Verdict::Pass,
        "{}",
        fenced.evidence
    );
    for v in ["oos-taint-unfenced", "oos-taint-fenced"] {
        let journal =
            std::fs::read_to_string(dir.join(format!("network-partition/{v}/1/journal.jsonl")))
                .unwrap();
        assert!(journal.contains("\"backend\":\"agent\""), "{v}: {journal}");
    }

    // kubelet-stop through the agent: an_unsupported_variant_… runs its force-delete variant
    // through the agent alone (no power hooks), on the same code path.
    assert!(agent_namespaces().is_empty(), "agents removed");
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the runs");
}

/// SIGKILL nodedown while the agent holds a partition: the node comes back by itself when the
/// lease ends; cleanup then finds the cluster whole and removes the agent.
#[test]
fn a_partition_heals_itself_when_its_lease_ends() {
    let _g = lane();
    let out = tempdir();
    let dir = out.path().join("run");
    let mut child = foreign(nodedown().args([
        "run",
        "experiments/network-partition.yaml",
        "--only",
        "none",
        "--node-control",
        "agent",
        "--fault-lease",
        "40s",
    ]))
    .arg("--out")
    .arg(&dir)
    .stdout(Stdio::null())
    .spawn()
    .unwrap();
    let rd = dir.join("network-partition/none/1");
    wait_until(
        Duration::from_secs(240),
        || {
            events_contain(&rd, "\"node-not-ready\"")
                || events_contain(&rd, "\"status\":\"Unknown\"")
        },
        "the partitioned node NotReady",
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !unhealthy_nodes().is_empty(),
        "the partition outlived nodedown"
    );
    wait_until(
        Duration::from_secs(150),
        || unhealthy_nodes().is_empty(),
        "the node back by itself after the lease",
    );
    assert!(
        !agent_namespaces().is_empty(),
        "the agent is still there before cleanup"
    );
    let res = run_ok(nodedown().arg("cleanup").arg(&dir));
    assert_eq!(res.status.code(), Some(0));
    wait_until(
        Duration::from_secs(120),
        || agent_namespaces().is_empty() && nodedown_namespaces().is_empty(),
        "cleanup removed the agent and the run namespace",
    );
}

/// The testenv cluster treated as foreign: reached by kubeconfig context alone (provider
/// existing, no Docker backend), guarded, and faulted through power hooks that call the docker
/// CLI as a user's `virsh`/`ipmitool` commands would.
#[test]
fn existing_cluster_by_kubeconfig_is_guarded_and_faulted_through_power_hooks() {
    let _g = lane();
    let out = tempdir();
    let ctx = context();
    // Without --allow-context: exit 2, nothing written, nothing created.
    let refused = run_ok(
        nodedown()
            .args(["run", "experiments/smoke.yaml", "--context", &ctx, "--out"])
            .arg(out.path().join("refused")),
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains(&format!("--allow-context {ctx}")));
    assert!(!out.path().join("refused").exists(), "nothing written");
    assert!(nodedown_namespaces().is_empty(), "nothing created");
    // --dry-run without power hooks: a node-shutdown has nothing to power the node off with,
    // refused as the real run would be (exit 2, naming the flags).
    let dry = run_ok(nodedown().args([
        "run",
        "experiments/smoke.yaml",
        "--context",
        &ctx,
        "--dry-run",
    ]));
    assert_eq!(dry.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&dry.stderr).contains("give power hooks (--power-off"));
    // With them, --dry-run prints every action and touches nothing.
    let dry = run_ok(nodedown().args([
        "run",
        "experiments/smoke.yaml",
        "--context",
        &ctx,
        "--dry-run",
        "--power-off",
        "docker kill {node}",
        "--power-on",
        "docker start {node}",
        "--power-state",
        "docker inspect -f '{{if .State.Running}}on{{else}}off{{end}}' {node}",
    ]));
    assert_eq!(dry.status.code(), Some(0));
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        text.contains("fault: power off the node of ledger-0"),
        "{text}"
    );
    assert!(nodedown_namespaces().is_empty(), "dry run created nothing");

    let reference = exported_image();
    let dir = out.path().join("run");
    let res = run_ok(
        nodedown()
            .args([
                "run",
                "experiments/smoke.yaml",
                "--context",
                &ctx,
                "--allow-context",
                &ctx,
                "--workload-image",
                &reference,
                "--node-control",
                "power-hooks",
                "--power-off",
                "docker kill {node}",
                "--power-on",
                "docker start {node}",
                "--power-state",
                "docker inspect -f '{{if .State.Running}}on{{else}}off{{end}}' {node}",
                "--out",
            ])
            .arg(&dir),
    );
    assert_eq!(
        res.status.code(),
        Some(0),
        "smoke passes through power hooks"
    );
    let hooks = std::fs::read_to_string(dir.join("hooks.jsonl")).unwrap();
    let ran: Vec<(String, i64)> = hooks
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| {
            (
                v["hook"].as_str().unwrap().to_string(),
                v["exit"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(ran.contains(&("powerOff".to_string(), 0)), "{hooks}");
    assert!(ran.contains(&("powerOn".to_string(), 0)), "{hooks}");
    let journal = std::fs::read_to_string(dir.join("smoke/default/1/journal.jsonl")).unwrap();
    assert!(journal.contains("\"backend\":\"power-hooks\""), "{journal}");
    let session = std::fs::read_to_string(dir.join("session.json")).unwrap();
    assert!(session.contains("\"provider\": \"existing\""), "{session}");
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// Node-local volumes (the data does not follow the pod): the integrity verdict is still
/// decided, from the ledger read through the API server.
#[test]
fn local_storage_integrity_is_read_through_the_api() {
    let _g = lane();
    let (status, report, dir) = run_experiment("experiments/local-storage.yaml", &[]);
    let run = &report.experiments[0].runs[0];
    assert_eq!(status.code(), Some(0), "{run:?}");
    let i = run.integrity.as_ref().expect("integrity verdict");
    assert_eq!(i.verdict, nodedown::report::Verdict::Pass, "{}", i.evidence);
    assert!(i.records > 0 && i.acknowledged > 0, "{i:?}");
    let events =
        std::fs::read_to_string(dir.path().join("run/local-storage/default/1/events.jsonl"))
            .unwrap();
    assert!(
        events.contains("through the API server"),
        "read through the pod proxy"
    );
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// A hung node that thaws after failover: the unfenced taint lets the old pod resume writing
/// (split brain, caught); fencing leaves nobody to resume.
#[test]
fn a_frozen_node_that_thaws_is_a_zombie_writer_unless_fenced() {
    let _g = lane();
    let (status, report, dir) = run_experiment("experiments/node-freeze.yaml", &[]);
    let runs = &report.experiments[0].runs;
    assert_eq!(
        status.code(),
        Some(0),
        "both variants meet their expectations:{}",
        not_passed(runs)
    );
    let unfenced = runs
        .iter()
        .find(|r| r.variant == "oos-taint-unfenced")
        .unwrap();
    let i = unfenced.integrity.as_ref().unwrap();
    assert!(i.split_brain && i.writers >= 2, "{}", i.evidence);
    assert!(
        unfenced
            .phases
            .iter()
            .any(|p| p.name.name() == "fault-healed"),
        "the thaw is on the timeline"
    );
    let events = std::fs::read_to_string(
        dir.path()
            .join("run/node-freeze/oos-taint-unfenced/1/events.jsonl"),
    )
    .unwrap();
    assert!(events.contains("\"fault\":\"node-freeze\""));
    let fenced = runs
        .iter()
        .find(|r| r.variant == "oos-taint-fenced")
        .unwrap();
    let i = fenced.integrity.as_ref().unwrap();
    assert_eq!(i.verdict, nodedown::report::Verdict::Pass, "{}", i.evidence);
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// Storage that attaches (testenv's CSI driver with the real external-attacher): the
/// out-of-service taint detaches the volume from the dead node at once (the controller-manager's
/// forced-detach counter says why), and a force-deleted pod alone meets a Multi-Attach error.
#[test]
fn attaching_storage_detaches_with_the_taint_and_multi_attach_blocks_a_force_delete() {
    let _g = lane();
    let (status, report, _dir) = run_experiment(
        "experiments/attach-detach.yaml",
        &["out-of-service-taint", "force-delete-pod-first-minute"],
    );
    let runs = &report.experiments[0].runs;
    assert_eq!(
        status.code(),
        Some(0),
        "both meet their expectations: {runs:#?}"
    );
    let oos = runs
        .iter()
        .find(|r| r.variant == "out-of-service-taint")
        .unwrap();
    let env = oos.environment.as_ref().expect("cluster facts");
    assert_eq!(env.attach_required, Some(true), "{env:?}");
    let at = |r: &nodedown::report::RunResult, name: &str| {
        r.phases
            .iter()
            .find(|p| p.name.name() == name)
            .map(|p| p.at_ms)
    };
    let (detached, attached) = (
        at(oos, "volume-detached").expect("volume-detached"),
        at(oos, "volume-attached").expect("volume-attached"),
    );
    let running = at(oos, "replacement-running").expect("replacement-running");
    assert!(
        detached <= attached && attached <= running,
        "{:?}",
        oos.phases
    );
    assert!(
        oos.metrics
            .contains_key(&nodedown::timeline::Metric::TimeToDetach)
            && oos
                .metrics
                .contains_key(&nodedown::timeline::Metric::TimeToAttach)
    );
    assert_eq!(
        oos.integrity.as_ref().map(|i| i.verdict),
        Some(nodedown::report::Verdict::Pass)
    );
    let counters = oos
        .controller_counters
        .as_ref()
        .expect("controller counters read");
    assert!(
        counters
            .iter()
            .any(|c| c.series.contains("forced_detaches") && c.series.contains("out-of-service")),
        "{counters:?}"
    );

    let fd = runs
        .iter()
        .find(|r| r.variant == "force-delete-pod-first-minute")
        .unwrap();
    assert!(at(fd, "multi-attach-error").is_some(), "{:?}", fd.phases);
    assert!(at(fd, "volume-detached").is_none(), "{:?}", fd.phases);
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// Pod failures, the node fine: a StatefulSet's killed container is restarted in the same pod
/// (a new incarnation), a Deployment's deleted pod is replaced under a new name; both recover
/// by themselves with nothing lost.
#[test]
fn pod_faults_recover_by_themselves_under_a_statefulset_and_a_deployment() {
    let _g = lane();
    let (status, report, _dir) = run_experiment(
        "experiments/pod-failure.yaml",
        &["statefulset-container-kill", "deployment-pod-delete"],
    );
    let runs = &report.experiments[0].runs;
    assert_eq!(status.code(), Some(0), "{runs:#?}");
    let kill = runs
        .iter()
        .find(|r| r.variant == "statefulset-container-kill")
        .unwrap();
    assert!(kill
        .phases
        .iter()
        .any(|p| p.name.name() == "container-restarted"));
    assert!(!kill
        .phases
        .iter()
        .any(|p| p.name.name() == "node-not-ready"));
    let del = runs
        .iter()
        .find(|r| r.variant == "deployment-pod-delete")
        .unwrap();
    assert!(del
        .phases
        .iter()
        .any(|p| p.name.name() == "old-pod-deleted"));
    for r in runs {
        assert_eq!(
            r.integrity.as_ref().map(|i| i.verdict),
            Some(nodedown::report::Verdict::Pass),
            "{}",
            r.id
        );
    }
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// The same power-off, remediation none: a Deployment's ReplicaSet replaces the pod at once,
/// and on storage that attaches the replacement is stuck on a Multi-Attach error.
#[test]
fn a_deployment_replaces_at_once_and_meets_the_multi_attach_error() {
    let _g = lane();
    let (status, report, _dir) = run_experiment(
        "experiments/deployment-vs-statefulset.yaml",
        &["deployment-attach"],
    );
    let run = &report.experiments[0].runs[0];
    assert_eq!(status.code(), Some(0), "{run:#?}");
    let at = |name: &str| {
        run.phases
            .iter()
            .find(|p| p.name.name() == name)
            .map(|p| p.at_ms)
    };
    let created = at("replacement-created").expect("a replacement");
    assert!(at("multi-attach-error").unwrap() >= created);
    assert!(at("replacement-running").is_none());
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// A clean poweroff with the kubelet's graceful node shutdown: the pod is ended by the kubelet
/// before the node goes, the StatefulSet replaces it; no remediation needed (shared storage).
#[test]
fn a_graceful_shutdown_recovers_by_itself() {
    let _g = lane();
    let (status, report, _dir) =
        run_experiment("experiments/graceful-shutdown.yaml", &["graceful"]);
    let run = &report.experiments[0].runs[0];
    assert_eq!(status.code(), Some(0), "{run:#?}");
    assert!(run
        .phases
        .iter()
        .any(|p| p.name.name() == "old-pod-deleted"));
    assert!(
        run.phases
            .iter()
            .any(|p| p.name.name() == "pod-shut-down-by-kubelet"),
        "the kubelet's shutdown manager ended the pod: {:?}",
        run.phases
    );
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// ReadWriteMany under a power-off with the pod force-deleted: the volume attaches to a second
/// node while the first still holds it, and the replacement runs at once.
#[test]
fn read_write_many_attaches_to_a_second_node_at_once() {
    let _g = lane();
    let (status, report, _dir) =
        run_experiment("experiments/access-modes.yaml", &["read-write-many"]);
    let run = &report.experiments[0].runs[0];
    assert_eq!(status.code(), Some(0), "{run:#?}");
    assert!(!run
        .phases
        .iter()
        .any(|p| p.name.name() == "multi-attach-error"));
    assert!(run
        .metrics
        .contains_key(&nodedown::timeline::Metric::TimeToAttach));
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// Remediation `external`: nodedown applies nothing; a separate process (kubectl, under its own
/// field manager name) adds the out-of-service taint; nodedown names it and measures the
/// recovery, and removes the taint at the heal.
#[test]
fn an_external_remediator_is_named_by_its_field_manager() {
    let _g = lane();
    let tmp = tempdir();
    let file = tmp.path().join("external.yaml");
    std::fs::write(
        &file,
        "name: external\n\
         workload: {kind: ledger, storageClass: nodedown-attach, size: 1Gi}\n\
         fault: {kind: node-shutdown, target: {nodeOf: ledger-0}}\n\
         remediation: {kind: external}\n\
         timeouts: {recovery: 2m}\n\
         expect: {recovered: true, integrity: pass, phases: {seen: [out-of-service-taint, volume-detached]}}\n",
    )
    .unwrap();
    let dir = tmp.path().join("run");
    let mut child = nodedown()
        .args(["run"])
        .arg(&file)
        .args(["--cluster-name", &cluster_name(), "--out"])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // The remediator: waits for a NotReady worker, then taints it under its own name.
    let mut target = String::new();
    wait_until(
        Duration::from_secs(120),
        || match unhealthy_nodes().first() {
            Some(n) => {
                target = n.clone();
                true
            }
            None => false,
        },
        "a node NotReady",
    );
    let taint = Command::new("kubectl")
        .args(["--context", &context(), "taint", "node", &target])
        .arg("node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
        .arg("--field-manager=e2e-remediator")
        .output()
        .unwrap();
    assert!(
        taint.status.success(),
        "{}",
        String::from_utf8_lossy(&taint.stderr)
    );
    let status = child.wait().unwrap();
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    let report = nodedown::report::json::from_str(&text).unwrap();
    let run = &report.experiments[0].runs[0];
    assert_eq!(status.code(), Some(0), "{run:#?}");
    assert_eq!(run.remediation.as_str(), "external");
    let detail = run.remediation_detail.as_deref().unwrap_or_default();
    assert!(detail.contains("e2e-remediator"), "{detail}");
    assert!(run
        .metrics
        .contains_key(&nodedown::timeline::Metric::TimeToRemediation));
    assert!(
        unhealthy_nodes().is_empty(),
        "taint removed and node back after the run"
    );
}

/// A frozen node is thawed on every exit path: nodedown SIGKILLed while the node is paused
/// leaves it paused; `nodedown cleanup` unpauses it from the journal.
#[test]
fn sigkill_during_a_freeze_then_cleanup_thaws_the_node() {
    let _g = lane();
    let out = tempdir();
    let dir = out.path().join("run");
    let mut child = nodedown()
        .args([
            "run",
            "experiments/node-freeze.yaml",
            "--only",
            "oos-taint-unfenced",
            "--cluster-name",
            &cluster_name(),
            "--out",
        ])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let rd = dir.join("node-freeze/oos-taint-unfenced/1");
    wait_until(
        Duration::from_secs(240),
        || events_contain(&rd, "\"fault-injected\""),
        "the node frozen",
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let paused = || {
        let out = Command::new("docker")
            .args([
                "ps",
                "--filter",
                &format!("label=io.x-k8s.kind.cluster={}", cluster_name()),
                "--filter",
                "status=paused",
                "--format",
                "{{.Names}}",
            ])
            .output()
            .unwrap();
        // This lane's node containers (another lane's test may freeze its own).
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|n| {
                SCOPE
                    .get()
                    .is_none_or(|lane| lane.iter().any(|l| l == n.trim()))
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(!paused().is_empty(), "SIGKILL left the node frozen");
    let res = run_ok(nodedown().arg("cleanup").arg(&dir));
    assert_eq!(res.status.code(), Some(0));
    assert_eq!(paused(), "", "no node container paused after cleanup");
    wait_until(
        Duration::from_secs(120),
        || unhealthy_nodes().is_empty(),
        "every node Ready after cleanup",
    );
    wait_until(
        Duration::from_secs(60),
        || nodedown_namespaces().is_empty(),
        "run namespace deleted",
    );
}

/// A fleet of 10 ledgers on one node, on attaching storage: with the taint every instance
/// comes back, each with its own phases and its own integrity verdict, and the run names the
/// slowest; a force-delete leaves every instance on a Multi-Attach error. Each instance
/// started on the target node (its own `workload-ready` event says so).
#[test]
fn a_fleet_on_one_node_recovers_instance_by_instance() {
    let _g = lane();
    let metrics_dir = tempdir();
    let metrics_file = metrics_dir.path().join("nodedown.prom");
    let (status, report, out) = run_experiment(
        "experiments/fleet.yaml",
        &[
            "oos-taint-10",
            "force-delete-10-first-minute",
            "--metrics-file",
            metrics_file.to_str().unwrap(),
        ],
    );
    let runs = &report.experiments[0].runs;
    assert_eq!(
        status.code(),
        Some(0),
        "both meet their expectations: {runs:#?}"
    );
    let oos = runs.iter().find(|r| r.variant == "oos-taint-10").unwrap();
    assert_eq!(oos.instances.len(), 10);
    let fleet = oos.fleet.as_ref().expect("fleet metrics");
    assert_eq!((fleet.instances, fleet.recovered), (10, 10));
    let all = fleet.time_to_all_ready_ms.expect("time-to-all-ready");
    // --metrics-file: the same figure for Prometheus, in seconds, beside the run's verdict.
    let metrics = std::fs::read_to_string(&metrics_file).expect("--metrics-file written");
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("nodedown_run_fleet_all_ready_seconds{")
                && l.contains("variant=\"oos-taint-10\"")
        })
        .unwrap_or_else(|| panic!("no all-ready series: {metrics}"));
    assert_eq!(
        line.rsplit(' ').next().unwrap().parse::<f64>().unwrap(),
        all as f64 / 1000.0,
        "{line}"
    );
    assert!(metrics.contains("verdict=\"pass\"} 1"), "{metrics}");
    let slowest = fleet.slowest_instance.clone().expect("slowest named");
    let target = oos.target_node.clone().expect("target node");
    let mut ready = Vec::new();
    for i in &oos.instances {
        assert_eq!(
            i.start_node.as_deref(),
            Some(target.as_str()),
            "{} started on the target",
            i.name
        );
        assert_ne!(
            i.replacement_node.as_deref(),
            Some(target.as_str()),
            "{}",
            i.name
        );
        let integrity = i
            .integrity
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no integrity", i.name));
        assert_eq!(
            integrity.verdict,
            nodedown::report::Verdict::Pass,
            "{}: {}",
            i.name,
            integrity.summary
        );
        assert!(integrity.acknowledged > 0, "{}: acks of its own", i.name);
        for m in ["time-to-detach", "time-to-attach", "time-to-ready"] {
            assert!(
                i.metrics
                    .contains_key(&nodedown::timeline::Metric::from_name(m).unwrap()),
                "{}: {m} in {:?}",
                i.name,
                i.metrics
            );
        }
        ready.push((
            i.metrics[&nodedown::timeline::Metric::TimeToReady],
            i.name.clone(),
        ));
    }
    let (max, last) = ready.iter().max_by_key(|(ms, _)| *ms).unwrap();
    assert_eq!(all, *max, "time-to-all-ready is the last instance's Ready");
    assert_eq!(
        oos.metrics[&nodedown::timeline::Metric::TimeToReady],
        all,
        "the run's time-to-ready is the fleet's"
    );
    assert_eq!(
        ready.iter().find(|(ms, _)| ms == max).unwrap().1,
        slowest,
        "the slowest named ({last})"
    );
    let integrity = oos.integrity.as_ref().expect("fleet integrity");
    assert!(
        integrity.summary.starts_with("10 of 10 instances pass"),
        "{}",
        integrity.summary
    );
    // Each instance's evidence in its own directory.
    let dir = out.path().join("run/fleet/oos-taint-10/1/instances");
    for i in &oos.instances {
        assert!(
            dir.join(&i.name).join("ledger/ledger.bin").is_file(),
            "{}",
            i.name
        );
        assert!(dir.join(&i.name).join("acks.jsonl").is_file(), "{}", i.name);
    }
    let summary = std::fs::read_to_string(out.path().join("run/summary.md")).unwrap();
    assert!(
        summary.contains("10 instances, 10 recovered, all Ready after"),
        "{summary}"
    );

    let fd = runs
        .iter()
        .find(|r| r.variant == "force-delete-10-first-minute")
        .unwrap();
    for i in &fd.instances {
        assert!(
            i.phases
                .iter()
                .any(|p| p.name.name() == "multi-attach-error"),
            "{}: {:?}",
            i.name,
            i.phases
        );
    }
    assert_eq!(fd.fleet.as_ref().unwrap().recovered, 0);
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the runs");
    assert!(nodedown_namespaces().is_empty(), "run namespaces gone");
}

/// A zone outage: both workers of zone-a powered off at the same instant under six ledgers
/// spread over them; each node is tainted on its own, each instance fails over from its own
/// node to another zone, nothing is lost.
#[test]
fn a_zone_outage_fails_every_instance_over_to_another_zone() {
    let _g = lock_cluster();
    let zone_a: Vec<String> =
        kubectl_json(&["get", "nodes", "-l", "topology.kubernetes.io/zone=zone-a"])["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
    assert_eq!(
        zone_a.len(),
        2,
        "testenv labels two workers zone-a: {zone_a:?}"
    );
    let (status, report, out) = run_experiment("experiments/zone-outage.yaml", &["oos-taint"]);
    let r = &report.experiments[0].runs[0];
    assert_eq!(status.code(), Some(0), "{r:#?}");
    let mut faulted = r.fault_nodes.clone();
    faulted.sort();
    assert_eq!(faulted, zone_a, "both nodes of the zone faulted");
    assert_eq!(r.instances.len(), 6);
    for node in &zone_a {
        let on: Vec<&nodedown::report::InstanceResult> = r
            .instances
            .iter()
            .filter(|i| i.start_node.as_deref() == Some(node.as_str()))
            .collect();
        assert_eq!(on.len(), 3, "three instances started on {node}");
        for i in on {
            let at = |p: &str| {
                i.phases
                    .iter()
                    .find(|x| x.name.name() == p)
                    .map(|x| x.at_ms)
            };
            assert!(
                at("node-not-ready").is_some(),
                "{}: its node's NotReady",
                i.name
            );
            assert!(
                at("out-of-service-taint").is_some(),
                "{}: its node's taint",
                i.name
            );
            let to = i.replacement_node.clone().unwrap();
            assert!(
                !zone_a.contains(&to),
                "{} went to {to}, another zone",
                i.name
            );
            assert_eq!(
                i.integrity.as_ref().map(|x| x.verdict),
                Some(nodedown::report::Verdict::Pass),
                "{}",
                i.name
            );
        }
    }
    assert_eq!(r.fleet.as_ref().unwrap().recovered, 6);
    // One remediation per node, each recorded with its node.
    let events =
        std::fs::read_to_string(out.path().join("run/zone-outage/oos-taint/1/events.jsonl"))
            .unwrap();
    for node in &zone_a {
        assert_eq!(
            events
                .lines()
                .filter(|l| l.contains("\"event\":\"remediation-applied\"")
                    && l.contains(&format!("\"node\":\"{node}\"")))
                .count(),
            1,
            "{node}"
        );
    }
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// One StatefulSet of three replicas, each on a node of its own (as the run recorded them): the
/// middle one's node is powered off and tainted; that replica comes back
/// on the worker without a replica, the other two serve on undisturbed, every replica keeps its
/// acknowledged writes, and JUnit names the ones the fault left alone.
#[test]
fn a_replicated_statefulset_fails_over_one_replica_and_the_others_serve_on() {
    let _g = lock_cluster();
    let (status, report, out) = run_experiment(
        "experiments/replicated-statefulset.yaml",
        &["out-of-service-taint"],
    );
    let runs = &report.experiments[0].runs;
    assert_eq!(status.code(), Some(0), "{}", not_passed(runs));
    let r = &runs[0];
    assert_eq!(r.instances.len(), 3);
    let starts: Vec<String> = r
        .instances
        .iter()
        .map(|i| i.start_node.clone().expect("each replica's node"))
        .collect();
    let mut distinct = starts.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "a node each: {starts:?}");
    let faulted = &r.instances[1];
    assert_eq!(faulted.name, "ledger-1");
    assert!(!faulted.unaffected);
    assert_eq!(faulted.start_node, r.target_node);
    let back = faulted
        .replacement_node
        .clone()
        .expect("ledger-1 came back");
    assert!(
        !starts.contains(&back),
        "{back}: a worker without a replica"
    );
    for i in [&r.instances[0], &r.instances[2]] {
        assert!(i.unaffected, "{}", i.name);
        let x = i
            .expectations
            .iter()
            .find(|x| x.name == "undisturbed")
            .expect("judged undisturbed");
        assert_eq!(x.verdict, nodedown::report::Verdict::Pass, "{}", x.evidence);
    }
    for i in &r.instances {
        let integrity = i.integrity.as_ref().expect("each replica's ledger");
        assert_eq!(
            integrity.verdict,
            nodedown::report::Verdict::Pass,
            "{}",
            i.name
        );
        assert!(integrity.acknowledged > 0, "{}: acks polled", i.name);
    }
    let junit = std::fs::read_to_string(out.path().join("run/junit.xml")).unwrap();
    assert!(
        junit.contains(r#"name="fleet.unaffected" value="ledger-0,ledger-2""#),
        "{junit}"
    );
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// `nodedown qualify` end to end on testenv's attaching class, one row only (the whole quick
/// matrix is a documented command, not CI's): the testdriver file's class and capabilities, the
/// class's attachRequired read from the cluster (the row expects detach and attach), the row run
/// and decided, the rows left out marked unknown, the rows that do not apply marked so with
/// their reason, and the sheet in four formats with its digest.
#[test]
fn qualify_turns_a_testdriver_file_into_a_sheet() {
    let _g = lane();
    let out = tempdir();
    let q = out.path().join("q");
    let res = run_ok(
        nodedown()
            .args([
                "qualify",
                "--testdriver",
                "tests/fixtures/testdriver/nodedown-attach.yaml",
                "--quick",
                "--repeat",
                "1",
                "--only",
                "power-off-taint",
                "--cluster-name",
            ])
            .arg(cluster_name())
            .arg("--out")
            .arg(&q),
    );
    assert_eq!(res.status.code(), Some(0));
    let row_path = q.join("experiments/power-off-taint.yaml");
    let row_exp =
        nodedown::spec::parse_str(&std::fs::read_to_string(&row_path).unwrap(), &row_path)
            .expect("the row's file is an experiment `nodedown run` reads");
    let seen = &row_exp.variants[0]
        .expect
        .as_ref()
        .unwrap()
        .phases
        .as_ref()
        .unwrap()
        .seen;
    assert_eq!(
        seen,
        &[
            nodedown::timeline::Phase::VolumeDetached,
            nodedown::timeline::Phase::VolumeAttached
        ],
        "the class attaches, as its CSIDriver says"
    );
    let sheet: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(q.join("sheet.json")).unwrap()).unwrap();
    assert_eq!(sheet["environment"]["storageClass"], "nodedown-attach");
    assert_eq!(sheet["environment"]["attachRequired"], true);
    let row = |id: &str| {
        sheet["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap()
            .clone()
    };
    let taint = row("power-off-taint");
    assert_eq!(taint["verdict"], "pass", "{taint}");
    assert_eq!(taint["runs"], 1);
    assert!(taint["timeToReady"]["p50Ms"].as_u64().unwrap() > 0);
    assert!(
        taint["whereTheTimeWent"].as_array().unwrap().len() >= 5,
        "{taint}"
    );
    assert_eq!(
        row("pod-delete")["verdict"],
        "unknown",
        "left out by --only"
    );
    let fd = row("force-delete");
    assert_eq!(fd["verdict"], "not-applicable");
    assert!(fd["reason"].as_str().unwrap().contains("6-minute"));
    assert_eq!(sheet["digest"].as_str().unwrap().len(), 64);
    for f in [
        "sheet.md",
        "sheet.html",
        "sheet.junit.xml",
        "runs/results.json",
    ] {
        assert!(q.join(f).is_file(), "{f}");
    }
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// The simulated provider end to end: a control-plane-only kind cluster of its own with kwok's
/// nodes; two nodes lost at once under ten attaching instances, with the out-of-service taint
/// (every replacement back, volumes detached and attached by the real controllers) and without
/// (nothing deleted, nothing back), and a variant whose `timeToRunning: {max: 1s}` no
/// failover can meet: it fails (exit 1), its JUnit case names the expectation. Then the
/// cluster is as before: every simulated node managed again, no taint of nodedown's left, no
/// run namespace. A second invocation on the same cluster is interrupted (SIGINT) while its
/// out-of-service taint waits out its `after`: exit 130, and the taint never lands — not at
/// the heal, nor when its delay would have ended. The cluster is deleted at the end.
#[test]
fn simulated_nodes_lost_at_once_recover_with_the_taint_and_not_without() {
    let _g = own_cluster();
    let name = "nodedown-sim-e2e";
    let dir = tempdir();
    let exp = dir.path().join("sim.yaml");
    std::fs::write(
        &exp,
        format!(
            "name: sim-e2e\n\
             cluster: {{provider: kwok, name: {name}, simulatedNodes: 12}}\n\
             workload: {{kind: ledger, storageClass: nodedown-attach, size: 1Gi, instances: 10}}\n\
             fault: {{kind: node-shutdown, target: {{count: 2}}}}\n\
             timeouts: {{recovery: 3m, steadyState: 5m}}\n\
             variants:\n\
             - name: taint\n  remediation: {{kind: out-of-service-taint, after: 0s}}\n  expect: {{recovered: true}}\n\
             - name: none\n  remediation: {{kind: none}}\n  timeouts: {{recovery: 40s, steadyState: 5m}}\n  expect: {{recovered: false}}\n\
             - name: too-fast\n  remediation: {{kind: out-of-service-taint, after: 0s}}\n  expect: {{recovered: true, timeToRunning: {{max: 1s}}}}\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    // --retain: the cluster is made by this invocation and read after it.
    let status = run_ok(
        nodedown()
            .arg("run")
            .arg(&exp)
            .arg("--out")
            .arg(&out)
            .arg("--retain"),
    )
    .status;
    let ctx = format!("kind-{name}");
    let nodes = simulated_nodes(&ctx);
    let namespaces = Command::new("kubectl")
        .args(["--context", &ctx, "get", "ns", "-o", "name"])
        .output()
        .unwrap();
    let interrupted = simulated_run_interrupted_mid_remediation(name, &dir);
    let _ = Command::new("kind")
        .args(["delete", "cluster", "--name", name])
        .status();
    interrupted.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        status.code(),
        Some(1),
        "taint and none pass, too-fast fails"
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    let fast = junit
        .split("<testcase")
        .find(|c| c.contains("sim-e2e/too-fast/1"))
        .unwrap_or_else(|| panic!("{junit}"));
    assert!(
        fast.contains("<failure") && fast.contains("timeToRunning fail: expected &lt;= 1s"),
        "{fast}"
    );
    for v in ["taint", "none"] {
        let case = junit
            .split("<testcase")
            .find(|c| c.contains(&format!("sim-e2e/{v}/1\"")))
            .unwrap();
        assert!(
            !case.contains("<failure") && !case.contains("<error"),
            "{case}"
        );
    }
    // One results.json for every provider: each run a result like a real run's, its figures
    // over the instances in `scale`.
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let read = |v: &str| -> serde_json::Value {
        results["experiments"][0]["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == format!("sim-e2e/{v}/1"))
            .unwrap_or_else(|| panic!("sim-e2e/{v}/1 in {results}"))
            .clone()
    };
    let taint = read("taint");
    assert_eq!(taint["provider"], "kwok");
    assert_eq!(taint["scale"]["cluster"]["nodes"], 12, "{taint}");
    assert_eq!(taint["scale"]["lostNodes"], 2);
    assert_eq!(taint["scale"]["instances"], 10);
    assert_eq!(taint["outcome"]["recovery"], "recovered");
    assert_eq!(taint["outcome"]["membersRecovered"], 10);
    let reached = |r: &serde_json::Value, m: &str| {
        let f = r["scale"]["milestones"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["milestone"] == m)
            .unwrap_or_else(|| panic!("milestone {m} in {r}"))
            .clone();
        (f["reached"].as_u64().unwrap(), f["of"].as_u64().unwrap())
    };
    for m in [
        "node-not-ready",
        "out-of-service-taint",
        "old-pod-deleted",
        "volume-detached",
        "volume-attached",
        "replacement-running",
    ] {
        let (r, of) = reached(&taint, m);
        assert!(r == of && of > 0, "{m}: {r}/{of}");
    }
    assert_eq!(taint["scale"]["taintReaction"]["count"], 2);
    let none = read("none");
    assert_eq!(reached(&none, "node-not-ready"), (2, 2));
    assert_eq!(
        reached(&none, "old-pod-deleted"),
        (0, 10),
        "no remediation: nothing force-deleted"
    );
    assert_eq!(reached(&none, "replacement-running"), (0, 10));
    let summary = std::fs::read_to_string(out.join("sim-e2e/taint/1/summary.md")).unwrap();
    assert!(summary.contains("SIMULATED"), "{summary}");
    // The runs' events are their evidence: `nodedown report` folds them again, and the results
    // it prints are the ones the invocation wrote (observations, milestones, verdicts).
    let events = std::fs::read_to_string(out.join("sim-e2e/taint/1/events.jsonl")).unwrap();
    for e in [
        "\"fault-injected\"",
        "\"remediation-applied\"",
        "\"pod-deleted\"",
    ] {
        assert!(events.contains(e), "{e} in the taint run's events");
    }
    let reported = run_ok(
        nodedown()
            .arg("report")
            .arg(&out)
            .args(["--format", "json"]),
    );
    let reported: serde_json::Value = serde_json::from_slice(&reported.stdout).unwrap();
    assert_eq!(
        reported, results,
        "the results folded again from events.jsonl"
    );
    // Two simulated invocations compare as curves, run by run: this one with itself changes
    // nothing.
    let same = run_ok(
        nodedown()
            .arg("compare")
            .arg(&out)
            .arg(out.join("results.json")),
    );
    assert_eq!(same.status.code(), Some(0));
    let same = String::from_utf8_lossy(&same.stdout);
    assert!(
        same.contains("simulated curves: 3 runs → 3 runs") && same.contains("no run changed"),
        "{same}"
    );
    assert!(std::fs::read_to_string(out.join("summary.md"))
        .unwrap()
        .contains("sim-e2e/none/1"));
    // The cluster as it was before the runs.
    let items = nodes["items"]
        .as_array()
        .unwrap_or_else(|| panic!("simulated nodes listed: {nodes}"));
    assert_eq!(items.len(), 12);
    for n in items {
        assert_eq!(
            n["metadata"]["labels"]["nodedown.dev/kwok-managed"], "up",
            "{n}"
        );
        let taints: Vec<&str> = n["spec"]["taints"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["key"].as_str()).collect())
            .unwrap_or_default();
        assert!(
            !taints.iter().any(|k| k.starts_with("nodedown.dev/placing")
                || *k == "node.kubernetes.io/out-of-service"),
            "{taints:?}"
        );
    }
    let namespaces = String::from_utf8_lossy(&namespaces.stdout);
    assert!(!namespaces.contains("namespace/nd-"), "{namespaces}");
}

/// The simulated nodes of the cluster behind kubeconfig context `ctx`, as `kubectl get -o json`
/// prints them (Null when it could not).
fn simulated_nodes(ctx: &str) -> serde_json::Value {
    let out = Command::new("kubectl")
        .args([
            "--context",
            ctx,
            "get",
            "nodes",
            "-l",
            "nodedown.dev/simulated=true",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    // Null when kubectl failed: read before the cluster is deleted, judged after.
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

/// On the simulated cluster `name` (made and kept by the caller): a run whose out-of-service
/// taint waits 40 s after NotReady is interrupted 28 s after its fault (NotReady after the
/// 16 s grace period, the taint still pending). Then: exit 130, no out-of-service taint and
/// every simulated node handed back to kwok (managed `up`) — also after the moment the pending
/// taint would have landed; the interrupted run is an error case in junit.xml.
fn simulated_run_interrupted_mid_remediation(name: &str, dir: &TestDir) -> Result<(), String> {
    let ctx = format!("kind-{name}");
    let exp = dir.path().join("sim-interrupt.yaml");
    std::fs::write(
        &exp,
        format!(
            "name: sim-int\n\
             cluster: {{provider: kwok, name: {name}, simulatedNodes: 12}}\n\
             workload: {{kind: ledger, storageClass: nodedown-attach, size: 1Gi, instances: 4}}\n\
             fault: {{kind: node-shutdown, target: {{count: 2}}}}\n\
             remediation: {{kind: out-of-service-taint, after: 40s}}\n\
             timeouts: {{recovery: 3m, steadyState: 5m}}\n\
             expect: {{recovered: true}}\n"
        ),
    )
    .unwrap();
    let nodes = || simulated_nodes(&ctx);
    let items = |v: &serde_json::Value| v["items"].as_array().cloned().unwrap_or_default();
    let oos = |n: &serde_json::Value| {
        n["spec"]["taints"].as_array().is_some_and(|t| {
            t.iter()
                .any(|t| t["key"] == "node.kubernetes.io/out-of-service")
        })
    };
    let out = dir.path().join("out-interrupted");
    let mut child = nodedown()
        .arg("run")
        .arg(&exp)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Between invocations no kwok heartbeats, so NotReady nodes say nothing here: the run's
    // journal says when the fault is applied (its heals are journaled just before). NotReady
    // follows after the 16 s grace period, the taint 40 s after that: interrupt in between.
    let journal = out.join("sim-int/default/1/journal.jsonl");
    let deadline = std::time::Instant::now() + Duration::from_secs(360);
    loop {
        if std::fs::read_to_string(&journal).is_ok_and(|j| j.contains("\"kwok\"")) {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the fault was not journaled within 6 minutes".into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(28));
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let interrupted_at = std::time::Instant::now();
    let status = child.wait().unwrap();
    if status.code() != Some(130) {
        return Err(format!(
            "interrupted exit code {:?}, not 130",
            status.code()
        ));
    }
    // Past the moment the pending taint would have been applied.
    let after = Duration::from_secs(45);
    std::thread::sleep(after.saturating_sub(interrupted_at.elapsed()));
    let v = nodes();
    for n in items(&v) {
        let node = n["metadata"]["name"].as_str().unwrap_or("?").to_string();
        if oos(&n) {
            return Err(format!(
                "{node}: out-of-service taint after the interrupt: {n}"
            ));
        }
        if n["metadata"]["labels"]["nodedown.dev/kwok-managed"] != "up" {
            return Err(format!("{node}: not heartbeating after the interrupt: {n}"));
        }
    }
    let junit = std::fs::read_to_string(out.join("junit.xml"))
        .map_err(|e| format!("junit.xml of the interrupted run: {e}"))?;
    if !(junit.contains("sim-int/default/1") && junit.contains("interrupted")) {
        return Err(format!("the interrupted run is an error case: {junit}"));
    }
    Ok(())
}

/// The objects of deploy/rbac.yaml and the test's own weaker copy, deleted however the test
/// ends.
struct RbacObjects;

impl Drop for RbacObjects {
    fn drop(&mut self) {
        let _ = kubectl(
            &["delete", "--ignore-not-found", "-f", "deploy/rbac.yaml"],
            None,
        );
        let _ = kubectl(
            &[
                "delete",
                "--ignore-not-found",
                "clusterrole/nodedown-less",
                "clusterrolebinding/nodedown-less",
            ],
            None,
        );
    }
}

/// A kubeconfig for the test cluster as ServiceAccount `nodedown/<sa>` (a token, the cluster's
/// server and CA), its context named `sa-<sa>`.
fn service_account_kubeconfig(dir: &Path, sa: &str) -> (PathBuf, String) {
    let token = kubectl_ok(
        &["-n", "nodedown", "create", "token", sa, "--duration", "1h"],
        None,
    );
    let token = String::from_utf8(token.stdout).unwrap().trim().to_string();
    let view = kubectl_json(&["config", "view", "--raw", "--minify"]);
    let cluster = &view["clusters"][0]["cluster"];
    let ctx = format!("sa-{sa}");
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "testenv", "cluster": cluster}],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": ctx, "context": {"cluster": "testenv", "user": sa}}],
        "current-context": ctx,
    });
    let path = dir.join(format!("kubeconfig-{sa}"));
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    (path, ctx)
}

/// deploy/rbac.yaml is enough: the smoke experiment run as its ServiceAccount (kubeconfig token,
/// power hooks) passes. With one verb taken away (update on nodes, which the out-of-service
/// taint needs) the invocation is refused before anything is touched, naming the permission
/// and why (exit 3): no namespace made, no lock taken.
#[test]
fn the_shipped_role_runs_the_smoke_and_a_missing_verb_is_refused_before_anything() {
    let _g = lock_cluster();
    let _cleanup = RbacObjects;
    kubectl_ok(&["apply", "-f", "deploy/rbac.yaml"], None);
    // The same ClusterRole without `update` on nodes, for a second ServiceAccount.
    let role = kubectl_json(&["get", "clusterrole", "nodedown"]);
    let mut rules = role["rules"].as_array().unwrap().clone();
    for r in &mut rules {
        if r["resources"][0] == "nodes" {
            let verbs: Vec<serde_json::Value> = r["verbs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| *v != "update")
                .cloned()
                .collect();
            r["verbs"] = serde_json::Value::Array(verbs);
        }
    }
    let less = serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": "nodedown-less", "namespace": "nodedown"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "nodedown-less"}, "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "nodedown-less"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nodedown-less"},
             "subjects": [{"kind": "ServiceAccount", "name": "nodedown-less", "namespace": "nodedown"}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "nodedown-less", "namespace": "default"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "nodedown"},
             "subjects": [{"kind": "ServiceAccount", "name": "nodedown-less", "namespace": "nodedown"}]}
        ]
    });
    kubectl_ok(&["apply", "-f", "-"], Some(&less.to_string()));
    let out = tempdir();
    let run_as = |sa: &str, dir: &Path| {
        let (kubeconfig, ctx) = service_account_kubeconfig(out.path(), sa);
        run_ok(
            nodedown()
                .env("KUBECONFIG", &kubeconfig)
                .args([
                    "run",
                    "experiments/smoke.yaml",
                    "--context",
                    &ctx,
                    "--allow-context",
                    &ctx,
                    "--workload-image",
                    &exported_image(),
                    "--node-control",
                    "power-hooks",
                ])
                .args(POWER_HOOKS)
                .arg("--out")
                .arg(dir),
        )
    };
    // One verb short: refused before anything, naming it.
    let refused = run_as("nodedown-less", &out.path().join("less"));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{said}");
    assert!(
        said.contains(
            "update nodes (all namespaces / cluster-wide): adding the out-of-service taint"
        ),
        "{said}"
    );
    assert!(said.contains("deploy/rbac.yaml"), "{said}");
    assert!(nodedown_namespaces().is_empty(), "nothing deployed");
    assert_eq!(lock_leases(), Vec::<String>::new(), "no lock taken");
    // The shipped role: the smoke experiment passes.
    let done = run_as("nodedown", &out.path().join("run"));
    assert_eq!(
        done.status.code(),
        Some(0),
        "smoke as the ServiceAccount: {}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// The run directories an in-cluster test's runs leave on testenv's shared storage (a pod
/// cannot reach the host directory behind it, so those runs do not remove them): the `nd-*`
/// entries that were not there when the guard was made, removed when it drops. The cluster
/// tests run one at a time, so the new entries are this test's.
struct SharedDirsMade(std::collections::HashSet<std::ffi::OsString>);

impl SharedDirsMade {
    fn now() -> SharedDirsMade {
        SharedDirsMade(shared_entries())
    }
}

fn shared_entries() -> std::collections::HashSet<std::ffi::OsString> {
    std::fs::read_dir(crate_shared_dir())
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name())
                .filter(|n| n.to_string_lossy().starts_with("nd-"))
                .collect()
        })
        .unwrap_or_default()
}

impl Drop for SharedDirsMade {
    fn drop(&mut self) {
        for name in shared_entries().difference(&self.0) {
            let _ = std::fs::remove_dir_all(Path::new(crate_shared_dir()).join(name));
        }
    }
}

/// What the in-cluster test made, deleted however it ends.
struct InClusterObjects;

impl Drop for InClusterObjects {
    fn drop(&mut self) {
        let _ = kubectl(
            &[
                "-n",
                "nodedown",
                "delete",
                "--ignore-not-found",
                "cronjob/nodedown",
                "configmap/nodedown-experiments",
            ],
            None,
        );
        let _ = kubectl(
            &["delete", "--ignore-not-found", "-f", "deploy/rbac.yaml"],
            None,
        );
    }
}

/// The YAML documents of a file under deploy/, as JSON values.
fn deploy_docs(name: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(Path::new("deploy").join(name))
        .unwrap()
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect()
}

/// nodedown inside the cluster it tests: deploy/rbac.yaml, the ConfigMap of deploy/job.yaml
/// (its experiment on testenv's shared class) and deploy/cronjob.yaml with nodedown's exported
/// image (suspended; its jobTemplate run at once as a Job). It runs as the ServiceAccount, faults through the node agent, never the node it
/// runs on, writes its results to its volume (here a host directory this machine shares with
/// the nodes), its summary to the pod log and its metrics to a real Pushgateway on this
/// machine's docker bridge, read back.
#[test]
fn the_cronjob_runs_an_experiment_inside_the_cluster_and_spares_its_own_node() {
    let _g = lock_cluster();
    let _cleanup = InClusterObjects;
    let _dirs = SharedDirsMade::now();
    kubectl_ok(&["apply", "-f", "deploy/rbac.yaml"], None);
    let image = exported_image();
    // The shipped Job as a user would apply it (placeholders filled): the API server takes it.
    let job = std::fs::read_to_string("deploy/job.yaml")
        .unwrap()
        .replace("NODEDOWN_IMAGE", &image)
        .replace("NODEDOWN_STORAGE_CLASS", "nodedown-shared");
    kubectl_ok(&["apply", "--dry-run=server", "-f", "-"], Some(&job));
    // The ConfigMap, its experiment on testenv's storage.
    let mut config_map = deploy_docs("job.yaml").remove(0);
    let experiment = config_map["data"]["kubelet-stop.yaml"]
        .as_str()
        .unwrap()
        .replace("NODEDOWN_STORAGE_CLASS", "nodedown-shared");
    config_map["data"]["kubelet-stop.yaml"] = serde_json::Value::String(experiment);
    kubectl_ok(&["apply", "-f", "-"], Some(&config_map.to_string()));
    // The CronJob: the image; a throwaway cluster's container nodes (--test-nodes); results on
    // the directory the nodes share with this machine.
    let results = format!("in-cluster-{}", std::process::id());
    let mut cron = deploy_docs("cronjob.yaml").remove(0);
    let pod = &mut cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    let text = pod.to_string().replace("NODEDOWN_IMAGE", &image);
    *pod = serde_json::from_str(&text).unwrap();
    // The Pushgateway in the control-plane node's container (never a fault target): the pods
    // reach the node network, and this machine reaches it too.
    let control_plane = format!("{}-control-plane", cluster_name());
    let gateway = pushgateway::start_in_node(
        &control_plane,
        &node_address(&control_plane),
        Path::new(crate_shared_dir()),
    );
    let args = pod["containers"][0]["args"].as_array_mut().unwrap();
    args.push("--test-nodes".into());
    args.push("--pushgateway".into());
    args.push(gateway.url.clone().into());
    pod["volumes"][1] = serde_json::json!({
        "name": "results",
        "hostPath": {"path": format!("/mnt/nodedown-shared/{results}"), "type": "DirectoryOrCreate"}
    });
    // Suspended: it never fires by itself. Its jobTemplate runs at once as the Job the
    // controller would make (`kubectl create job --from=cronjob/…`): when a CronJob fires is
    // Kubernetes' business, what its Job does is nodedown's — and waiting for the next minute
    // cost this test 30 s on average.
    cron["spec"]["schedule"] = "* * * * *".into();
    cron["spec"]["suspend"] = true.into();
    kubectl_ok(&["apply", "-f", "-"], Some(&cron.to_string()));
    let first = "nodedown-e2e-first".to_string();
    kubectl_ok(
        &[
            "-n",
            "nodedown",
            "create",
            "job",
            &first,
            "--from=cronjob/nodedown",
        ],
        None,
    );
    let succeeded = job_succeeded("nodedown", &first, Duration::from_secs(600));
    let logs = kubectl(&["-n", "nodedown", "logs", &format!("job/{first}")], None);
    let log =
        String::from_utf8_lossy(&logs.stdout).to_string() + &String::from_utf8_lossy(&logs.stderr);
    assert!(succeeded, "the Job did not complete: {log}");
    assert!(
        log.contains("1 run: 1 passed"),
        "the summary in the pod log: {log}"
    );
    // Where the runner ran, and what the run faulted.
    let pods = kubectl_json(&[
        "-n",
        "nodedown",
        "get",
        "pods",
        "-l",
        &format!("job-name={first}"),
    ]);
    let runner_node = pods["items"][0]["spec"]["nodeName"]
        .as_str()
        .unwrap()
        .to_string();
    let host_dir = Path::new(crate_shared_dir()).join(&results).join("runs");
    let invocation = std::fs::read_dir(&host_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", host_dir.display()))
        .flatten()
        .next()
        .expect("one invocation's directory")
        .path();
    let report: nodedown::report::Report = nodedown::report::json::from_str(
        &std::fs::read_to_string(invocation.join("results.json")).unwrap(),
    )
    .unwrap();
    let run = &report.experiments[0].runs[0];
    assert_eq!(run.verdict, nodedown::report::Verdict::Pass, "{run:#?}");
    let target = run.target_node.clone().expect("a target node");
    assert_ne!(
        target, runner_node,
        "the runner's own node is never faulted"
    );
    assert!(
        run.replacement_node.as_deref() != Some(runner_node.as_str()),
        "no workload on the runner's node"
    );
    let session = std::fs::read_to_string(invocation.join("session.json")).unwrap();
    assert!(session.contains("\"context\": \"in-cluster\""), "{session}");
    // The run's metrics, pushed from inside the cluster.
    let pushed = pushgateway::nodedown_families(&gateway);
    assert!(
        pushed
            .lines()
            .any(|l| l.starts_with("nodedown_run_verdict{")
                && l.contains("experiment=\"in-cluster-kubelet-stop\"")
                && l.contains("verdict=\"pass\"")
                && l.ends_with(" 1")),
        "the pass in the Pushgateway: {pushed}"
    );
    let _ = std::fs::remove_dir_all(Path::new(crate_shared_dir()).join(&results));
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// A kind node container's address on the kind network.
fn node_address(container: &str) -> String {
    let out = Command::new("docker")
        .args([
            "inspect",
            "-f",
            "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
            container,
        ])
        .output()
        .expect("docker");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|a| a.parse::<std::net::Ipv4Addr>().is_ok())
        .unwrap_or_else(|| panic!("no IPv4 address of {container}: {out:?}"))
        .to_string()
}

/// Waits until Job `ns/name` succeeded (true) or failed (false), at most `timeout`.
fn job_succeeded(ns: &str, name: &str, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let job = kubectl_json(&["-n", ns, "get", "job", name]);
        if job["status"]["succeeded"].as_u64().unwrap_or(0) > 0 {
            return true;
        }
        if job["status"]["failed"].as_u64().unwrap_or(0) > 0 || Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// testenv's host directory behind /mnt/nodedown-shared in every node.
fn crate_shared_dir() -> &'static str {
    nodedown::vocab::DEFAULT_SHARED_DIR
}

/// The Helm release of the chart test, uninstalled however the test ends.
struct HelmRelease(PathBuf);

impl Drop for HelmRelease {
    fn drop(&mut self) {
        let _ = Command::new(&self.0)
            .args([
                "--kube-context",
                &context(),
                "uninstall",
                "nd",
                "--namespace",
                "nodedown-helm",
            ])
            .output();
        let _ = kubectl(
            &["delete", "namespace", "nodedown-helm", "--ignore-not-found"],
            None,
        );
    }
}

/// The Helm chart installed into testenv with the real helm (no schedule: one Job), its
/// experiment on testenv's storage: the release's ServiceAccount runs it to a pass, its results
/// on the host directory the nodes share.
#[test]
fn the_helm_chart_installs_and_its_job_runs_an_experiment() {
    let _g = lock_cluster();
    let helm = std::env::var_os("NODEDOWN_HELM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/nodedown/helm-v4.3.2/helm"));
    let _release = HelmRelease(helm.clone());
    let _dirs = SharedDirsMade::now();
    let image = exported_image();
    let (repository, tag) = image.rsplit_once(':').unwrap();
    let results = format!("helm-{}", std::process::id());
    let experiment = "name: helm-kubelet-stop\ncluster: {provider: existing}\nworkload: {kind: writer, storageClass: nodedown-shared, size: 1Gi}\nfault: {kind: kubelet-stop, target: {nodeOf: writer-0}}\nremediation: {kind: out-of-service-taint, after: 0s}\ntimeouts: {recovery: 3m}\nexpect: {recovered: true}\n";
    let values = serde_json::json!({
        "image": {"repository": repository, "tag": tag},
        "schedule": "",
        "experiments": {"kubelet-stop.yaml": experiment},
        "extraArgs": ["--test-nodes"],
        "results": {"hostPath": format!("/mnt/nodedown-shared/{results}")},
    });
    let out = tempdir();
    let values_file = out.path().join("values.json");
    std::fs::write(&values_file, values.to_string()).unwrap();
    let installed = Command::new(&helm)
        .args([
            "--kube-context",
            &context(),
            "install",
            "nd",
            "charts/nodedown",
            "--namespace",
            "nodedown-helm",
            "--create-namespace",
            "--values",
        ])
        .arg(&values_file)
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "{}{}",
        String::from_utf8_lossy(&installed.stdout),
        String::from_utf8_lossy(&installed.stderr)
    );
    let waited = kubectl(
        &[
            "-n",
            "nodedown-helm",
            "wait",
            "--for=condition=complete",
            "job/nd",
            "--timeout=600s",
        ],
        None,
    );
    let logs = kubectl(&["-n", "nodedown-helm", "logs", "job/nd"], None);
    let log =
        String::from_utf8_lossy(&logs.stdout).to_string() + &String::from_utf8_lossy(&logs.stderr);
    assert!(
        waited.status.success(),
        "the release's Job did not complete: {log}"
    );
    assert!(log.contains("1 run: 1 passed"), "{log}");
    let host_dir = Path::new(crate_shared_dir()).join(&results).join("runs");
    let invocation = std::fs::read_dir(&host_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", host_dir.display()))
        .flatten()
        .next()
        .expect("one invocation's directory")
        .path();
    assert!(invocation.join("results.json").is_file());
    let _ = std::fs::remove_dir_all(Path::new(crate_shared_dir()).join(&results));
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// What a bundle test left in the cluster, deleted from its journal however the test ends.
struct BundleLeft(PathBuf);

impl Drop for BundleLeft {
    fn drop(&mut self) {
        let _ = nodedown().arg("cleanup").arg(&self.0).output();
    }
}

/// The conformance-style bundle (issue 32): one command deploys `qualify --quick` as a Job into
/// testenv with its testdriver file, follows its log, fetches the sheet, JUnit and run
/// directories as a tarball through exec, and exits with the qualification's code; with
/// --keep its objects stay until `nodedown cleanup OUT` deletes them from its journal.
#[test]
fn the_bundle_runs_qualify_in_the_cluster_and_brings_the_sheet_back() {
    let _g = lock_cluster();
    let image = exported_image();
    let out = tempdir();
    let b = out.path().join("bundle");
    let _left = BundleLeft(b.clone());
    let _dirs = SharedDirsMade::now();
    let ctx = context();
    let res = run_ok(
        nodedown()
            .args(["bundle", "run", "--context", &ctx, "--allow-context", &ctx])
            .args(["--image", &image, "--keep"])
            .args([
                "--testdriver",
                "tests/fixtures/testdriver/nodedown-attach.yaml",
            ])
            .arg("--out")
            .arg(&b)
            .args(["--", "--quick", "--repeat", "1", "--only", "pod-delete"])
            .arg("--test-nodes"),
    );
    assert_eq!(
        res.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    // The qualification's log streamed to stdout while it ran.
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(stdout.contains("1 run: 1 passed"), "{stdout}");
    assert!(b.join("bundle.tar.gz").is_file());
    assert_eq!(
        std::fs::read_to_string(b.join("exit-code")).unwrap().trim(),
        "0"
    );
    let q = b.join("qualification");
    let sheet: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(q.join("sheet.json")).unwrap()).unwrap();
    assert_eq!(sheet["environment"]["storageClass"], "nodedown-attach");
    let row = sheet["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "pod-delete")
        .expect("the pod-delete row")
        .clone();
    assert_eq!(row["verdict"], "pass", "{row}");
    assert_eq!(row["runs"], 1);
    let junit = std::fs::read_to_string(q.join("sheet.junit.xml")).unwrap();
    assert!(junit.contains("pod-delete"), "{junit}");
    let results = std::fs::read_to_string(q.join("runs/results.json")).unwrap();
    let report: nodedown::report::Report = nodedown::report::json::from_str(&results).unwrap();
    assert_eq!(report.experiments[0].runs.len(), 1);
    let session = std::fs::read_to_string(q.join("runs/session.json")).unwrap();
    assert!(session.contains("\"context\": \"in-cluster\""), "{session}");
    assert!(std::fs::read_to_string(b.join("pod.log"))
        .unwrap()
        .contains("sheet:"));
    // --keep: the namespace and the cluster-scoped role stay, until cleanup deletes them.
    assert!(kubectl(&["get", "namespace", "nodedown-bundle"], None)
        .status
        .success());
    assert!(kubectl(&["get", "clusterrole", "nodedown-bundle"], None)
        .status
        .success());
    let cleaned = run_ok(nodedown().arg("cleanup").arg(&b));
    assert_eq!(cleaned.status.code(), Some(0));
    assert!(!kubectl(&["get", "clusterrole", "nodedown-bundle"], None)
        .status
        .success());
    assert!(
        !kubectl(&["-n", "default", "get", "role", "nodedown-bundle"], None)
            .status
            .success()
    );
    let ns = kubectl(
        &[
            "get",
            "namespace",
            "nodedown-bundle",
            "-o",
            "jsonpath={.status.phase}",
        ],
        None,
    );
    assert!(
        !ns.status.success() || String::from_utf8_lossy(&ns.stdout) == "Terminating",
        "the namespace deleted"
    );
    assert!(
        unhealthy_nodes().is_empty(),
        "cluster whole after the bundle"
    );
}

/// Issue 30: classes the way the upstream suites make them. `FromName` (a class whose
/// provisioner is DriverInfo.Name) and `FromFile` (a manifest beside the testdriver file, under
/// a name of the run's own): the class is created, its volume provisioned by testenv's real
/// external-provisioner through the driver's CreateVolume, the row runs to a pass, and the
/// class is gone afterwards (its journal healed). With FromName also the row whose node stays
/// down: no pod answers for the ledger (a provisioned volume is read through its pod), so the
/// read gives up after its timeout instead of holding the run (it held it for minutes), and the
/// row, which expects no recovery, passes. It holds the whole cluster: the FromFile class binds
/// Immediate on a zonal driver, which nodedown refuses to confine to some nodes (a volume may
/// get a zone none of them is in: `runner::schedule::unconfinable`).
#[test]
fn qualify_makes_the_class_of_from_name_and_from_file_and_deletes_it() {
    let _g = lock_cluster();
    let out = tempdir();
    for (fixture, rows) in [
        ("vendor-fromname.yaml", "pod-delete,power-off-none"),
        ("vendor-fromfile.yaml", "pod-delete"),
    ] {
        let q = out.path().join(fixture);
        let res = run_ok(
            nodedown()
                .args(["qualify", "--testdriver"])
                .arg(format!("tests/fixtures/testdriver/{fixture}"))
                .args(["--quick", "--repeat", "1", "--only", rows])
                .arg("--cluster-name")
                .arg(cluster_name())
                .arg("--out")
                .arg(&q),
        );
        assert_eq!(
            res.status.code(),
            Some(0),
            "{fixture}: {}",
            String::from_utf8_lossy(&res.stderr)
        );
        let sheet: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(q.join("sheet.json")).unwrap()).unwrap();
        let class = sheet["environment"]["storageClass"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(class.starts_with("nd-qualify-"), "{fixture}: {class}");
        assert_eq!(sheet["environment"]["provisioner"], "csi.nodedown.dev");
        let row = sheet["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == "pod-delete")
            .unwrap()
            .clone();
        assert_eq!(row["verdict"], "pass", "{fixture}: {row}");
        if rows.contains("power-off-none") {
            let none = sheet["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["id"] == "power-off-none")
                .unwrap()
                .clone();
            assert_eq!(none["verdict"], "pass", "{none}");
            let events = std::fs::read_to_string(
                q.join("runs/qualify-power-off-none/power-off-none/1/events.jsonl"),
            )
            .unwrap();
            assert!(
                events.contains("did not answer through the API server"),
                "the ledger read gave up, and said so"
            );
        }
        // Provisioned dynamically: the run's claim was bound to a PV the provisioner made.
        let events =
            std::fs::read_to_string(q.join("runs/qualify-pod-delete/pod-delete/1/events.jsonl"))
                .unwrap();
        assert!(
            events.contains("\"pv\":\"pvc-"),
            "{fixture}: the volume attached is a provisioned PV (pvc-…)"
        );
        // The class is gone, and its journal says it was deleted.
        assert!(
            !kubectl(&["get", "storageclass", &class], None)
                .status
                .success(),
            "{fixture}: StorageClass {class} deleted"
        );
        let journal = std::fs::read_to_string(q.join("runs/storage-class/journal.jsonl")).unwrap();
        assert!(
            journal.contains("delete-storage-class") && journal.contains("\"healed\""),
            "{journal}"
        );
    }
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the runs");
}

/// `nodedown qualify --testdriver tests/fixtures/testdriver/<fixture> --quick --repeat 1 --only
/// <row> --out <out>` on the test cluster, which must exit 0: its stderr and the row of its
/// sheet.
fn qualify_one_row(fixture: &str, row: &str, out: &Path) -> (String, serde_json::Value) {
    let res = run_ok(
        nodedown()
            .args(["qualify", "--testdriver"])
            .arg(format!("tests/fixtures/testdriver/{fixture}"))
            .args(["--quick", "--repeat", "1", "--only", row])
            .arg("--cluster-name")
            .arg(cluster_name())
            .arg("--out")
            .arg(out),
    );
    let stderr = String::from_utf8_lossy(&res.stderr).into_owned();
    assert_eq!(
        res.status.code(),
        Some(0),
        "{fixture} --only {row}: {stderr}"
    );
    let sheet: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sheet.json")).unwrap()).unwrap();
    let found = sheet["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == row)
        .unwrap_or_else(|| panic!("no row {row} in the sheet: {sheet}"))
        .clone();
    (stderr, found)
}

/// The volume-limits row on testenv's driver with an attach limit (limits.csi.nodedown.dev,
/// FromName): every other node of the run filled to the limit its CSINode publishes, the
/// ledger's node powered off and tainted, the replacement left Pending by the scheduler.
#[test]
fn qualify_runs_the_volume_limits_row_onto_full_nodes() {
    let _g = lane();
    // The limit as the kubelet recorded it from the driver, read here, not by nodedown: on a
    // node of this test's lane (another lane's may be restarting, its drivers not registered).
    let node = SCOPE.get().expect("a lane")[0].clone();
    let csinode = kubectl_json(&["get", "csinode", &node, "-o", "json"]);
    let limit = csinode["spec"]["drivers"]
        .as_array()
        .unwrap_or_else(|| panic!("{node}'s CSINode lists its drivers: {csinode}"))
        .iter()
        .find(|d| d["name"] == "limits.csi.nodedown.dev")
        .and_then(|d| d["allocatable"]["count"].as_u64())
        .unwrap_or_else(|| panic!("testenv's limits driver publishes its limit: {csinode}"));
    let out = tempdir();
    let q = out.path().join("limits");
    let (_, row) = qualify_one_row("nodedown-limits.yaml", "volume-limits", &q);
    assert_eq!(row["verdict"], "pass", "{row}");
    let experiment = std::fs::read_to_string(q.join("experiments/volume-limits.yaml")).unwrap();
    assert!(experiment.contains("fillAttachLimit: true"), "{experiment}");
    let run = q.join("runs/qualify-volume-limits/volume-limits/1");
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    // The scheduler's own words: the nodes left had no room for the driver's volume.
    assert!(
        events.contains("at the recovery timeout, pod ledger-0: not scheduled")
            && events.contains("exceed max volume count"),
        "the scheduler refused the full nodes: {events}"
    );
    // From the scheduler's Scheduled events: each filled node got exactly `limit` fillers, and
    // the ledger's node none.
    let mut per_node: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for m in events.split("Successfully assigned ").skip(1) {
        let m = m.split('"').next().unwrap();
        let (pod, node) = m.split_once(" to ").unwrap();
        if pod.contains("/filler-") {
            per_node
                .entry(node.to_string())
                .or_default()
                .insert(pod.to_string());
        }
    }
    assert!(!per_node.is_empty(), "filler pods were scheduled: {events}");
    for (node, pods) in &per_node {
        assert_eq!(pods.len() as u64, limit, "{node}: {pods:?}");
    }
    // The class made for the run is gone.
    let classes = kubectl_json(&["get", "storageclass", "-o", "json"]);
    assert!(
        !classes["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["provisioner"] == "limits.csi.nodedown.dev"
                && c["metadata"]["name"] != "nodedown-limits"),
        "the FromName class was deleted: {classes}"
    );
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// The block row on testenv's attaching driver, dynamically provisioned (FromName): the claim
/// is a raw block volume, the ledger writes its records to the device, the node is powered off
/// and tainted, the replacement maps the same volume on another node and continues the ledger.
#[test]
fn qualify_runs_the_block_row_on_a_raw_block_volume() {
    let _g = lane();
    let out = tempdir();
    let q = out.path().join("block");
    let (_, row) = qualify_one_row("vendor-fromname.yaml", "block", &q);
    assert_eq!(row["verdict"], "pass", "{row}");
    let run = q.join("runs/qualify-block/block/1");
    let experiment = std::fs::read_to_string(q.join("experiments/block.yaml")).unwrap();
    assert!(
        experiment.contains("volumeMode: Block"),
        "the row's workload asks for a raw block volume: {experiment}"
    );
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    // The ledger came from the device through the serving pod, and holds whole records of
    // the ledger's format, by two incarnations (the first pod and its replacement).
    let ledger = std::fs::read(run.join("ledger/ledger.bin")).unwrap();
    assert!(
        !ledger.is_empty() && ledger.len() % 256 == 0,
        "{} bytes",
        ledger.len()
    );
    assert!(
        ledger.chunks(256).all(|r| &r[..4] == b"NDLG"),
        "whole records"
    );
    let uids: std::collections::BTreeSet<&[u8]> = ledger.chunks(256).map(|r| &r[8..44]).collect();
    assert_eq!(uids.len(), 2, "two incarnations wrote the device");
    assert!(
        events.contains("through the API server"),
        "a block ledger is read through its pod"
    );
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}

/// The zone-lost row on testenv's driver, which makes zonal volumes like a cloud disk (the
/// FromName class of a testdriver file with TopologyKeys, WaitForFirstConsumer): both workers
/// of the volume's zone powered off and tainted, the replacement stays Pending — the volume's
/// PV is bound to its zone — and the row passes because that is what a zonal driver does.
#[test]
fn qualify_loses_the_zone_of_a_zonal_volume_and_expects_no_recovery() {
    let _g = lock_cluster();
    let out = tempdir();
    let q = out.path().join("zone");
    let (stderr, row) = qualify_one_row("vendor-fromname.yaml", "zone-lost", &q);
    assert!(
        stderr.contains("volumeBindingMode WaitForFirstConsumer (the driver has TopologyKeys)"),
        "{stderr}"
    );
    assert_eq!(row["verdict"], "pass", "{row}");
    let experiment = std::fs::read_to_string(q.join("experiments/zone-lost.yaml")).unwrap();
    assert!(experiment.contains("zone: zone-a"), "{experiment}");
    // Not from nodedown's own verdict: the scheduler said why the replacement cannot run (the
    // PV's node affinity), and the PV the provisioner made is bound to the lost zone.
    let run = q.join("runs/qualify-zone-lost/zone-lost/1");
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert!(
        events.contains("at the recovery timeout, pod ledger-0: not scheduled")
            && events.contains("didn't match PersistentVolume's node affinity"),
        "the scheduler refused the other zones for the volume's node affinity: {events}"
    );
    assert!(unhealthy_nodes().is_empty(), "cluster whole after the run");
}
