//! Overhead benchmark: where the wall time of a matrix of runs goes, and how much of it is the
//! failovers themselves. Runs the 13-run matrix (smoke, node-shutdown, kubelet-stop,
//! network-partition; the one issue 12 measured at 15 min 18 s) on the testenv cluster
//! (NODEDOWN_TEST_CLUSTER, default nodedown), or reads a run directory someone already wrote
//! (NODEDOWN_BENCH_DIR), and prints:
//! - the invocation's total, its preparation (cluster, image), runs and finish;
//! - per stage (setup, steady-state, fault = the failover, heal): n, min, p50, max and sum;
//! - the harness share (all but the failovers) of the whole and per run (distribution);
//! - the lanes (`NODEDOWN_BENCH_PARALLEL`, default `3`, passed as `--parallel`; `1` for the
//!   runs one after the other): per lane its runs, busy time and utilisation (busy / the
//!   invocation's runs time), and the speedup (the runs' summed durations / the runs time:
//!   what lanes saved against running the same runs one after the other, as measured).
//!
//! Run with `cargo bench --bench overhead`. It asserts nothing about speed: it prints figures.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

const MATRIX: [&str; 4] = [
    "experiments/smoke.yaml",
    "experiments/node-shutdown.yaml",
    "experiments/kubelet-stop.yaml",
    "experiments/network-partition.yaml",
];

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn line(name: &str, unit: &str, mut xs: Vec<f64>) {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let sum: f64 = xs.iter().sum();
    println!(
        "{name:<28} n={:<3} min={:>7.1} p50={:>7.1} max={:>7.1} sum={:>8.1} {unit}",
        xs.len(),
        xs.first().copied().unwrap_or(f64::NAN),
        pct(&xs, 50.0),
        xs.last().copied().unwrap_or(f64::NAN),
        sum
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` probes bench targets; the benchmark needs a cluster.
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let dir = match std::env::var_os("NODEDOWN_BENCH_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            let cluster =
                std::env::var("NODEDOWN_TEST_CLUSTER").unwrap_or_else(|_| "nodedown".into());
            let parallel = std::env::var("NODEDOWN_BENCH_PARALLEL").unwrap_or_else(|_| "3".into());
            let out =
                std::env::temp_dir().join(format!("nodedown-overhead-{}", std::process::id()));
            eprintln!(
                "bench: the 13-run matrix on kind cluster {cluster} with --parallel {parallel}, output in {}",
                out.display()
            );
            let status = Command::new(env!("CARGO_BIN_EXE_nodedown"))
                .current_dir(root)
                .arg("run")
                .args(MATRIX)
                .args([
                    "--quiet",
                    "--cluster-name",
                    &cluster,
                    "--parallel",
                    &parallel,
                ])
                .arg("--out")
                .arg(&out)
                .status()
                .expect("spawn nodedown");
            eprintln!("bench: nodedown exited with {status}");
            out
        }
    };
    let text = std::fs::read_to_string(dir.join("results.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("results.json").display()));
    let results: serde_json::Value = serde_json::from_str(&text).expect("results.json");
    let s = |ms: &serde_json::Value| ms.as_f64().unwrap_or(f64::NAN) / 1000.0;

    println!("run directory: {}", dir.display());
    match results.get("invocation") {
        Some(inv) => println!(
            "invocation: total {:.1}s = prepare {:.1}s + runs {:.1}s + finish {:.1}s; failover {:.1}s; harness share {:.1}%",
            s(&inv["totalMs"]),
            s(&inv["prepareMs"]),
            s(&inv["runsMs"]),
            s(&inv["finishMs"]),
            s(&inv["failoverMs"]),
            inv["harnessShare"].as_f64().unwrap_or(f64::NAN) * 100.0
        ),
        None => println!(
            "invocation: not recorded (interrupted, or written by a nodedown before invocation.json)"
        ),
    }
    let mut stages: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut shares = Vec::new();
    let mut durations = Vec::new();
    let runs: Vec<&serde_json::Value> = results["experiments"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["runs"].as_array().into_iter().flatten())
        .collect();
    for r in &runs {
        let duration = s(&r["durationMs"]);
        durations.push(duration);
        let mut failover = 0.0;
        for st in r["stagesMs"].as_array().into_iter().flatten() {
            let name = st["stage"].as_str().unwrap_or("?").to_string();
            let secs = s(&st["ms"]);
            if name == nodedown::timeline::FAILOVER_STAGE.name() {
                failover += secs;
            }
            stages.entry(name).or_default().push(secs);
        }
        if duration > 0.0 {
            shares.push(100.0 * (1.0 - failover / duration));
        }
    }
    println!("{} runs", runs.len());
    let summed: f64 = durations.iter().sum();
    line("run duration", "s", durations);
    for (name, xs) in stages {
        line(&format!("stage {name}"), "s", xs);
    }
    line("harness share per run", "%", shares);

    // Lanes: which runs went where (`lane` absent: one after the other, or alone).
    let mut lanes: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    for r in &runs {
        let lane = match r["lane"].as_u64() {
            Some(l) => format!("lane {l}"),
            None => "no lane".into(),
        };
        let e = lanes.entry(lane).or_default();
        e.0 += 1;
        e.1 += s(&r["durationMs"]);
    }
    let runs_s = results
        .get("invocation")
        .map(|inv| s(&inv["runsMs"]))
        .unwrap_or(f64::NAN);
    let count = results
        .get("invocation")
        .and_then(|inv| inv["lanes"].as_u64())
        .unwrap_or(1);
    println!("lanes: {count}");
    for (lane, (n, busy)) in &lanes {
        println!(
            "{lane:<28} runs={n:<3} busy={busy:>7.1} s utilisation={:>5.1}%",
            100.0 * busy / runs_s
        );
    }
    println!(
        "speedup: {:.2}x (the runs' summed durations {summed:.1} s / runs time {runs_s:.1} s)",
        summed / runs_s
    );
}
