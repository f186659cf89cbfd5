//! The failure-at-scale curve on simulated nodes (issue 22): runs
//! `experiments/scale-simulated.yaml` (NODEDOWN_BENCH_ONLY: comma-separated variants, default
//! all; it makes its own kind cluster `nodedown-sim` and needs kwok: testenv/build-kwok.sh), or
//! reads a directory a run already wrote (NODEDOWN_BENCH_DIR, its `curve.json`), and prints:
//! - per run (nodes lost × pods): time until all lost nodes NotReady, tainted unreachable by the
//!   node lifecycle controller, tainted out of service by nodedown; all pods force-deleted, all
//!   volumes detached, all replacements ready (p50 and all), and nodedown's taint reaction
//!   (p50 / p99 / max from NotReady seen to taint applied);
//! - what the recovery cost: API server, etcd, controller-manager, scheduler, kwok and
//!   nodedown (average cores over the stretch from the fault to the end, peak RSS);
//! - nodedown's cost per object watched: CPU ms per 1000 watch events and events per instance,
//!   so a reader sees whether it grows linearly with what it watches.
//!
//! Run with `cargo bench --bench simulated`. It asserts nothing about speed: it prints figures.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let dir = match std::env::var_os("NODEDOWN_BENCH_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            let out = std::env::temp_dir()
                .join(format!("nodedown-bench-simulated-{}", std::process::id()));
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_nodedown"));
            cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
                .args(["run", "experiments/scale-simulated.yaml", "--out"])
                .arg(&out);
            if let Ok(only) = std::env::var("NODEDOWN_BENCH_ONLY") {
                for v in only.split(',') {
                    cmd.args(["--only", v]);
                }
            }
            let status = cmd.status().expect("run nodedown");
            eprintln!("nodedown exited {status}; results in {}", out.display());
            out
        }
    };
    let text =
        std::fs::read_to_string(dir.join("curve.json")).expect("curve.json in the run directory");
    let runs: Vec<serde_json::Value> =
        serde_json::from_str(&text).expect("curve.json is a list of simulated results");
    let secs = |v: &serde_json::Value| {
        v.as_u64()
            .map(|ms| format!("{:.1}", ms as f64 / 1000.0))
            .unwrap_or_else(|| "-".into())
    };
    println!("SIMULATED (kwok): control-plane timings only.\n");
    println!(
        "{:<40} {:>5} {:>5} {:>9} {:>9} {:>9} {:>13} {:>13} {:>13} {:>16}",
        "run",
        "lost",
        "pods",
        "NotReady",
        "unreach.",
        "oos",
        "deleted p50/all",
        "detached p50/all",
        "running p50/all",
        "reaction p50/p99/max"
    );
    for r in &runs {
        let fig = |m: &str| {
            r["milestones"]
                .as_array()
                .and_then(|a| a.iter().find(|f| f["milestone"] == m))
                .cloned()
        };
        let all = |m: &str| match fig(m) {
            Some(f) if f["reached"] == f["of"] => secs(&f["spread"]["maxMs"]),
            Some(f) => format!("{}/{}", f["reached"], f["of"]),
            None => "-".into(),
        };
        let both = |m: &str| match fig(m) {
            Some(f) => format!("{}/{}", secs(&f["spread"]["p50Ms"]), all(m)),
            None => "-".into(),
        };
        let t = &r["taintReaction"];
        let reaction = if t.is_null() {
            "-".into()
        } else {
            format!(
                "{}/{}/{}",
                secs(&t["p50Ms"]),
                secs(&t["p99Ms"]),
                secs(&t["maxMs"])
            )
        };
        println!(
            "{:<40} {:>5} {:>5} {:>9} {:>9} {:>9} {:>13} {:>13} {:>13} {:>16}",
            r["run"].as_str().unwrap_or(""),
            r["lostNodes"],
            r["instances"],
            all("node-not-ready"),
            all("unreachable-taint"),
            all("out-of-service-taint"),
            both("old-pod-deleted"),
            both("volume-detached"),
            both("replacement-running"),
            reaction
        );
    }
    println!("\ncost from the fault to the end of the recovery (average cores / peak RSS MiB):");
    for r in &runs {
        let cost: Vec<String> = r["cost"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| {
                        format!(
                            "{} {:.2}/{:.0}",
                            c["name"].as_str().unwrap_or(""),
                            c["cores"].as_f64().unwrap_or(f64::NAN),
                            c["maxRssMib"].as_f64().unwrap_or(f64::NAN)
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        println!(
            "  {:<40} {}",
            r["run"].as_str().unwrap_or(""),
            cost.join(" · ")
        );
    }
    println!("\nnodedown per object watched:");
    for r in &runs {
        let events = r["eventsSeen"].as_f64().unwrap_or(0.0);
        let instances = r["instances"].as_f64().unwrap_or(0.0);
        let me = r["cost"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["name"] == "nodedown"))
            .cloned();
        let cpu_ms = me
            .as_ref()
            .and_then(|c| c["cpuSeconds"].as_f64())
            .unwrap_or(f64::NAN)
            * 1000.0;
        println!(
            "  {:<40} events {:>7} ({:.1} per instance) · CPU {:.0} ms ({:.1} ms per 1000 events) · peak RSS {:.0} MiB",
            r["run"].as_str().unwrap_or(""),
            events,
            if instances > 0.0 { events / instances } else { f64::NAN },
            cpu_ms,
            if events > 0.0 { cpu_ms / events * 1000.0 } else { f64::NAN },
            me.as_ref().and_then(|c| c["maxRssMib"].as_f64()).unwrap_or(f64::NAN)
        );
    }
}
