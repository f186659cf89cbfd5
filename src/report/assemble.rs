//! Builds the result model from run directories' contents: `run.json` (a [`PlannedRun`]) and
//! `events.jsonl` (the [`Event`]s). Pure: everything is recomputed from these two.

use super::{
    CounterChangeResult, Environment, ExperimentResult, FleetMetricResult, FleetResult,
    InstanceResult, IntegrityResult, InvocationResult, PhaseResult, PhaseWindowResult, Report,
    RunResult, StageTime, TimeZeroResult, VariantSummary, WriteOutage, SCHEMA_VERSION,
};
use crate::integrity::{write_outage, Ack, IntegrityReport};
use crate::plan::PlannedRun;
use crate::report::InvocationTimes;
use crate::timeline::{analyze_fleet, fleet_metrics, slowest, Event, EventKind, FAILOVER_STAGE};
use crate::verdict::{combine, combine_instances, evaluate, evaluate_integrity, Verdict};

/// The error of a run whose events.jsonl has no `run-finished` line (the harness crashed or was
/// killed while observing).
pub const NOT_FINISHED: &str = "run did not finish (no run-finished event)";

/// The result of one run: its timeline, phases, metrics and verdict.
pub fn run_result(run: &PlannedRun, events: &[Event]) -> RunResult {
    run_result_with(run, events, &Ledgers::new())
}

/// Ledger evidence of a run: the checker's report and the acknowledgements observed.
pub type LedgerEvidence = (
    IntegrityReport,
    Vec<Ack>,
    Option<crate::integrity::FenceEfficacy>,
);

/// The ledger evidence of a run's instances, by instance name (`spec::instance_names`);
/// an instance without evidence is absent.
pub type Ledgers = std::collections::BTreeMap<String, LedgerEvidence>;

/// One instance's reading: its timeline, expectations, write outage and integrity.
struct InstanceParts {
    name: String,
    timeline: crate::timeline::Timeline,
    expectations: Vec<crate::verdict::ExpectationResult>,
    outage: Option<WriteOutage>,
    integrity: Option<IntegrityResult>,
}

fn instance_parts(
    run: &PlannedRun,
    name: String,
    timeline: crate::timeline::Timeline,
    ledger: Option<&LedgerEvidence>,
    error: Option<&str>,
) -> InstanceParts {
    // A member the fault left alone (another replica's node) has nothing to recover: it is
    // expected to serve on undisturbed.
    let mut expectations = if timeline.affected() {
        evaluate(run, &timeline, error).0
    } else {
        vec![crate::verdict::undisturbed(&timeline)]
    };
    let outage = match (ledger, timeline.fault_at_ms) {
        (Some((_, acks, _)), Some(fault)) => {
            let watch_end = fault + timeline.observed_ms.unwrap_or(0);
            write_outage(acks, fault, watch_end).map(|o| (o, fault))
        }
        _ => None,
    };
    expectations.extend(evaluate_integrity(
        run,
        ledger.map(|(r, _, _)| r),
        outage.map(|(o, _)| o),
        ledger.map_or(0, |(_, a, _)| a.len()),
    ));
    if let Some(fence) = ledger.and_then(|(_, _, f)| f.as_ref()) {
        expectations.push(crate::verdict::fence_efficacy(fence));
    }
    let outage = outage.map(|(o, fault)| WriteOutage {
        duration_ms: o.duration_ms(),
        from_ms: o.from_ms as i64 - fault as i64,
        until_ms: o.until_ms as i64 - fault as i64,
        restored: o.restored,
    });
    let integrity = ledger.map(|(r, _, fence)| IntegrityResult {
        fence: fence.clone(),
        verdict: r.verdict,
        summary: r.summary(),
        records: r.records_valid,
        writers: r.writers() as u64,
        acknowledged: r.acks.acknowledged_writes,
        lost_acknowledged: r.lost_acked.count,
        corrupt: r.corrupt.count,
        split_brain: r.split_brain.detected,
        evidence: r.evidence(),
        incarnations: r
            .incarnations
            .iter()
            .map(|w| super::WriterResult {
                pod: w.incarnation.pod.clone(),
                pod_uid: w.incarnation.pod_uid.clone(),
                node: w.incarnation.node.clone(),
                started: humantime::format_rfc3339_millis(
                    std::time::UNIX_EPOCH
                        + std::time::Duration::from_millis(w.incarnation.started_ms),
                )
                .to_string(),
                records: w.count,
                first_seq: w.first_seq,
                last_seq: w.last_seq,
                acked_up_to: w.max_acked_seq,
            })
            .collect(),
    });
    InstanceParts {
        name,
        timeline,
        expectations,
        outage,
        integrity,
    }
}

/// A fleet's integrity: the instances' counts added up, the worst verdict (Fail over Unknown
/// over Pass), the most writers any instance saw, and the evidence of the instances that did
/// not pass, each named.
fn fleet_integrity(parts: &[InstanceParts]) -> Option<IntegrityResult> {
    let with: Vec<(&str, &IntegrityResult)> = parts
        .iter()
        .filter_map(|p| p.integrity.as_ref().map(|i| (p.name.as_str(), i)))
        .collect();
    if with.is_empty() {
        return None;
    }
    let missing = parts.len() - with.len();
    let worst = |v: Verdict| with.iter().any(|(_, i)| i.verdict == v);
    let verdict = if worst(Verdict::Fail) {
        Verdict::Fail
    } else if worst(Verdict::Unknown) || missing > 0 {
        Verdict::Unknown
    } else {
        Verdict::Pass
    };
    let not_passed: Vec<&(&str, &IntegrityResult)> = with
        .iter()
        .filter(|(_, i)| i.verdict != Verdict::Pass)
        .collect();
    let passed = with.len() - not_passed.len();
    let mut summary = format!("{passed} of {} instances pass", parts.len());
    if !not_passed.is_empty() {
        let named: Vec<String> = not_passed
            .iter()
            .map(|(n, i)| format!("{n}: {}", i.summary))
            .collect();
        summary.push_str(&format!("; {}", named.join("; ")));
    }
    if missing > 0 {
        summary.push_str(&format!("; {missing} without ledger evidence"));
    }
    let evidence = not_passed
        .iter()
        .map(|(n, i)| format!("[{n}]\n{}", i.evidence))
        .collect::<Vec<_>>()
        .join("\n");
    Some(IntegrityResult {
        verdict,
        summary,
        records: with.iter().map(|(_, i)| i.records).sum(),
        writers: with.iter().map(|(_, i)| i.writers).max().unwrap_or(0),
        acknowledged: with.iter().map(|(_, i)| i.acknowledged).sum(),
        lost_acknowledged: with.iter().map(|(_, i)| i.lost_acknowledged).sum(),
        corrupt: with.iter().map(|(_, i)| i.corrupt).sum(),
        split_brain: with.iter().any(|(_, i)| i.split_brain),
        evidence,
        incarnations: vec![],
        // The instance whose ledger shows the most records through the fence.
        fence: with
            .iter()
            .filter_map(|(_, i)| i.fence.clone())
            .max_by_key(|f| (f.through_fence, f.after_unfence)),
    })
}

fn phase_results(tl: &crate::timeline::Timeline) -> Vec<PhaseResult> {
    tl.phases
        .iter()
        .map(|p| PhaseResult {
            name: p.phase,
            at_ms: p.at_ms,
            since_ms: p.since_ms,
        })
        .collect()
}

/// The nodes a run's fault took, in the order of their `fault-injected` events, when more than
/// one.
fn fault_nodes(events: &[Event]) -> Vec<String> {
    let mut nodes: Vec<String> = Vec::new();
    for e in events {
        if let EventKind::FaultInjected { node, .. } = &e.what {
            if !nodes.contains(node) {
                nodes.push(node.clone());
            }
        }
    }
    if nodes.len() > 1 {
        nodes
    } else {
        vec![]
    }
}

/// Why the harness could not complete a run: its `run-finished` event's error, or
/// [`NOT_FINISHED`] when it has none.
pub fn run_error(events: &[Event]) -> Option<String> {
    let finished = events.iter().rev().find_map(|e| match &e.what {
        EventKind::RunFinished { error } => Some(error.clone()),
        _ => None,
    });
    match finished {
        Some(error) => error,
        None => Some(NOT_FINISHED.to_string()),
    }
}

/// [`run_result`] with the ledger evidence of the run's instances. A simulated run's (provider
/// kwok) is [`super::simulated::run_result`]: the same result, its figures folded over hundreds
/// of instances.
/// The wall clock of time zero (RFC 3339, ms): the run's first event's wall clock moved by the
/// fault's offset from it on the run's monotonic clock.
fn time_zero_wall(events: &[Event], fault_at_ms: Option<u64>) -> Option<String> {
    let first = events.first()?;
    let at = fault_at_ms?;
    let wall = humantime::parse_rfc3339(&first.wall).ok()?;
    let t0 = wall + std::time::Duration::from_millis(at.checked_sub(first.at_ms)?);
    Some(humantime::format_rfc3339_millis(t0).to_string())
}

pub fn run_result_with(run: &PlannedRun, events: &[Event], ledgers: &Ledgers) -> RunResult {
    if run.cluster.provider == crate::spec::Provider::Kwok {
        return super::simulated::run_result(run, events);
    }
    let error = run_error(events);
    let names = crate::spec::members(&run.workload);
    let timelines = analyze_fleet(names, events);
    let fleet = (timelines.len() > 1).then(|| fleet_metrics(&timelines));
    let slowest = slowest(&timelines).unwrap_or(0);
    let mut parts: Vec<InstanceParts> = timelines
        .into_iter()
        .map(|(name, tl)| {
            let ledger = ledgers.get(&name);
            instance_parts(run, name, tl, ledger, error.as_deref())
        })
        .collect();
    let (timeline, expectations, write_outage, integrity, instances) = if parts.len() == 1 {
        let one = parts.pop().expect("one instance");
        (
            one.timeline,
            one.expectations,
            one.outage,
            one.integrity,
            vec![],
        )
    } else {
        let per: Vec<(&str, &[crate::verdict::ExpectationResult])> = parts
            .iter()
            .map(|p| (p.name.as_str(), p.expectations.as_slice()))
            .collect();
        let expectations = combine_instances(&per);
        let integrity = fleet_integrity(&parts);
        // The members the fault took: an open outage before any restored one, then the
        // longest.
        let outage = parts
            .iter()
            .filter(|p| p.timeline.affected())
            .filter_map(|p| p.outage.clone())
            .max_by_key(|o| (!o.restored, o.duration_ms));
        let timeline = parts[slowest].timeline.clone();
        let instances = parts
            .into_iter()
            .map(|p| InstanceResult {
                verdict: combine(&p.expectations, error.is_some()),
                pod: p.timeline.target_pod.clone(),
                start_node: p.timeline.target_node.clone(),
                unaffected: !p.timeline.affected(),
                replacement_node: p.timeline.replacement_node.clone(),
                phases: phase_results(&p.timeline),
                metrics: p.timeline.metrics(),
                write_outage: p.outage,
                expectations: p.expectations,
                integrity: p.integrity,
                name: p.name,
            })
            .collect();
        (timeline, expectations, outage, integrity, instances)
    };
    let verdict = combine(&expectations, error.is_some());
    let duration_ms = match (events.first(), events.last()) {
        (Some(first), Some(last)) => last.at_ms.saturating_sub(first.at_ms),
        _ => 0,
    };
    let environment = (timeline.facts.is_some() || timeline.backend.is_some()).then(|| {
        let facts = timeline.facts.as_ref();
        Environment {
            kubernetes: facts.map(|f| f.kubernetes.clone()),
            target_node_info: facts.and_then(|f| {
                f.nodes
                    .iter()
                    .find(|n| Some(&n.name) == timeline.target_node.as_ref())
                    .cloned()
            }),
            node_count: facts.map(|f| f.nodes.len()),
            storage_class: facts.map(|f| f.storage_class.clone()),
            provisioner: facts.and_then(|f| f.provisioner.clone()),
            attach_required: facts.and_then(|f| f.attach_required),
            backend: timeline.backend,
        }
    });
    let controller_counters = match (&timeline.counters_before, &timeline.counters_after) {
        (Some(before), Some(after)) => Some(
            after
                .iter()
                .filter(|(series, v)| before.get(*series) != Some(*v))
                // PodGC's series name their namespace: another run's are not this one's.
                .filter(|(series, _)| {
                    match (series_namespace(series), timeline.namespace.as_deref()) {
                        (Some(of), Some(own)) => of == own,
                        _ => true,
                    }
                })
                .map(|(series, v)| CounterChangeResult {
                    series: series.clone(),
                    before: before.get(series).copied(),
                    after: *v,
                    shared_with: vec![],
                    beyond_invocation: timeline.confined && series_namespace(series).is_none(),
                })
                .collect(),
        ),
        _ => None,
    };
    let mut result = RunResult {
        id: run.id.clone(),
        variant: run.variant.clone(),
        variant_description: run.variant_description.clone(),
        repetition: run.repetition,
        fault: run.fault.kind,
        remediation: run.remediation.kind(),
        remediation_detail: timeline.remediation_detail.clone(),
        provider: Some(run.cluster.provider),
        profile: run.cluster.config.as_ref().map(|p| p.display().to_string()),
        started: events.first().map(|e| e.wall.clone()),
        duration_ms,
        stages_ms: timeline
            .stages
            .iter()
            .map(|(stage, ms)| StageTime {
                stage: *stage,
                ms: *ms,
            })
            .collect(),
        lane: timeline.lane,
        lane_nodes: timeline.lane_nodes.clone(),
        target_node: timeline.target_node.clone(),
        fault_nodes: fault_nodes(events),
        replacement_node: timeline.replacement_node.clone(),
        time_zero: timeline.time_zero.map(|z| TimeZeroResult {
            basis: z.basis.as_str().to_string(),
            requested_ms: z.requested_ms,
            returned_ms: z.returned_ms,
            wall: time_zero_wall(events, timeline.fault_at_ms),
        }),
        phases: phase_results(&timeline),
        metrics: timeline.metrics(),
        write_outage,
        expectations,
        verdict,
        error,
        environment,
        spec_hash: spec_hash(run),
        integrity,
        controller_counters,
        instances,
        fleet: fleet.map(|f| FleetResult {
            instances: f.instances,
            unaffected: f.unaffected,
            recovered: f.recovered,
            time_to_all_ready_ms: f.time_to_all_ready,
            slowest_instance: f.slowest,
            metrics: f
                .spreads
                .into_iter()
                .map(|s| FleetMetricResult {
                    metric: s.metric.name().to_string(),
                    spread: s.spread,
                    max_instance: s.max_instance,
                })
                .collect(),
            windows: f
                .windows
                .into_iter()
                .map(|w| PhaseWindowResult {
                    phase: w.phase,
                    count: w.count,
                    first_ms: w.first_ms,
                    last_ms: w.last_ms,
                    per_second: w.per_second.map(|r| (r * 100.0).round() / 100.0),
                })
                .collect(),
        }),
        outcome: None,
        scale: None,
    };
    result.outcome = Some(super::outcome::of(&result));
    result
}

/// The `namespace` label of a counter series (`name{namespace="nd-x",reason="…"}`), if any.
pub fn series_namespace(series: &str) -> Option<&str> {
    let labels = series.split_once('{')?.1.strip_suffix('}')?;
    labels.split(',').find_map(|l| {
        l.trim()
            .strip_prefix("namespace=\"")
            .and_then(|v| v.strip_suffix('"'))
    })
}

/// A run's counter window: the wall clock of its `before-fault` and `after-recovery`
/// counter readings.
fn counter_window(events: &[Event]) -> Option<(std::time::SystemTime, std::time::SystemTime)> {
    let at = |stage: &str| {
        events.iter().find_map(|e| match &e.what {
            EventKind::ControllerCounters { stage: s, .. } if s == stage => {
                humantime::parse_rfc3339_weak(&e.wall).ok()
            }
            _ => None,
        })
    };
    Some((at("before-fault")?, at("after-recovery")?))
}

/// Cluster-wide counters (no `namespace` label) count every failover in the cluster: a run's
/// change is its own only when no other run of the invocation was between its two readings
/// at the same time. Otherwise each such series names the runs it is shared with (never split
/// by guess). `windows[i]` belongs to `runs[i]`.
pub fn mark_shared_counters(
    runs: &mut [&mut RunResult],
    windows: &[Option<(std::time::SystemTime, std::time::SystemTime)>],
) {
    for i in 0..runs.len() {
        let Some((from, until)) = windows[i] else {
            continue;
        };
        let others: Vec<String> = (0..runs.len())
            .filter(|&j| j != i)
            .filter(|&j| windows[j].is_some_and(|(f, u)| f < until && from < u))
            .map(|j| runs[j].id.clone())
            .collect();
        if others.is_empty() {
            continue;
        }
        for c in runs[i].controller_counters.iter_mut().flatten() {
            if series_namespace(&c.series).is_none() {
                c.shared_with = others.clone();
            }
        }
    }
}

/// Per variant (in first-seen order): verdict counts and the spread of every metric over its
/// repetitions.
pub fn summarize(runs: &[RunResult]) -> Vec<VariantSummary> {
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        if !names.contains(&r.variant.as_str()) {
            names.push(&r.variant);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let of: Vec<&RunResult> = runs.iter().filter(|r| r.variant == name).collect();
            let count = |v: crate::verdict::Verdict| of.iter().filter(|r| r.verdict == v).count();
            let metrics = crate::timeline::Metric::ALL
                .into_iter()
                .filter_map(|m| {
                    let values: Vec<u64> = of
                        .iter()
                        .filter_map(|r| r.metrics.get(&m).copied())
                        .collect();
                    crate::units::spread(&values).map(|s| (m, s))
                })
                .collect();
            let outages: Vec<u64> = of
                .iter()
                .filter_map(|r| r.write_outage.as_ref())
                .filter(|o| o.restored)
                .map(|o| o.duration_ms)
                .collect();
            let write_outage_not_restored = of
                .iter()
                .filter(|r| r.write_outage.as_ref().is_some_and(|o| !o.restored))
                .count();
            let mut integrity = std::collections::BTreeMap::new();
            for r in &of {
                if let Some(i) = &r.integrity {
                    *integrity.entry(i.verdict.as_str().to_string()).or_insert(0) += 1;
                }
            }
            let passed = count(crate::verdict::Verdict::Pass);
            VariantSummary {
                variant: name.to_string(),
                runs: of.len(),
                passed,
                failed: count(crate::verdict::Verdict::Fail),
                unknown: count(crate::verdict::Verdict::Unknown),
                pass_rate: passed as f64 / of.len() as f64,
                metrics,
                write_outage: crate::units::spread(&outages),
                write_outage_not_restored,
                integrity,
            }
        })
        .collect()
}

/// The first 16 hex digits of SHA-256 over the run's resolved spec as JSON, without what names
/// the run (id, file, variant, repetition).
pub fn spec_hash(run: &PlannedRun) -> String {
    use sha2::{Digest, Sha256};
    let spec = serde_json::json!({
        "cluster": run.cluster,
        "workload": run.workload,
        "fault": run.fault,
        "remediation": run.remediation,
        "timeouts": run.timeouts,
        "expect": run.expect,
    });
    let digest = Sha256::digest(spec.to_string().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The report of many runs, grouped by experiment in the order experiments are first seen
/// (runs keep their given order within an experiment). `tool_version` is the bare version,
/// e.g. `0.1.0`; the report's `tool` is `nodedown <version>`.
pub fn report(runs: Vec<(PlannedRun, Vec<Event>)>, tool_version: &str) -> Report {
    report_with(
        runs.into_iter()
            .map(|(r, e)| (r, e, Ledgers::new()))
            .collect(),
        tool_version,
    )
}

/// [`report`] with each run's ledger evidence, when it has any.
pub fn report_with(runs: Vec<(PlannedRun, Vec<Event>, Ledgers)>, tool_version: &str) -> Report {
    let mut experiments: Vec<ExperimentResult> = Vec::new();
    let mut windows = Vec::new();
    for (run, events, ledgers) in runs {
        let result = run_result_with(&run, &events, &ledgers);
        windows.push((run.id.clone(), counter_window(&events)));
        match experiments.iter_mut().find(|e| e.name == run.experiment) {
            Some(exp) => exp.runs.push(result),
            None => experiments.push(ExperimentResult {
                name: run.experiment.clone(),
                file: run.file.display().to_string(),
                runs: vec![result],
                variants: vec![],
                description: run.description.clone(),
            }),
        }
    }
    let mut all: Vec<&mut RunResult> = experiments
        .iter_mut()
        .flat_map(|e| e.runs.iter_mut())
        .collect();
    let windows: Vec<_> = all
        .iter()
        .map(|r| {
            windows
                .iter()
                .find(|(id, _)| *id == r.id)
                .and_then(|(_, w)| *w)
        })
        .collect();
    mark_shared_counters(&mut all, &windows);
    for exp in &mut experiments {
        exp.variants = summarize(&exp.runs);
    }
    Report {
        schema_version: SCHEMA_VERSION,
        tool: format!("nodedown {tool_version}"),
        invocation: None,
        origin: None,
        experiments,
        not_run: vec![],
        dir: None,
    }
}

/// The invocation's wall time with the failovers' share of it, from its recorded `times` and
/// the runs' stages.
pub fn invocation(report: &Report, times: InvocationTimes) -> InvocationResult {
    let failover_ms: u64 = report
        .experiments
        .iter()
        .flat_map(|e| &e.runs)
        .flat_map(|r| &r.stages_ms)
        .filter(|s| s.stage == FAILOVER_STAGE)
        .map(|s| s.ms)
        .sum();
    let capacity = times.total_ms * u64::from(times.lanes.max(1));
    let share = if capacity == 0 {
        0.0
    } else {
        1.0 - (failover_ms.min(capacity) as f64 / capacity as f64)
    };
    InvocationResult {
        total_ms: times.total_ms,
        prepare_ms: times.prepare_ms,
        runs_ms: times.runs_ms,
        finish_ms: times.finish_ms,
        lanes: times.lanes.max(1),
        failover_ms,
        harness_share: (share * 1000.0).round() / 1000.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::fixtures::{events, OOS_TAINT};
    use crate::report::fixtures;
    use crate::report::Verdict;

    #[test]
    fn series_name_their_namespace() {
        assert_eq!(
            series_namespace(
                r#"pod_gc_collector_force_delete_pods_total{namespace="nd-x",reason="out-of-service"}"#
            ),
            Some("nd-x")
        );
        assert_eq!(
            series_namespace(
                r#"attach_detach_controller_attachdetach_controller_forced_detaches{reason="timeout"}"#
            ),
            None
        );
        assert_eq!(series_namespace("no_labels_total"), None);
    }

    /// Synthetic windows: a and b overlap, c comes after both.
    #[test]
    fn cluster_wide_counters_are_shared_by_overlapping_runs_and_labelled_ones_are_not() {
        let run = fixtures::oos_run();
        let mut base = run_result(&run, &events(OOS_TAINT));
        let detach = r#"attach_detach_controller_attachdetach_controller_forced_detaches{reason="out-of-service"}"#;
        let podgc =
            r#"pod_gc_collector_force_delete_pods_total{namespace="nd-a",reason="out-of-service"}"#;
        base.controller_counters = Some(vec![
            CounterChangeResult {
                series: detach.into(),
                before: Some(1),
                after: 3,
                shared_with: vec![],
                beyond_invocation: false,
            },
            CounterChangeResult {
                series: podgc.into(),
                before: None,
                after: 1,
                shared_with: vec![],
                beyond_invocation: false,
            },
        ]);
        let named = |id: &str| RunResult {
            id: id.into(),
            ..base.clone()
        };
        let (mut a, mut b, mut c) = (named("a"), named("b"), named("c"));
        let t = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        let windows = [
            Some((t(0), t(60))),
            Some((t(30), t(90))),
            Some((t(90), t(120))),
        ];
        mark_shared_counters(&mut [&mut a, &mut b, &mut c], &windows);
        let shared = |r: &RunResult, i: usize| {
            r.controller_counters.as_ref().unwrap()[i]
                .shared_with
                .clone()
        };
        assert_eq!(shared(&a, 0), vec!["b".to_string()]);
        assert_eq!(shared(&b, 0), vec!["a".to_string()], "c begins when b ends");
        assert!(shared(&c, 0).is_empty(), "alone in its window: its own");
        assert!(
            shared(&a, 1).is_empty(),
            "PodGC names its namespace: never shared"
        );
        // A run without a window (counters not read) shares nothing and is shared by none.
        let (mut a, mut b) = (named("a"), named("b"));
        mark_shared_counters(&mut [&mut a, &mut b], &[Some((t(0), t(60))), None]);
        assert!(shared(&a, 0).is_empty());
    }

    #[test]
    fn run_result_of_the_oos_taint_run() {
        let run = fixtures::oos_run();
        let r = run_result(&run, &events(OOS_TAINT));
        assert_eq!(r.id, "node-shutdown/oos-taint/1");
        assert_eq!(r.fault.as_str(), "node-shutdown");
        assert_eq!(r.remediation.as_str(), "out-of-service-taint");
        assert_eq!(r.profile.as_deref(), Some("kind-configs/fast.yaml"));
        assert_eq!(r.started.as_deref(), Some("2025-06-02T10:15:00.000Z"));
        assert_eq!(r.duration_ms, 68_506);
        assert_eq!(r.target_node.as_deref(), Some("kind-worker"));
        assert_eq!(r.replacement_node.as_deref(), Some("kind-worker2"));
        assert_eq!(r.phases[0].name, crate::timeline::Phase::FaultInjected);
        assert_eq!(
            r.phases.last().unwrap().name,
            crate::timeline::Phase::FaultHealed
        );
        assert_eq!(r.metrics[&crate::timeline::Metric::TimeToReady], 39_700);
        assert_eq!(r.error, None);
        assert_eq!(r.verdict, Verdict::Pass);
    }

    #[test]
    fn missing_run_finished_is_an_error_and_unknown() {
        let run = fixtures::oos_run();
        let mut ev = events(OOS_TAINT);
        ev.retain(|e| !matches!(e.what, EventKind::RunFinished { .. }));
        let r = run_result(&run, &ev);
        assert_eq!(r.error.as_deref(), Some(NOT_FINISHED));
        // Every expectation is decided (all passed) but the run did not finish.
        assert_eq!(r.verdict, Verdict::Unknown);

        let r = run_result(&run, &[]);
        assert_eq!(r.duration_ms, 0);
        assert_eq!(r.started, None);
        assert!(r.phases.is_empty());
        assert_eq!(r.verdict, Verdict::Unknown);
    }

    #[test]
    fn run_finished_error_is_carried() {
        let run = fixtures::oos_run();
        let mut ev = events(OOS_TAINT);
        if let Some(last) = ev.last_mut() {
            last.what = EventKind::RunFinished {
                error: Some("heal failed".into()),
            };
        }
        let r = run_result(&run, &ev);
        assert_eq!(r.error.as_deref(), Some("heal failed"));
        assert_eq!(r.verdict, Verdict::Unknown);
    }

    /// Synthetic stages (two runs of the golden report given made-up stage times).
    #[test]
    fn harness_share_is_all_but_the_fault_stages() {
        let mut rep = fixtures::golden_report();
        let stages = |fault: u64| {
            [
                crate::timeline::Stage::Setup,
                crate::timeline::Stage::SteadyState,
                FAILOVER_STAGE,
                crate::timeline::Stage::Heal,
            ]
            .iter()
            .zip([100, 3_000, fault, 6_000])
            .map(|(s, ms)| StageTime { stage: *s, ms })
            .collect::<Vec<_>>()
        };
        rep.experiments[0].runs[0].stages_ms = stages(30_000);
        rep.experiments[0].runs[1].stages_ms = stages(20_000);
        let times = InvocationTimes {
            prepare_ms: 10_000,
            runs_ms: 68_200,
            finish_ms: 1_800,
            total_ms: 80_000,
            lanes: 1,
        };
        let inv = invocation(&rep, times);
        assert_eq!(inv.failover_ms, 50_000);
        assert_eq!(inv.harness_share, 0.375);
        // Two lanes: twice the capacity for the same failovers.
        let two = invocation(&rep, InvocationTimes { lanes: 2, ..times });
        assert_eq!((two.lanes, two.harness_share), (2, 0.688));
        assert_eq!((inv.prepare_ms, inv.total_ms), (10_000, 80_000));
        let md = crate::report::markdown::render(&Report {
            invocation: Some(inv),
            ..rep
        });
        assert!(
            md.contains("Wall time of the invocation: 1m20s") && md.contains("harness share 38%"),
            "{md}"
        );
    }

    #[test]
    fn report_groups_by_experiment_in_first_seen_order() {
        let rep = fixtures::golden_report();
        assert_eq!(rep.tool, "nodedown 0.1.0-test");
        assert_eq!(rep.schema_version, SCHEMA_VERSION);
        let names: Vec<_> = rep.experiments.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["node-shutdown", "strict-recovery"]);
        let ids: Vec<_> = rep.experiments[0]
            .runs
            .iter()
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "node-shutdown/oos-taint/1",
                "node-shutdown/baseline/1",
                "node-shutdown/force-delete/1",
                "node-shutdown/force-delete/2",
            ]
        );
        assert_eq!(rep.experiments[0].file, "experiments/node-shutdown.yaml");
    }

    #[test]
    fn variants_summarize_their_repetitions() {
        let rep = fixtures::golden_report();
        let exp = &rep.experiments[0];
        let names: Vec<_> = exp.variants.iter().map(|v| v.variant.as_str()).collect();
        assert_eq!(names, ["oos-taint", "baseline", "force-delete"]);
        let fd = &exp.variants[2];
        assert_eq!((fd.runs, fd.passed + fd.failed + fd.unknown), (2, 2));
        assert_eq!(fd.pass_rate, fd.passed as f64 / 2.0);
        let ready = fd.metrics[&crate::timeline::Metric::TimeToReady];
        assert_eq!(ready.count, 2);
        let values: Vec<u64> = exp
            .runs
            .iter()
            .filter(|r| r.variant == "force-delete")
            .map(|r| r.metrics[&crate::timeline::Metric::TimeToReady])
            .collect();
        assert_eq!(ready.min_ms, values.iter().min().copied());
        assert_eq!(ready.max_ms, *values.iter().max().unwrap());
        assert_eq!(
            ready.p90_ms,
            Some(ready.max_ms),
            "nearest rank of two values"
        );
        assert_eq!(
            ready.p50_ms,
            *values.iter().min().unwrap(),
            "the lower middle value"
        );
        // A metric no run measured is absent, not zero.
        let baseline = &exp.variants[1];
        assert!(!baseline
            .metrics
            .contains_key(&crate::timeline::Metric::TimeToReady));
    }
}
