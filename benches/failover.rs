//! Failover benchmark: runs `experiments/smoke.yaml` N times (default 10, NODEDOWN_BENCH_RUNS)
//! on the testenv cluster (NODEDOWN_TEST_CLUSTER, default nodedown) and prints distributions:
//! - taint reaction latency: NotReady observed → out-of-service taint applied on the API server
//!   (the update returned), and → the taint seen back through the watch;
//! - the gap between the harness's Running timestamp of the replacement and the container's
//!   `startedAt` (which the kubelet reports in whole seconds);
//! - the harness process's peak RSS and CPU time.
//!
//! Run with `cargo bench --bench failover`. It asserts nothing about speed: it prints figures.

use nodedown::timeline::{Event, EventKind};
use std::path::Path;
use std::process::Command;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn summary(name: &str, unit: &str, mut xs: Vec<f64>) {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{name:<44} n={:<3} min={:>8.1} p50={:>8.1} p99={:>8.1} max={:>8.1} {unit}",
        xs.len(),
        xs.first().copied().unwrap_or(f64::NAN),
        percentile(&xs, 50.0),
        percentile(&xs, 99.0),
        xs.last().copied().unwrap_or(f64::NAN)
    );
}

fn wall_ms(s: &str) -> Option<f64> {
    let t = humantime::parse_rfc3339_weak(s).ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs_f64() * 1000.0)
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` probes bench targets; the benchmark needs a cluster.
    }
    let runs: u32 = std::env::var("NODEDOWN_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let cluster = std::env::var("NODEDOWN_TEST_CLUSTER").unwrap_or_else(|_| "nodedown".into());
    let out = std::env::temp_dir().join(format!("nodedown-bench-{}", std::process::id()));
    let root = env!("CARGO_MANIFEST_DIR");
    eprintln!(
        "bench: {runs} failovers on kind cluster {cluster}, output in {}",
        out.display()
    );
    // Reaped below with wait4, which also gives its resource usage.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .current_dir(root)
        .args([
            "run",
            "experiments/smoke.yaml",
            "--quiet",
            "--repeat",
            &runs.to_string(),
            "--cluster-name",
            &cluster,
            "--out",
        ])
        .arg(&out)
        .spawn()
        .expect("spawn nodedown");
    let mut status = 0;
    // SAFETY: wait4 on our own child with valid out-pointers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    let code = libc::WEXITSTATUS(status);
    let cpu = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;

    let (mut applied, mut seen, mut gap, mut running) = (vec![], vec![], vec![], vec![]);
    for dir in nodedown::store::run_dirs(Path::new(&out)) {
        let (_, events) = nodedown::store::load_run(&dir).expect("run dir");
        let tl = nodedown::timeline::analyze(&events);
        let Some(target) = tl.target_node.clone() else {
            continue;
        };
        let fault = events
            .iter()
            .position(|e| matches!(e.what, EventKind::FaultInjected { .. }))
            .unwrap_or(0);
        let after = &events[fault..];
        let find = |f: &dyn Fn(&Event) -> bool| after.iter().find(|e| f(e)).map(|e| e.at_ms as f64);
        let not_ready = find(
            &|e| matches!(&e.what, EventKind::NodeReady { node, status, .. } if *node == target && *status != nodedown::timeline::ConditionStatus::True),
        );
        let taint_applied = find(&|e| matches!(&e.what, EventKind::RemediationApplied { .. }));
        let taint_seen = find(
            &|e| matches!(&e.what, EventKind::NodeTaint { node, key, added: true, .. } if *node == target && key == "node.kubernetes.io/out-of-service"),
        );
        if let (Some(n), Some(a)) = (not_ready, taint_applied) {
            applied.push(a - n);
        }
        if let (Some(n), Some(s)) = (not_ready, taint_seen) {
            seen.push(s - n);
        }
        let old = tl.old_uid.clone().unwrap_or_default();
        if let Some(e) = after.iter().find(|e| matches!(&e.what, EventKind::Pod { uid, phase, started_at: Some(_), .. } if *uid != old && *phase == nodedown::timeline::PodPhase::Running)) {
            if let EventKind::Pod { started_at: Some(s), .. } = &e.what {
                if let (Some(h), Some(c)) = (wall_ms(&e.wall), wall_ms(s)) {
                    gap.push(h - c);
                }
            }
        }
        if let Some(ms) = tl.metric(nodedown::timeline::Metric::TimeToRunning) {
            running.push(ms as f64 / 1000.0);
        }
    }
    println!(
        "nodedown failover benchmark: {runs} runs of experiments/smoke.yaml (exit code {code})"
    );
    summary(
        "taint reaction: NotReady seen -> taint applied",
        "ms",
        applied,
    );
    summary("taint reaction: NotReady seen -> taint watched", "ms", seen);
    summary("harness Running stamp - container startedAt", "ms", gap);
    summary("time-to-running (from the fault)", "s", running);
    println!(
        "harness peak RSS: {:.1} MiB",
        usage.ru_maxrss as f64 / 1024.0
    );
    println!(
        "harness CPU: user {:.2}s + system {:.2}s = {:.2}s ({:.2}s per failover)",
        cpu(usage.ru_utime),
        cpu(usage.ru_stime),
        cpu(usage.ru_utime) + cpu(usage.ru_stime),
        (cpu(usage.ru_utime) + cpu(usage.ru_stime)) / runs.max(1) as f64
    );
}
