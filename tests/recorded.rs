//! The recorded run directories in `tests/fixtures/runs/`: real runs on the testenv cluster
//! (see its README), trimmed to the files the reports read, never edited. No cluster is needed
//! here: these are the golden inputs of the pure core.

use nodedown::report::{json, RunResult};
use nodedown::timeline::{analyze, analyze_fleet, slowest, Metric, Phase};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/fixtures/runs")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("results.json").is_file())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 3, "recorded run directories: {dirs:?}");
    dirs
}

fn stored(dir: &Path) -> nodedown::report::Report {
    json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

fn run<'a>(report: &'a nodedown::report::Report, id: &str) -> &'a RunResult {
    report
        .experiments
        .iter()
        .flat_map(|e| &e.runs)
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no run {id}"))
}

/// `nodedown report --format json DIR`, which must succeed.
fn report_json(dir: &Path) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .args(["report", "--format", "json"])
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `nodedown report` of each recorded directory reproduces the results.json the run wrote,
/// byte for byte.
#[test]
fn report_reproduces_each_stored_results_json() {
    for dir in fixtures() {
        let out = report_json(&dir);
        let want = std::fs::read_to_string(dir.join("results.json")).unwrap();
        assert!(
            String::from_utf8(out.stdout).unwrap() == want,
            "{}: re-rendered results.json differs",
            dir.display()
        );
    }
}

/// The tracker's phases over each recorded events.jsonl are the phases in its results.json.
#[test]
fn tracker_phases_equal_the_stored_phases() {
    for dir in fixtures() {
        let report = stored(&dir);
        for run_dir in nodedown::store::run_dirs(&dir) {
            let (planned, events) = nodedown::store::load_run(&run_dir).unwrap();
            // Where the run's time went, by the one rule every result uses.
            let stages: Vec<_> = run(&report, &planned.id)
                .stages_ms
                .iter()
                .map(|s| (s.stage, s.ms))
                .collect();
            assert_eq!(
                stages,
                nodedown::timeline::stages(&events),
                "{}",
                planned.id
            );
            if planned.cluster.provider == nodedown::spec::Provider::Kwok {
                // A simulated run's phases are milestones over its many instances (`scale`).
                assert!(run(&report, &planned.id).phases.is_empty());
                continue;
            }
            assert_eq!(analyze(&events).stages, nodedown::timeline::stages(&events));
            // The run's phases: its one instance's, or a fleet's slowest instance's.
            let names = nodedown::spec::members(&planned.workload);
            let timelines = analyze_fleet(names, &events);
            let tl = &timelines[slowest(&timelines).unwrap()].1;
            if timelines.len() == 1 {
                assert_eq!(*tl, analyze(&events), "one instance reads every event");
            }
            let got: Vec<(String, u64, Option<u64>)> = tl
                .phases
                .iter()
                .map(|p| (p.phase.name().to_string(), p.at_ms, p.since_ms))
                .collect();
            let want: Vec<(String, u64, Option<u64>)> = run(&report, &planned.id)
                .phases
                .iter()
                .map(|p| (p.name.name().to_string(), p.at_ms, p.since_ms))
                .collect();
            assert_eq!(got, want, "{}", run_dir.display());
            assert!(!got.is_empty(), "{}: a fault was recorded", planned.id);
        }
    }
}

/// What the recordings show, stated once so a regression in the tracker or the checker that
/// still round-trips would fail here.
#[test]
fn the_recordings_say_what_happened() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs");
    let ns = stored(&root.join("node-shutdown"));
    let none = run(&ns, "node-shutdown/none/1");
    assert!(none.metrics.contains_key(&Metric::TimeToNotReady));
    assert!(!none.metrics.contains_key(&Metric::TimeToRunning));
    assert!(none.phases.iter().any(|p| p.name == Phase::PodTerminating));
    let oos = run(&ns, "node-shutdown/out-of-service-taint/1");
    assert_eq!(oos.time_zero.as_ref().unwrap().basis, "runtime-die-event");
    assert!(oos.metrics[&Metric::TimeToReady] > oos.metrics[&Metric::TimeToNotReady]);
    assert_eq!(
        oos.integrity.as_ref().unwrap().verdict,
        nodedown::report::Verdict::Pass
    );

    let np = stored(&root.join("network-partition"));
    let unfenced = run(&np, "network-partition/oos-taint-unfenced/1");
    assert!(unfenced.integrity.as_ref().unwrap().split_brain);
    assert_eq!(
        unfenced.time_zero.as_ref().unwrap().basis,
        "command-returned"
    );
    let fenced = run(&np, "network-partition/oos-taint-fenced/1");
    let i = fenced.integrity.as_ref().unwrap();
    assert!(!i.split_brain && i.lost_acknowledged == 0, "{i:?}");
    assert!(fenced.write_outage.is_some());
    for r in [none, oos, unfenced, fenced] {
        assert_eq!(r.verdict, nodedown::report::Verdict::Pass, "{}", r.id);
    }
}

/// Storage that attaches (testenv's CSI driver with the real external-attacher): the phases the
/// hand-written fixtures used to stand in for, recorded.
#[test]
fn the_attaching_storage_recordings_show_detach_attach_and_multi_attach() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs");
    let ad = stored(&root.join("attach-detach"));
    let phase = |r: &RunResult, p: Phase| r.phases.iter().find(|x| x.name == p).map(|x| x.at_ms);
    let oos = run(&ad, "attach-detach/out-of-service-taint/1");
    let env = oos.environment.as_ref().unwrap();
    assert_eq!(env.provisioner.as_deref(), Some("csi.nodedown.dev"));
    assert_eq!(env.attach_required, Some(true));
    let (detached, attached, running) = (
        phase(oos, Phase::VolumeDetached).unwrap(),
        phase(oos, Phase::VolumeAttached).unwrap(),
        phase(oos, Phase::ReplacementRunning).unwrap(),
    );
    assert!(phase(oos, Phase::OutOfServiceTaint).unwrap() <= detached);
    assert!(
        detached <= attached && attached <= running,
        "{:?}",
        oos.phases
    );
    assert_eq!(oos.metrics[&Metric::TimeToDetach], detached);
    assert_eq!(oos.metrics[&Metric::TimeToAttach], attached);
    assert!(phase(oos, Phase::MultiAttachError).is_none());
    let counters = oos.controller_counters.as_ref().unwrap();
    assert!(
        counters.iter().any(|c| c.series.contains("forced_detaches")
            && c.series.contains("reason=\"out-of-service\"")),
        "{counters:?}"
    );

    let none = run(&ad, "attach-detach/none/1");
    assert!(phase(none, Phase::VolumeDetached).is_none());
    assert!(!none.metrics.contains_key(&Metric::TimeToAttach));

    let fd = run(&ad, "attach-detach/force-delete-pod-first-minute/1");
    let mae = phase(fd, Phase::MultiAttachError).unwrap();
    assert!(phase(fd, Phase::OldPodDeleted).unwrap() <= mae);
    assert!(phase(fd, Phase::VolumeDetached).is_none());
    assert!(phase(fd, Phase::ReplacementRunning).is_none());

    let va = run(&ad, "attach-detach/delete-volumeattachment/1");
    assert!(
        phase(va, Phase::RemediationApplied).unwrap() <= phase(va, Phase::VolumeDetached).unwrap()
    );
    assert!(phase(va, Phase::VolumeAttached).is_some());
    for r in [oos, none, fd, va] {
        assert_eq!(r.verdict, nodedown::report::Verdict::Pass, "{}", r.id);
        assert_eq!(
            r.integrity.as_ref().unwrap().verdict,
            nodedown::report::Verdict::Pass,
            "{}",
            r.id
        );
    }
}

/// The Markdown summary of a recording on attaching storage fills the detach and attach
/// columns and says which path freed the volume.
#[test]
fn the_summary_of_attaching_storage_shows_detach_attach_and_the_controller_counters() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/attach-detach");
    let out = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .args(["report", "--format", "markdown"])
        .arg(&dir)
        .output()
        .unwrap();
    let md = String::from_utf8(out.stdout).unwrap();
    let header = md
        .lines()
        .find(|l| l.starts_with("| variant |"))
        .expect("table header");
    let cols: Vec<&str> = header.split('|').map(str::trim).collect();
    let col = |name: &str| cols.iter().position(|c| *c == name).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| out-of-service-taint |"))
        .expect("row of the taint variant");
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    for name in ["time-to-detach", "time-to-attach"] {
        assert!(cells[col(name)].ends_with('s'), "{name}: {row}");
    }
    assert!(
        md.contains("forced_detaches{reason=\"out-of-service\"}` +1"),
        "{md}"
    );
}

/// The 6-minute path, recorded (scripts/slow-matrix): a force-deleted pod's replacement meets a
/// Multi-Attach error, and the volume is detached only when the attach/detach controller's
/// maxWaitForUnmount (6 minutes from the old pod's deletion) runs out — a forced detach with
/// reason "timeout" — then attached to the replacement's node.
#[test]
fn the_six_minute_force_detach_is_recorded_with_its_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs");
    let slow = stored(&root.join("attach-detach-slow"));
    let r = run(&slow, "attach-detach/force-delete-pod/1");
    let at = |p: Phase| {
        r.phases
            .iter()
            .find(|x| x.name == p)
            .map(|x| x.at_ms)
            .unwrap_or_else(|| panic!("{p} in {:?}", r.phases))
    };
    let deleted = at(Phase::OldPodDeleted);
    assert!(at(Phase::MultiAttachError) < at(Phase::VolumeDetached));
    let attach_after = at(Phase::VolumeAttached) - deleted;
    assert!(
        (360_000..=450_000).contains(&attach_after),
        "attached {attach_after} ms after the old pod's deletion: the 6-minute force detach"
    );
    let counters = r.controller_counters.as_ref().unwrap();
    assert!(
        counters.iter().any(
            |c| c.series.contains("forced_detaches") && c.series.contains("reason=\"timeout\"")
        ),
        "{counters:?}"
    );
    assert_eq!(r.verdict, nodedown::report::Verdict::Pass);
}

/// A parallel invocation on attaching storage (`attach-detach-lanes/`: three runs in three
/// lanes at once) attributes to each run only its own volumes' VolumeAttachments. Here another
/// lane's real VolumeAttachment events are moved onto a run's target node and clock — an edit
/// made by this test, standing for another tenant's volume on the same node — and merged into
/// the run's stream: none of the run's phases moves. Without the run's `run-scope` event (the
/// tracker as it was before lanes: every VolumeAttachment on the target node counted) the same
/// stream gives the run a detach that was not its own.
#[test]
fn another_lanes_volume_attachments_do_not_move_a_runs_phases() {
    use nodedown::timeline::{Event, EventKind};
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/attach-detach-lanes");
    let load = |variant: &str| {
        nodedown::store::load_run(&root.join(format!("attach-detach/{variant}/1")))
            .unwrap()
            .1
    };
    let wall_ms = |events: &[Event]| {
        let t = humantime::parse_rfc3339(&events[0].wall).unwrap();
        t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64 - events[0].at_ms as i64
    };
    let phases = |events: &[Event]| -> Vec<(String, u64)> {
        analyze(events)
            .phases
            .iter()
            .map(|p| (p.phase.name().to_string(), p.at_ms))
            .collect()
    };
    let unscoped = |events: &[Event]| -> Vec<Event> {
        events
            .iter()
            .filter(|e| !matches!(e.what, EventKind::RunScope { .. }))
            .cloned()
            .collect()
    };
    let other = load("delete-volumeattachment");
    for own_variant in ["none", "out-of-service-taint"] {
        let own = load(own_variant);
        let lane = |events: &[Event]| {
            events.iter().find_map(|e| match &e.what {
                EventKind::RunScope { lane, .. } => *lane,
                _ => None,
            })
        };
        assert!(
            lane(&own).is_some() && lane(&own) != lane(&other),
            "two lanes"
        );
        let target = own
            .iter()
            .find_map(|e| match &e.what {
                EventKind::FaultInjected { node, .. } => Some(node.clone()),
                _ => None,
            })
            .expect("a fault");
        let shift = wall_ms(&other) - wall_ms(&own);
        let foreign: Vec<Event> = other
            .iter()
            .filter_map(|e| {
                let mut e = e.clone();
                match &mut e.what {
                    EventKind::VolumeAttachment { node, .. }
                    | EventKind::VolumeAttachmentDeleted { node, .. } => *node = target.clone(),
                    _ => return None,
                }
                e.at_ms = (e.at_ms as i64 + shift).max(0) as u64;
                Some(e)
            })
            .collect();
        assert!(
            foreign
                .iter()
                .any(|e| matches!(e.what, EventKind::VolumeAttachmentDeleted { .. })),
            "the other lane's VolumeAttachment was deleted (its remediation)"
        );
        let mut merged = own.clone();
        merged.extend(foreign);
        merged.sort_by_key(|e| e.at_ms);
        assert_eq!(
            phases(&merged),
            phases(&own),
            "{own_variant}: another volume's attachments are not this run's"
        );
        if own_variant == "none" {
            // No remediation: the run's own volume stays attached to the dead node. Counted
            // unscoped, the other volume's deletion would read as this run's detach.
            let detached = |events: &[Event]| {
                phases(events)
                    .iter()
                    .any(|(p, _)| p == Phase::VolumeDetached.name())
            };
            assert!(!detached(&own), "none: the volume stays attached");
            assert!(
                detached(&unscoped(&merged)),
                "unscoped, the foreign detach would have counted"
            );
        }
    }
}

/// The same parallel recording's controller counters: the one out-of-service forced detach of
/// the invocation (lane 2's) is cluster-wide, and all three runs were in their fault windows
/// while it happened, so each run reports it shared with the other two — never split, never
/// given to one by guess. PodGC's force delete names its namespace and belongs to lane 2 alone.
#[test]
fn a_parallel_recording_marks_cluster_wide_counters_shared_and_keeps_podgc_per_namespace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs");
    let report = stored(&root.join("attach-detach-lanes"));
    assert_eq!(report.invocation.as_ref().unwrap().lanes, 3);
    let ids = [
        "attach-detach/none/1",
        "attach-detach/out-of-service-taint/1",
        "attach-detach/delete-volumeattachment/1",
    ];
    for id in ids {
        let r = run(&report, id);
        let counters = r.controller_counters.as_ref().expect("counters read");
        let forced = counters
            .iter()
            .find(|c| {
                c.series
                    .contains("forced_detaches{reason=\"out-of-service\"}")
            })
            .unwrap_or_else(|| panic!("{id}: {counters:?}"));
        let mut others: Vec<&str> = ids.iter().copied().filter(|o| *o != id).collect();
        others.sort();
        let mut shared: Vec<&str> = forced.shared_with.iter().map(String::as_str).collect();
        shared.sort();
        assert_eq!(shared, others, "{id}");
        let podgc: Vec<_> = counters
            .iter()
            .filter(|c| {
                c.series
                    .starts_with("pod_gc_collector_force_delete_pods_total")
            })
            .collect();
        if id == "attach-detach/out-of-service-taint/1" {
            assert_eq!(podgc.len(), 1, "{counters:?}");
            assert!(podgc[0].shared_with.is_empty());
            assert!(podgc[0]
                .series
                .contains("nd-attach-detach-out-of-service-taint-1-"));
        } else {
            assert!(
                podgc.is_empty(),
                "{id}: another lane's PodGC series: {podgc:?}"
            );
        }
        assert_eq!(r.lane_nodes.len(), 2, "{id}");
    }
}

/// The fleet recording (`fleet/`: ten ledgers on one node on attaching storage, the taint, and
/// a force-delete for a minute, in two lanes): each instance's phases are its own — its pod,
/// its volume's VolumeAttachments on the target node, its Multi-Attach error — and the run names
/// the instance that was Ready last.
#[test]
fn a_fleet_recording_attributes_each_instance_its_own_objects() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/fleet");
    let report = stored(&dir);
    let oos = run(&report, "fleet/oos-taint-10/1");
    let run_dir = dir.join("fleet/oos-taint-10/1");
    let (_, events) = nodedown::store::load_run(&run_dir).unwrap();
    let fault_at = events
        .iter()
        .find(|e| matches!(e.what, nodedown::timeline::EventKind::FaultInjected { .. }))
        .unwrap()
        .at_ms;
    let ns = oos.instances.len();
    assert_eq!(ns, 10);
    let target = oos.target_node.clone().unwrap();
    for i in &oos.instances {
        assert_eq!(i.pod.as_deref(), Some(format!("{}-0", i.name).as_str()));
        assert_eq!(i.start_node.as_deref(), Some(target.as_str()), "{}", i.name);
        // Its volume-detached is the first detach of its own volume on the target node.
        let own = format!("-data-{}-0", i.name);
        let detach = events
            .iter()
            .filter(|e| e.at_ms >= fault_at)
            .find_map(|e| match &e.what {
                nodedown::timeline::EventKind::VolumeAttachment {
                    node,
                    pv: Some(pv),
                    attached: false,
                    ..
                }
                | nodedown::timeline::EventKind::VolumeAttachmentDeleted {
                    node,
                    pv: Some(pv),
                    ..
                } if *node == target && pv.ends_with(&own) => Some(e.at_ms - fault_at),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{}: no detach of its volume", i.name));
        let at = |name: &str| {
            i.phases
                .iter()
                .find(|p| p.name.name() == name)
                .map(|p| p.at_ms)
        };
        assert_eq!(at("volume-detached"), Some(detach), "{}", i.name);
    }
    // Ten volumes detached at ten different moments: no instance took another's.
    let mut detaches: Vec<u64> = oos
        .instances
        .iter()
        .map(|i| i.metrics[&nodedown::timeline::Metric::TimeToDetach])
        .collect();
    detaches.sort();
    detaches.dedup();
    assert!(detaches.len() > 1, "{detaches:?}");
    let fleet = oos.fleet.as_ref().unwrap();
    let last = oos
        .instances
        .iter()
        .max_by_key(|i| i.metrics[&nodedown::timeline::Metric::TimeToReady])
        .unwrap();
    assert_eq!(fleet.slowest_instance.as_deref(), Some(last.name.as_str()));
    assert_eq!(
        fleet.time_to_all_ready_ms,
        Some(last.metrics[&nodedown::timeline::Metric::TimeToReady])
    );
    assert_eq!(
        oos.metrics[&nodedown::timeline::Metric::TimeToReady],
        last.metrics[&nodedown::timeline::Metric::TimeToReady]
    );
    let fd = run(&report, "fleet/force-delete-10-first-minute/1");
    for i in &fd.instances {
        assert!(
            i.phases
                .iter()
                .any(|p| p.name.name() == "multi-attach-error"),
            "{}: its own Multi-Attach error",
            i.name
        );
    }
}

/// One instance's ledger cut short (a copy of the fleet recording, altered here: the records
/// after the first 20 of `ledger-i3` removed, as if lost) fails the run's integrity and names
/// that instance; the other nine still pass.
#[test]
fn a_lost_write_in_one_instance_fails_the_fleet_and_names_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/fleet");
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("fleet");
    let status = Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let ledger = copy.join("fleet/oos-taint-10/1/instances/ledger-i3/ledger/ledger.bin");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&ledger)
        .unwrap();
    f.set_len(20 * 256).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .args(["report", "--format", "json"])
        .arg(&copy)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let oos = run(&report, "fleet/oos-taint-10/1");
    assert_eq!(oos.verdict, nodedown::report::Verdict::Fail);
    let integrity = oos
        .expectations
        .iter()
        .find(|e| e.name == "integrity")
        .unwrap();
    assert_eq!(integrity.verdict, nodedown::report::Verdict::Fail);
    assert_eq!(integrity.actual, "lost-writes (ledger-i3)", "{integrity:?}");
    assert!(
        integrity.evidence.starts_with("9 of 10 instances met it"),
        "{}",
        integrity.evidence
    );
    let whole = oos.integrity.as_ref().unwrap();
    assert!(whole.lost_acknowledged > 0);
    assert!(
        whole
            .summary
            .starts_with("9 of 10 instances pass; ledger-i3:"),
        "{}",
        whole.summary
    );
    for i in &oos.instances {
        let want = if i.name == "ledger-i3" {
            nodedown::report::Verdict::Fail
        } else {
            nodedown::report::Verdict::Pass
        };
        assert_eq!(i.verdict, want, "{}", i.name);
    }
}

/// The replicated recording (`replicated/`: one StatefulSet of three replicas on attaching
/// storage, the middle one's node powered off, with the taint and with none): each replica is a
/// member of its own; only the one on the dead node fails over, the other two are judged
/// `undisturbed` — their pods terminating in the teardown (the namespace deleted after the
/// failover) do not count — and each keeps its own ledger.
#[test]
fn a_replicated_recording_fails_over_one_replica_and_leaves_the_others_undisturbed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/replicated");
    let report = stored(&dir);
    for id in [
        "replicated-statefulset/out-of-service-taint/1",
        "replicated-statefulset/none/1",
    ] {
        let r = run(&report, id);
        assert_eq!(r.verdict, nodedown::report::Verdict::Pass, "{id}");
        let names: Vec<&str> = r.instances.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["ledger-0", "ledger-1", "ledger-2"], "{id}");
        let mut nodes: Vec<&str> = r
            .instances
            .iter()
            .map(|i| i.start_node.as_deref().unwrap())
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        assert_eq!(nodes.len(), 3, "{id}: a node each");
        let faulted = &r.instances[1];
        assert!(!faulted.unaffected, "{id}");
        assert_eq!(faulted.start_node, r.target_node, "{id}");
        let fleet = r.fleet.as_ref().unwrap();
        assert_eq!(fleet.unaffected, ["ledger-0", "ledger-2"], "{id}");
        for i in [&r.instances[0], &r.instances[2]] {
            assert!(i.unaffected, "{id} {}", i.name);
            let names: Vec<&str> = i.expectations.iter().map(|x| x.name.as_str()).collect();
            assert_eq!(names, ["undisturbed", "integrity"], "{id} {}", i.name);
            assert!(i
                .expectations
                .iter()
                .all(|x| x.verdict == nodedown::report::Verdict::Pass));
            // With the taint the failover window stayed open into the teardown (it closes when
            // the fault is healed): the pod's termination then is on its timeline.
            assert_eq!(
                i.phases.iter().any(|p| p.name.name() == "pod-terminating"),
                id.contains("out-of-service-taint"),
                "{id} {}: its pod terminated in the teardown",
                i.name
            );
            assert_eq!(i.integrity.as_ref().unwrap().lost_acknowledged, 0);
        }
        // The run's own timeline is the faulted replica's.
        assert_eq!(r.metrics, faulted.metrics, "{id}");
    }
    let oos = run(&report, "replicated-statefulset/out-of-service-taint/1");
    let back = oos.instances[1].replacement_node.as_deref().unwrap();
    assert!(
        oos.instances
            .iter()
            .all(|i| i.start_node.as_deref() != Some(back)),
        "the replacement went to the worker without a replica: {back}"
    );
    assert_eq!(
        oos.fleet.as_ref().unwrap().time_to_all_ready_ms,
        oos.metrics
            .get(&nodedown::timeline::Metric::TimeToReady)
            .copied()
    );
}

/// The recorded simulated invocation (`tests/fixtures/runs/simulated/`: kwok, 5 simulated nodes,
/// 2 lost at once under 4 attaching instances, with the out-of-service taint and without; see
/// its README): `nodedown report` folds each run's `events.jsonl` into the same results.json as
/// every run's, and its figures and verdicts are those the runner wrote at the time of the
/// recording (its `curve.json`, made by the runner of then, not by this code).
#[test]
fn report_folds_the_simulated_events_into_the_stored_curve() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/simulated");
    let out = report_json(&dir);
    let reported: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(reported, stored);
    let then: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("curve.json")).unwrap()).unwrap();
    let runs = reported["experiments"][0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for old in then.as_array().unwrap() {
        let now = runs
            .iter()
            .find(|r| r["id"] == old["run"])
            .unwrap_or_else(|| panic!("{} reported", old["run"]));
        assert_eq!(
            now["scale"]["milestones"], old["milestones"],
            "{}",
            old["run"]
        );
        assert_eq!(now["scale"]["taintReaction"], old["taintReaction"]);
        assert_eq!(now["scale"]["observations"], old["observations"]);
        assert_eq!(now["verdict"], old["verdict"], "{}", old["run"]);
        assert_eq!(now["expectations"], old["expectations"]);
        assert_eq!(now["provider"], "kwok");
    }
    // The run that did not recover was watched from its fault to its recovery timeout, as its
    // event lines say.
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(dir.join("fold-fixture/none/1/events.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let at = |kind: &str| {
        lines
            .iter()
            .filter(|l| l["event"] == kind)
            .map(|l| l["at_ms"].as_u64().unwrap())
            .min()
            .unwrap()
    };
    let none = runs.iter().find(|r| r["variant"] == "none").unwrap();
    assert_eq!(none["outcome"]["recovery"], "not-recovered");
    assert_eq!(
        none["outcome"]["afterMs"].as_u64(),
        Some(at("recovery-timeout") - at("fault-injected"))
    );
    // Its JUnit: a case per run, each with the run's wall time (first to last event).
    let junit = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .args(["report", "--format", "junit"])
        .arg(&dir)
        .output()
        .unwrap();
    let xml = String::from_utf8_lossy(&junit.stdout);
    for r in runs {
        let case = xml
            .split("<testcase")
            .find(|c| c.contains(&format!("name=\"{}\"", r["id"].as_str().unwrap())))
            .unwrap_or_else(|| panic!("{xml}"));
        let secs = r["durationMs"].as_u64().unwrap() as f64 / 1000.0;
        assert!(
            case.contains(&format!("time=\"{secs:.3}\"")),
            "{secs}: {case}"
        );
    }
    // And the figures are the events', not anything stored: a run whose events say less
    // reports less.
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path();
    for v in ["taint", "none"] {
        let from = dir.join(format!("fold-fixture/{v}/1"));
        let to = copy.join(format!("fold-fixture/{v}/1"));
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(from.join("run.json"), to.join("run.json")).unwrap();
        let events = std::fs::read_to_string(from.join("events.jsonl")).unwrap();
        let kept: String = events
            .lines()
            .filter(|l| !l.contains("\"event\":\"pod-deleted\""))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(to.join("events.jsonl"), kept).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .args(["report", "--format", "json"])
        .arg(copy)
        .output()
        .unwrap();
    let refolded: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = refolded["experiments"][0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        let deleted = &r["scale"]["milestones"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["milestone"] == "old-pod-deleted")
            .unwrap()["reached"];
        assert_eq!(
            *deleted, 0,
            "without its pod-deleted events no pod was seen deleted"
        );
    }
}

/// An oracle that is not the fold: the taint run's milestones read straight off the lines of
/// its `events.jsonl` — time zero the earliest `fault-injected`; a node NotReady at its first
/// `node-ready` not True after it; a pod deleted at its `pod-deleted`; nodedown's taint at its
/// `remediation-applied`.
#[test]
fn the_simulated_milestones_are_the_times_of_the_recorded_lines() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/simulated/fold-fixture/taint/1");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = |l: &serde_json::Value| l["at_ms"].as_u64().unwrap();
    let first_fault = lines
        .iter()
        .position(|l| l["event"] == "fault-injected")
        .unwrap();
    let t0 = lines
        .iter()
        .filter(|l| l["event"] == "fault-injected")
        .map(at)
        .min()
        .unwrap();
    let reported: serde_json::Value =
        serde_json::from_slice(&report_json(&dir.join("../../..")).stdout).unwrap();
    let result = reported["experiments"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "fold-fixture/taint/1")
        .unwrap()
        .clone();
    let nodes = result["scale"]["observations"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    for n in nodes {
        let name = n["name"].as_str().unwrap();
        let not_ready = lines[first_fault..]
            .iter()
            .find(|l| l["event"] == "node-ready" && l["node"] == name && l["status"] != "True")
            .map(at)
            .unwrap();
        assert_eq!(n["notReadyMs"].as_u64(), Some(not_ready - t0), "{name}");
        let tainted = lines
            .iter()
            .find(|l| l["event"] == "remediation-applied" && l["node"] == name)
            .map(at)
            .unwrap();
        assert_eq!(
            n["outOfServiceTaintMs"].as_u64(),
            Some(tainted - t0),
            "{name}"
        );
    }
    let instances = result["scale"]["observations"]["instances"]
        .as_array()
        .unwrap();
    assert_eq!(instances.len(), 4);
    for i in instances {
        let pod = format!("{}-0", i["name"].as_str().unwrap());
        let deleted = lines
            .iter()
            .find(|l| l["event"] == "pod-deleted" && l["pod"] == pod.as_str())
            .map(at)
            .unwrap();
        assert_eq!(i["podDeletedMs"].as_u64(), Some(deleted - t0), "{pod}");
    }
    assert_eq!(result["verdict"], "pass");
}

/// The write outage of a run that did not come back is open, from the last write acknowledged
/// before the fault to the end of the watch — the affected member's, never an undisturbed
/// replica's — and reads `≥ D (not restored)`, never `—`.
#[test]
fn a_write_outage_never_restored_is_open_and_the_affected_members() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs");
    let window = |r: &RunResult| {
        r.phases
            .iter()
            .find(|p| p.name == Phase::RecoveryTimeout)
            .map(|p| p.at_ms as i64)
            .expect("a recovery timeout")
    };
    // replicated/none: ledger-1's node was off for the whole run; ledger-0 and -2 wrote on.
    let report = stored(&root.join("replicated"));
    let r = run(&report, "replicated-statefulset/none/1");
    let o = r.write_outage.as_ref().expect("an outage");
    assert!(!o.restored);
    assert_eq!(o.until_ms, window(r));
    assert_eq!(Some(o), r.instances[1].write_outage.as_ref(), "ledger-1's");
    assert!(o.duration_ms >= 60_000, "{o:?}");
    for i in [&r.instances[0], &r.instances[2]] {
        let own = i.write_outage.as_ref().unwrap();
        assert!(
            own.restored && own.duration_ms < 1_000,
            "{}: {own:?}",
            i.name
        );
    }
    let restored = run(&report, "replicated-statefulset/out-of-service-taint/1");
    assert_eq!(
        restored.write_outage.as_ref(),
        restored.instances[1].write_outage.as_ref()
    );
    assert!(restored.write_outage.as_ref().unwrap().restored);

    // attach-detach/none: one ledger, never back.
    let report = stored(&root.join("attach-detach"));
    let r = run(&report, "attach-detach/none/1");
    let o = r.write_outage.as_ref().expect("an outage, not absent");
    assert!(
        !o.restored && o.from_ms <= 0 && o.until_ms == window(r),
        "{o:?}"
    );
    let table = nodedown::report::table::render(&report, &Default::default());
    let line = table.lines().find(|l| l.starts_with("  none ")).unwrap();
    assert!(line.contains("≥ 1m30s "), "{line}");
    assert!(table.contains("≥ D: the writes were still down when the watch ended"));
    assert!(line.contains("never (1m30s)"), "{line}");
    let md = nodedown::report::markdown::render(&report);
    assert!(md.contains("| ≥ 1m30s (not restored) |"), "{md}");

    // A fleet that did not come back: every instance's outage open, the run's the longest.
    let report = stored(&root.join("fleet"));
    let r = run(&report, "fleet/force-delete-10-first-minute/1");
    assert!(r
        .instances
        .iter()
        .all(|i| i.write_outage.as_ref().is_some_and(|o| !o.restored)));
    let longest = r
        .instances
        .iter()
        .map(|i| i.write_outage.as_ref().unwrap().duration_ms)
        .max();
    assert_eq!(r.write_outage.as_ref().map(|o| o.duration_ms), longest);
    let v = &report.experiments[0]
        .variants
        .iter()
        .find(|v| v.variant == "force-delete-10-first-minute")
        .unwrap();
    assert_eq!(v.write_outage, None, "no restored outage to spread");
    assert_eq!(v.write_outage_not_restored, 1);
}

/// A green pass says what happened beside it: the unfenced partition's split brain (expected),
/// the kubelet-stop force delete's split brain (no expectation asked), the runs that never
/// came back.
#[test]
fn a_pass_shows_its_outcome() {
    use nodedown::report::outcome::{Data, Recovery};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs");
    let report = stored(&root.join("network-partition"));
    let r = run(&report, "network-partition/oos-taint-unfenced/1");
    let o = r.outcome.as_ref().unwrap();
    assert_eq!(r.verdict, nodedown::report::Verdict::Pass);
    assert_eq!(
        (o.recovery, o.data.clone()),
        (Recovery::Recovered, vec![Data::SplitBrain])
    );
    assert!(
        o.summary.contains("split brain: 2 writers (as expected)"),
        "{}",
        o.summary
    );
    let table = nodedown::report::table::render(&report, &Default::default());
    let line = table
        .lines()
        .find(|l| l.starts_with("  oos-taint-unfenced "))
        .unwrap();
    assert!(line.contains("split brain"), "{line}");
    assert!(line.ends_with("as expected: split brain"), "{line}");
    assert!(
        table.contains("data: 1 split brain, 1 nothing lost"),
        "{table}"
    );
    let html = nodedown::report::html::render(&report);
    assert!(html.contains("split brain: 2 writers (as expected)"));

    let report = stored(&root.join("kubelet-stop"));
    let r = run(&report, "kubelet-stop/force-delete-pod/1");
    assert_eq!(r.verdict, nodedown::report::Verdict::Pass);
    assert_eq!(r.outcome.as_ref().unwrap().data, vec![Data::SplitBrain]);
    let table = nodedown::report::table::render(&report, &Default::default());
    assert!(
        table.contains("unchecked: split brain (no integrity expectation)"),
        "{table}"
    );

    let report = stored(&root.join("node-shutdown"));
    let r = run(&report, "node-shutdown/none/1");
    let o = r.outcome.as_ref().unwrap();
    assert_eq!(o.recovery, Recovery::NotRecovered);
    assert!(
        o.summary
            .starts_with("not recovered within 1m30s (as expected)"),
        "{}",
        o.summary
    );
    let junit = nodedown::report::junit::render(&report);
    assert!(junit.contains("outcome: not recovered within 1m30s (as expected)"));
}

/// The first `network-fence` line of a run's events.jsonl in `state`, read directly: its wall
/// clock (ms since the Unix epoch) and its node.
fn fence_line(run_dir: &Path, state: &str) -> (u64, String) {
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
    let e: serde_json::Value = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "network-fence" && e["state"] == state)
        .unwrap();
    let ms = humantime::parse_rfc3339(e["wall"].as_str().unwrap())
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    (ms, e["node"].as_str().unwrap().to_string())
}

/// The storage-fenced recordings (testenv's fenced data path, a NetworkFence per run): the
/// fence is requested after NotReady, succeeds before the taint, the storage's refusal is seen
/// (right after the fence for the cut-off writer; at the thaw for the frozen one), and the fence
/// is lifted only after the node is back. The fence's verdict is checked against an oracle that
/// reads the ledger's records and the `succeeded` event's wall clock directly.
#[test]
fn the_storage_fence_recordings_held_and_say_when() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/storage-fence");
    let report = stored(&root);
    for (id, variant) in [
        (
            "storage-fence/oos-taint-storage-fenced/1",
            "oos-taint-storage-fenced",
        ),
        (
            "storage-fence/freeze-storage-fenced/1",
            "freeze-storage-fenced",
        ),
    ] {
        let r = run(&report, id);
        let at = |p: Phase| {
            r.phases
                .iter()
                .find(|x| x.name == p)
                .unwrap_or_else(|| panic!("{id}: no {}", p.name()))
                .at_ms
        };
        assert!(at(Phase::NodeNotReady) <= at(Phase::FenceRequested), "{id}");
        assert!(
            at(Phase::FenceRequested) <= at(Phase::FenceSucceeded),
            "{id}"
        );
        assert!(
            at(Phase::FenceSucceeded) <= at(Phase::OutOfServiceTaint),
            "{id}"
        );
        assert!(at(Phase::FenceSucceeded) < at(Phase::WriteRefused), "{id}");
        assert!(at(Phase::FaultHealed) <= at(Phase::Unfenced), "{id}");
        if variant == "freeze-storage-fenced" {
            // The frozen writer resumes into the fence when the node thaws.
            assert!(at(Phase::WriteRefused) >= at(Phase::FaultHealed), "{id}");
        } else {
            // The cut-off writer runs on: its next write after the fence is refused.
            assert!(
                at(Phase::WriteRefused) - at(Phase::FenceSucceeded) < 2_000,
                "{id}"
            );
        }
        let fence = r
            .expectations
            .iter()
            .find(|e| e.name == "fenceEfficacy")
            .unwrap();
        assert_eq!(fence.actual, "held", "{id}");
        let i = r.integrity.as_ref().unwrap();
        assert_eq!(i.verdict, nodedown::report::Verdict::Pass, "{id}");

        // The oracle: the wall clock of the `succeeded` line, and every record of the fenced
        // node in the ledger written before it.
        let dir = root.join(id);
        let (fenced_ms, node) = fence_line(&dir, "succeeded");
        let node = node.as_str();
        let ledger = std::fs::read(dir.join("ledger/ledger.bin")).unwrap();
        let of_node: Vec<u64> = ledger
            .chunks_exact(nodedown::integrity::RECORD_LEN)
            .filter_map(|c| nodedown::integrity::decode(c.try_into().unwrap()).ok())
            .filter(|rec| rec.incarnation.node == node)
            .map(|rec| rec.written_ms)
            .collect();
        assert!(
            !of_node.is_empty(),
            "{id}: the fenced node wrote before the fence"
        );
        assert!(
            of_node.iter().all(|&t| t <= fenced_ms),
            "{id}: a record of {node} written after the fence succeeded"
        );
    }
}

/// The fence lifted early (`liftAfter`, a frozen node): it held while it stood, and the records
/// the zombie writer wrote once it was lifted are the unfence hazard — counted the same by an
/// oracle reading the ledger and the `unfenced` line's wall clock directly — and they cost the
/// replacement acknowledged writes.
#[test]
fn the_fence_lifted_early_recording_shows_the_unfence_hazard() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/storage-fence-lifted");
    let report = stored(&root);
    let id = "storage-fence/freeze-fence-lifted-early/1";
    let r = run(&report, id);
    let at = |p: Phase| r.phases.iter().find(|x| x.name == p).map(|x| x.at_ms);
    assert!(at(Phase::FenceSucceeded) < at(Phase::Unfenced));
    assert!(
        at(Phase::Unfenced) < at(Phase::FaultHealed),
        "lifted while frozen"
    );
    let i = r.integrity.as_ref().unwrap();
    assert_eq!(i.verdict, nodedown::report::Verdict::Fail);
    assert!(i.lost_acknowledged > 0, "{}", i.evidence);
    let f = i.fence.as_ref().unwrap();
    assert_eq!(
        f.verdict,
        nodedown::report::Verdict::Pass,
        "held while it stood"
    );
    assert_eq!(f.through_fence, 0);
    assert!(f.after_unfence > 0);

    let dir = root.join(id);
    let (unfenced_ms, node) = fence_line(&dir, "unfenced");
    let ledger = std::fs::read(dir.join("ledger/ledger.bin")).unwrap();
    let after: usize = ledger
        .chunks_exact(nodedown::integrity::RECORD_LEN)
        .filter_map(|c| nodedown::integrity::decode(c.try_into().unwrap()).ok())
        .filter(|rec| rec.incarnation.node == node && rec.written_ms >= unfenced_ms)
        .count();
    assert_eq!(after as u64, f.after_unfence);

    // And they are split brain: the replacement's acknowledged seqs the ledger holds as the
    // zombie's records — counted here from acks.jsonl and the ledger alone.
    let records: Vec<_> = ledger
        .chunks_exact(nodedown::integrity::RECORD_LEN)
        .filter_map(|c| nodedown::integrity::decode(c.try_into().unwrap()).ok())
        .collect();
    let acks: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("acks.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let started = |a: &serde_json::Value| a["incarnation"]["startedMs"].as_u64().unwrap();
    let newest = acks.iter().map(started).max().unwrap();
    let uid = |a: &serde_json::Value| a["incarnation"]["podUid"].as_str().unwrap().to_string();
    let newer_uid = uid(acks.iter().find(|a| started(a) == newest).unwrap());
    let newer_acked: Vec<u64> = acks
        .iter()
        .filter(|a| uid(a) == newer_uid)
        .map(|a| a["seq"].as_u64().unwrap())
        .collect();
    let own: std::collections::HashSet<u64> = records
        .iter()
        .filter(|r| r.incarnation.pod_uid == newer_uid)
        .map(|r| r.seq)
        .collect();
    let older: std::collections::HashSet<u64> = records
        .iter()
        .filter(|r| r.incarnation.started_ms < newest)
        .map(|r| r.seq)
        .collect();
    let lo = own.iter().chain(&newer_acked).copied().min().unwrap();
    let hi = newer_acked.iter().copied().max().unwrap();
    let overwritten = (lo..=hi)
        .filter(|s| !own.contains(s) && older.contains(s))
        .count();
    assert!(overwritten > 0);
    assert!(i.split_brain, "{}", i.evidence);
    let said = format!(
        "{overwritten} acknowledged write{} of a newer writer overwritten by an older one",
        if overwritten == 1 { "" } else { "s" }
    );
    assert!(
        i.summary.contains(&said) || i.evidence.contains(&said),
        "{said}: {} / {}",
        i.summary,
        i.evidence
    );
}
