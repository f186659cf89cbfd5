//! Fleet benchmark (no cluster needed): how the pure part — the per-instance trackers, the
//! verdicts and the reports — grows with the number of instances. For N = 10, 100 and 1,000 it
//! builds a synthetic event stream (written here, not recorded: each instance's pod, claim,
//! volume and VolumeAttachments before the fault, one node powered off and tainted, then per
//! instance the old pod deleted, the volume detached and attached elsewhere and a replacement
//! Running and Ready, spread over the failover) and times, median of NODEDOWN_BENCH_RUNS runs
//! (default 5): the fleet's timelines (`analyze_fleet`), the run's result (verdicts, fleet
//! metrics) and the four renderings (results.json, JUnit, Markdown, HTML). It prints the events,
//! the times, µs per event and the growth against N = 10 (linear: the ratio of N). The run's
//! spec is the recorded fleet fixture's run.json with `instances` set to N.
//!
//! Run with `cargo bench --bench fleet`. It prints figures and asserts nothing about speed.

use nodedown::plan::PlannedRun;
use nodedown::timeline::{
    analyze_fleet, ConditionStatus, Event, EventKind, PodPhase, TimeZeroBasis,
};
use std::time::{Duration, Instant};

fn runs() -> usize {
    std::env::var("NODEDOWN_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1)
}

fn ev(at_ms: u64, what: EventKind) -> Event {
    Event {
        at_ms,
        wall: format!(
            "2026-12-05T10:00:{:02}.{:03}Z",
            (at_ms / 1000) % 60,
            at_ms % 1000
        ),
        what,
    }
}

fn pod(name: &str, uid: &str, node: Option<&str>, phase: PodPhase, ready: bool) -> EventKind {
    EventKind::Pod {
        pod: name.into(),
        uid: uid.into(),
        node: node.map(Into::into),
        phase,
        terminating: false,
        ready,
        started_at: None,
        reason: None,
    }
}

fn va(pv: &str, node: &str, attached: bool) -> EventKind {
    EventKind::VolumeAttachment {
        name: format!("csi-{pv}-{node}"),
        node: node.into(),
        pv: Some(pv.into()),
        attached,
    }
}

/// The synthetic stream of `names` on node w1, failing over to w2.
fn stream(names: &[String]) -> Vec<Event> {
    let ns = "nd-fleet-bench";
    let mut e = vec![
        ev(
            0,
            EventKind::RunStarted {
                run: "fleet/bench/1".into(),
                experiment: "fleet".into(),
                variant: "bench".into(),
                repetition: 1,
            },
        ),
        ev(
            1,
            EventKind::RunScope {
                namespace: ns.into(),
                lane: None,
                nodes: vec![],
                confined: false,
            },
        ),
    ];
    for (i, n) in names.iter().enumerate() {
        let p = format!("{n}-0");
        let pv = format!("{ns}-data-{p}");
        e.push(ev(
            10,
            EventKind::ClaimBound {
                claim: format!("data-{p}"),
                pv: pv.clone(),
            },
        ));
        e.push(ev(
            20,
            pod(&p, &format!("old{i}"), None, PodPhase::Pending, false),
        ));
        e.push(ev(
            30,
            pod(&p, &format!("old{i}"), Some("w1"), PodPhase::Running, true),
        ));
        e.push(ev(40, va(&pv, "w1", true)));
        e.push(ev(
            50,
            EventKind::WorkloadReady {
                pod: p,
                uid: format!("old{i}"),
                node: "w1".into(),
            },
        ));
    }
    e.push(ev(
        1000,
        EventKind::FaultInjected {
            fault: nodedown::vocab::FaultKind::NodeShutdown,
            node: "w1".into(),
            basis: TimeZeroBasis::RuntimeDieEvent,
            backend: None,
            returned_ms: None,
        },
    ));
    e.push(ev(
        17_000,
        EventKind::NodeReady {
            node: "w1".into(),
            status: ConditionStatus::Unknown,
            reason: None,
        },
    ));
    e.push(ev(
        17_100,
        EventKind::RemediationApplied {
            remediation: "out-of-service-taint".into(),
            node: "w1".into(),
            detail: "taint".into(),
        },
    ));
    let n = names.len() as u64;
    for (i, name) in names.iter().enumerate() {
        let (p, i) = (format!("{name}-0"), i as u64);
        let pv = format!("{ns}-data-{p}");
        let t = 30_000 + i * 2000 / n;
        e.push(ev(
            t,
            EventKind::PodDeleted {
                pod: p.clone(),
                uid: format!("old{i}"),
                node: Some("w1".into()),
            },
        ));
        e.push(ev(
            t + 100,
            pod(&p, &format!("new{i}"), None, PodPhase::Pending, false),
        ));
        e.push(ev(
            t + 150,
            pod(&p, &format!("new{i}"), Some("w2"), PodPhase::Pending, false),
        ));
        e.push(ev(t + 500 + i * 14_000 / n, va(&pv, "w1", false)));
        e.push(ev(t + 8_000 + i * 12_000 / n, va(&pv, "w2", true)));
        e.push(ev(
            t + 10_000 + i * 12_000 / n,
            pod(&p, &format!("new{i}"), Some("w2"), PodPhase::Running, false),
        ));
        e.push(ev(
            t + 10_500 + i * 12_000 / n,
            pod(&p, &format!("new{i}"), Some("w2"), PodPhase::Running, true),
        ));
    }
    e.sort_by_key(|x| x.at_ms);
    let end = e.last().map_or(0, |x| x.at_ms) + 1000;
    e.push(ev(end, EventKind::RunFinished { error: None }));
    e
}

/// The recorded fleet fixture's run.json, with `instances` = n.
fn planned(n: u32) -> PlannedRun {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/runs/fleet/fleet/oos-taint-10/1/run.json"
    );
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the fleet fixture")).unwrap();
    v["workload"]["instances"] = n.into();
    serde_json::from_value(v).expect("a PlannedRun")
}

fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs())
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    println!(
        "{:>6} {:>8} {:>12} {:>12} {:>12} {:>12} {:>10} {:>8}",
        "N", "events", "timelines", "result", "reports", "total", "µs/event", "× N=10"
    );
    let mut base: Option<f64> = None;
    for n in [10u32, 100, 1000] {
        let run = planned(n);
        let names = nodedown::spec::instance_names(&run.workload);
        let events = stream(&names);
        let t_tl = median(|| {
            std::hint::black_box(analyze_fleet(names.clone(), &events));
        });
        let t_result = median(|| {
            std::hint::black_box(nodedown::report::assemble::run_result(&run, &events));
        });
        let report =
            nodedown::report::assemble::report(vec![(run.clone(), events.clone())], "bench");
        let result = &report.experiments[0].runs[0];
        assert_eq!(
            result.instances.len(),
            n as usize,
            "every instance in the result"
        );
        let t_reports = median(|| {
            std::hint::black_box(nodedown::report::json::to_string(&report));
            std::hint::black_box(nodedown::report::junit::render(&report));
            std::hint::black_box(nodedown::report::markdown::render(&report));
            std::hint::black_box(nodedown::report::html::render(&report));
        });
        let total = (t_tl + t_result + t_reports).as_secs_f64();
        let ratio = base.map_or(1.0, |b| total / b);
        base.get_or_insert(total);
        println!(
            "{n:>6} {:>8} {:>9.2} ms {:>9.2} ms {:>9.2} ms {:>9.2} ms {:>10.2} {:>7.1}x",
            events.len(),
            t_tl.as_secs_f64() * 1e3,
            t_result.as_secs_f64() * 1e3,
            t_reports.as_secs_f64() * 1e3,
            total * 1e3,
            total * 1e6 / events.len() as f64,
            ratio
        );
    }
}
