//! The report of simulated runs (provider kwok; pure): one run's `results.json` model, its
//! summary page, and the curve over an invocation's runs as Markdown and JUnit. Its figures are
//! [`crate::timeline::scale`]'s, its verdicts [`crate::verdict::simulated`]'s.

use super::outcome::{Outcome, Recovery};
use super::{Report, RunResult};
use crate::plan::PlannedRun;
use crate::timeline::scale::{Milestone, MilestoneFigure, ScaleFold, ScaleObservations, Usage};
use crate::timeline::{Event, EventKind, SimulatedCluster};
use crate::units::fmt_opt_ms;
use crate::verdict::{ExpectationResult, Verdict};
use serde::{Deserialize, Serialize};

/// The banner every report of a simulated run carries.
pub const BANNER: &str = "SIMULATED: kwok's nodes and pods against a real control plane (API server, etcd, controller-manager, scheduler, external-attacher). Control-plane timings only: no kubelet, no container, no data path, no integrity verdict.";

/// What a simulated run measured besides what every run has: the `scale` part of its
/// [`RunResult`]. Its figures are a fold over the run's events ([`ScaleFold`]), recomputed by
/// `nodedown report` from the run's directory like every other run's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScaleResult {
    /// The simulated cluster (absent in runs recorded before nodedown recorded it in their
    /// events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<SimulatedCluster>,
    /// The curve's coordinates: nodes lost at once and the instances (pods with an attaching
    /// volume) placed on them.
    pub lost_nodes: usize,
    pub instances: usize,
    /// UTC time zero (the fault applied to the first lost node), RFC 3339; absent when the run
    /// ended before its fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zero: Option<String>,
    /// Each failover phase over the lost nodes or the instances: how many reached it and when.
    pub milestones: Vec<MilestoneFigure>,
    /// nodedown's own reaction: a node seen NotReady to the out-of-service taint on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taint_reaction: Option<crate::units::Spread>,
    /// Control-plane processes, kwok and nodedown from the fault to the end of the recovery
    /// (empty: not measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cost: Vec<Usage>,
    /// Changes nodedown's watches recorded from the fault on (nodes, pods, claims,
    /// VolumeAttachments: the `events.jsonl` lines derived from a watched object).
    pub events_seen: u64,
    pub observations: ScaleObservations,
}

/// The result of simulated run `run` from its events — the one rule for the runner, `nodedown
/// report` and `compare`: the watches' events folded ([`ScaleFold`]) into the observations, the
/// milestones, the taint reaction, the verdict of the expectations
/// ([`crate::verdict::simulated`]) and the outcome; the simulated cluster and the cost as the
/// run recorded them.
pub fn run_result(run: &PlannedRun, events: &[Event]) -> RunResult {
    let fold = ScaleFold::of(events);
    let mut cluster = None;
    let mut cost = Vec::new();
    for e in events {
        match &e.what {
            EventKind::SimulatedCluster(c) => cluster = Some(c.clone()),
            EventKind::ProcessCost { usage } => cost = usage.clone(),
            _ => {}
        }
    }
    let lost: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.what {
            EventKind::FaultInjected { node, .. } => Some(node.as_str()),
            _ => None,
        })
        .collect();
    let scale = ScaleResult {
        cluster,
        lost_nodes: if lost.is_empty() {
            run.fault.target.node_count()
        } else {
            lost.len()
        },
        instances: run.workload.instances as usize,
        time_zero: fold.time_zero().map(String::from),
        milestones: vec![],
        taint_reaction: None,
        cost,
        events_seen: fold.watched_events(),
        observations: fold.observations(),
    };
    let result = RunResult {
        fault: run.fault.kind,
        started: events.first().map(|e| e.wall.clone()),
        duration_ms: match (events.first(), events.last()) {
            (Some(first), Some(last)) => last.at_ms.saturating_sub(first.at_ms),
            _ => 0,
        },
        stages_ms: crate::timeline::stages(events)
            .into_iter()
            .map(|(stage, ms)| super::StageTime { stage, ms })
            .collect(),
        fault_nodes: if lost.len() > 1 {
            lost.iter().map(|n| n.to_string()).collect()
        } else {
            vec![]
        },
        error: super::assemble::run_error(events),
        spec_hash: super::assemble::spec_hash(run),
        ..bare(
            run.id.clone(),
            run.variant.clone(),
            run.repetition,
            run.remediation.kind(),
        )
    };
    // The failover window as observed: time zero (the earliest fault) to the recovery timeout.
    let fault_at = events
        .iter()
        .filter_map(|e| match e.what {
            EventKind::FaultInjected { .. } => Some(e.at_ms),
            _ => None,
        })
        .min();
    let timeout_at = events.iter().find_map(|e| match e.what {
        EventKind::RecoveryTimeout { .. } => Some(e.at_ms),
        _ => None,
    });
    let watched_ms = timeout_at
        .zip(fault_at)
        .map(|(end, t0)| end.saturating_sub(t0));
    judged(run, result, scale, watched_ms)
}

/// A simulated run's result before its figures: nothing observed, verdict unknown.
fn bare(
    id: String,
    variant: String,
    repetition: u32,
    remediation: crate::vocab::RemediationKind,
) -> RunResult {
    RunResult {
        id,
        variant,
        variant_description: None,
        repetition,
        fault: crate::vocab::FaultKind::NodeShutdown,
        remediation,
        remediation_detail: None,
        provider: Some(crate::spec::Provider::Kwok),
        profile: None,
        started: None,
        duration_ms: 0,
        stages_ms: vec![],
        lane: None,
        lane_nodes: vec![],
        target_node: None,
        fault_nodes: vec![],
        replacement_node: None,
        time_zero: None,
        phases: vec![],
        metrics: Default::default(),
        write_outage: None,
        expectations: vec![],
        verdict: Verdict::Unknown,
        outcome: None,
        error: None,
        environment: None,
        spec_hash: String::new(),
        integrity: None,
        controller_counters: None,
        instances: vec![],
        fleet: None,
        scale: None,
    }
}

/// `r` with `scale`'s figures, verdict and outcome computed from its observations and `run`'s
/// expectations; `watched_ms`: from time zero to the end of the failover window (its recovery
/// timeout), when the run reached it.
fn judged(
    run: &PlannedRun,
    mut r: RunResult,
    mut scale: ScaleResult,
    watched_ms: Option<u64>,
) -> RunResult {
    let tainted = matches!(
        run.remediation,
        crate::spec::RemediationSpec::OutOfServiceTaint { .. }
    );
    scale.milestones = scale.observations.figures(tainted);
    scale.taint_reaction = scale.observations.taint_reaction();
    let (expectations, verdict) =
        crate::verdict::simulated::evaluate(run, &scale.observations, r.error.as_deref());
    r.expectations = expectations;
    r.verdict = verdict;
    r.outcome = Some(outcome(&r, &scale, watched_ms));
    r.scale = Some(scale);
    r
}

/// What a simulated run did: how many of its instances had a replacement Running with its
/// volume, and when the last did (or how long it was watched without).
fn outcome(r: &RunResult, scale: &ScaleResult, watched_ms: Option<u64>) -> Outcome {
    let of = scale.observations.instances.len();
    let running = scale
        .observations
        .instances
        .iter()
        .filter(|i| i.replacement_running_ms().is_some())
        .count();
    let all = scale
        .milestones
        .iter()
        .find(|f| f.milestone == Milestone::ReplacementRunning)
        .and_then(|f| f.all_ms());
    let recovery = if scale.time_zero.is_none() {
        Recovery::NotFaulted
    } else if of > 0 && running == of {
        Recovery::Recovered
    } else if running > 0 {
        Recovery::PartlyRecovered
    } else {
        Recovery::NotRecovered
    };
    let after_ms = match recovery {
        Recovery::Recovered => all,
        Recovery::PartlyRecovered | Recovery::NotRecovered => watched_ms,
        Recovery::NotFaulted => None,
    };
    let text = match recovery {
        Recovery::NotFaulted => "fault not applied".to_string(),
        Recovery::Recovered => format!(
            "{of} of {of} replacements Running with their volume in {}",
            fmt_opt_ms(after_ms)
        ),
        _ => match after_ms {
            Some(ms) => format!(
                "{running} of {of} replacements Running with their volume within {}",
                fmt_opt_ms(Some(ms))
            ),
            None => format!(
                "{running} of {of} replacements Running with their volume while watched (the watch was cut short)"
            ),
        },
    };
    let mut parts = super::outcome::Parts::new(r);
    parts.add(text, &["recovered"]);
    let summary = parts.line();
    Outcome {
        recovery,
        after_ms,
        members_affected: (recovery != Recovery::NotFaulted).then_some(of),
        members_recovered: (recovery != Recovery::NotFaulted).then_some(running),
        data: Vec::new(),
        summary,
    }
}

/// A simulated run's result as nodedown wrote it before simulated runs were [`RunResult`]s
/// (their own `results.json`, and an invocation's `curve.json` an array of them): read to
/// show and compare old invocations, never written. Its figures are recomputed from its
/// recorded observations and spec by today's rule.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyResult {
    pub run: String,
    pub variant: String,
    pub repetition: u32,
    pub environment: LegacyEnvironment,
    pub lost_nodes: usize,
    pub instances: usize,
    pub remediation: crate::vocab::RemediationKind,
    pub verdict: Verdict,
    #[serde(default)]
    pub expectations: Vec<ExpectationResult>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub time_zero: Option<String>,
    #[serde(deserialize_with = "crate::timeline::scale::milestones_compat")]
    pub milestones: Vec<MilestoneFigure>,
    #[serde(default)]
    pub taint_reaction: Option<crate::units::Spread>,
    pub cost: Vec<Usage>,
    pub events_seen: u64,
    pub observations: ScaleObservations,
    #[serde(default)]
    pub spec: Option<PlannedRun>,
}

/// [`LegacyResult`]'s environment.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyEnvironment {
    pub kubernetes: String,
    pub nodes: usize,
    pub kwok: String,
    pub kwok_lease_seconds: u32,
    pub cluster: String,
}

impl LegacyResult {
    /// The experiment's name (the first part of the run id).
    pub fn experiment(&self) -> &str {
        self.run.split('/').next().unwrap_or(&self.run)
    }

    /// The run as a [`RunResult`]: with its spec, its figures and verdict recomputed from its
    /// observations; without (written before nodedown recorded it), as it was written.
    pub fn into_run_result(self) -> RunResult {
        let scale = ScaleResult {
            cluster: Some(SimulatedCluster {
                kubernetes: self.environment.kubernetes,
                nodes: self.environment.nodes,
                kwok: self.environment.kwok,
                kwok_lease_seconds: self.environment.kwok_lease_seconds,
                cluster: self.environment.cluster,
            }),
            lost_nodes: self.lost_nodes,
            instances: self.instances,
            time_zero: self.time_zero,
            milestones: self.milestones,
            taint_reaction: self.taint_reaction,
            cost: self.cost,
            events_seen: self.events_seen,
            observations: self.observations,
        };
        let r = RunResult {
            expectations: self.expectations,
            verdict: self.verdict,
            error: self.error,
            spec_hash: self
                .spec
                .as_ref()
                .map(super::assemble::spec_hash)
                .unwrap_or_default(),
            ..bare(self.run, self.variant, self.repetition, self.remediation)
        };
        match &self.spec {
            // Its events were not kept: the window is its spec's recovery timeout.
            Some(run) => {
                let window = run.timeouts.recovery.as_millis() as u64;
                judged(run, r, scale, Some(window))
            }
            None => RunResult {
                scale: Some(scale),
                ..r
            },
        }
    }
}

/// The simulated runs of `report`, in order; empty when it holds none.
pub fn runs(report: &Report) -> Vec<&RunResult> {
    report
        .experiments
        .iter()
        .flat_map(|e| &e.runs)
        .filter(|r| r.scale.is_some())
        .collect()
}

/// A report of `runs` (simulated runs read from an old invocation's curve), grouped by
/// experiment as `nodedown report` groups them.
pub fn report_of(runs: Vec<RunResult>, tool_version: &str) -> Report {
    let mut experiments: Vec<super::ExperimentResult> = Vec::new();
    for r in runs {
        let name = r.id.split('/').next().unwrap_or(&r.id).to_string();
        match experiments.iter_mut().find(|e| e.name == name) {
            Some(e) => e.runs.push(r),
            None => experiments.push(super::ExperimentResult {
                name,
                file: String::new(),
                runs: vec![r],
                variants: vec![],
                description: None,
            }),
        }
    }
    for e in &mut experiments {
        e.variants = super::assemble::summarize(&e.runs);
    }
    Report {
        schema_version: super::SCHEMA_VERSION,
        tool: format!("nodedown {tool_version}"),
        invocation: None,
        origin: None,
        experiments,
        not_run: vec![],
        dir: None,
    }
}

/// One run's summary page.
pub fn run_markdown(r: &RunResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let Some(s) = &r.scale else {
        return out;
    };
    let _ = writeln!(out, "> **{BANNER}**\n");
    let _ = writeln!(
        out,
        "## {}: {} node(s) lost at once under {} instance(s), remediation {} — {}\n",
        r.id,
        s.lost_nodes,
        s.instances,
        r.remediation,
        r.verdict.as_str()
    );
    if let Some(c) = &s.cluster {
        let _ = write!(
            out,
            "{} simulated nodes (kwok {}, Lease {} s) · Kubernetes {} · ",
            c.nodes, c.kwok, c.kwok_lease_seconds, c.kubernetes,
        );
    }
    let _ = writeln!(
        out,
        "time zero {}\n",
        s.time_zero.as_deref().unwrap_or("— (no fault applied)")
    );
    if let Some(o) = &r.outcome {
        let _ = writeln!(out, "**what happened:** {}\n", o.summary);
    }
    if let Some(e) = &r.error {
        let _ = writeln!(out, "**error:** {e}\n");
    }
    if r.expectations.is_empty() {
        let _ = writeln!(
            out,
            "no expectations: nothing was checked (verdict unknown)\n"
        );
    } else {
        let _ = writeln!(
            out,
            "| expectation | expected | actual | verdict |\n|---|---|---|---|"
        );
        for x in &r.expectations {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                x.name,
                x.expected,
                x.actual,
                x.verdict.as_str()
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "| milestone | reached | p50 | all (max) |\n|---|--:|--:|--:|"
    );
    for m in &s.milestones {
        let _ = writeln!(
            out,
            "| {} | {}/{} | {} | {} |",
            m.milestone.as_str(),
            m.reached,
            m.of,
            fmt_opt_ms(m.p50_ms()),
            fmt_opt_ms(m.max_ms())
        );
    }
    if let Some(t) = &s.taint_reaction {
        let _ = writeln!(
            out,
            "\nnodedown's taint reaction (NotReady seen → taint applied), {} node(s): p50 {} · p99 {} · max {}",
            t.count,
            fmt_opt_ms(Some(t.p50_ms)),
            fmt_opt_ms(t.p99_ms),
            fmt_opt_ms(Some(t.max_ms))
        );
    }
    let _ = writeln!(
        out,
        "\n| process | cores (avg) | CPU s | peak RSS MiB |\n|---|--:|--:|--:|"
    );
    for c in &s.cost {
        let _ = writeln!(
            out,
            "| {} | {:.2} | {:.1} | {:.0} |",
            c.name, c.cores, c.cpu_seconds, c.max_rss_mib
        );
    }
    let _ = writeln!(
        out,
        "\nwatch events processed by nodedown: {}",
        s.events_seen
    );
    out
}

/// The curve over an invocation's runs: one row per run.
pub fn curve_markdown(results: &[&RunResult]) -> String {
    use crate::timeline::scale::Milestone as M;
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "> **{BANNER}**\n");
    let _ = writeln!(
        out,
        "| run | nodes lost | pods | remediation | all NotReady | all unreachable-tainted | all out-of-service-tainted | all pods deleted (p50 / all) | all volumes detached (p50 / all) | all replacements running with their volume (p50 / all) | taint reaction p50 / p99 | API server cores / peak MiB | etcd cores / peak MiB | nodedown CPU s / peak MiB | events | verdict |"
    );
    let _ = writeln!(
        out,
        "|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"
    );
    for (r, s) in scaled(results) {
        let fig = |m: M| s.milestones.iter().find(|f| f.milestone == m);
        let all = |m: M| match fig(m) {
            Some(f) if f.all_ms().is_some() => fmt_opt_ms(f.all_ms()),
            // Nothing to reach it (a run that ended before its fault): not observed.
            Some(f) if f.of == 0 => "—".into(),
            Some(f) => format!("{}/{} only", f.reached, f.of),
            None => "—".into(),
        };
        let both = |m: M| match fig(m) {
            Some(f) => format!("{} / {}", fmt_opt_ms(f.p50_ms()), all(m)),
            None => "—".into(),
        };
        let cores = |name: &str| {
            s.cost
                .iter()
                .find(|c| c.name == name)
                .map(|c| format!("{:.2} / {:.0}", c.cores, c.max_rss_mib))
                .unwrap_or_else(|| "—".into())
        };
        let me = s
            .cost
            .iter()
            .find(|c| c.name == "nodedown")
            .map(|c| format!("{:.1} / {:.0}", c.cpu_seconds, c.max_rss_mib))
            .unwrap_or_else(|| "—".into());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.id,
            s.lost_nodes,
            s.instances,
            r.remediation,
            all(M::NodeNotReady),
            all(M::UnreachableTaint),
            all(M::OutOfServiceTaint),
            both(M::OldPodDeleted),
            both(M::VolumeDetached),
            both(M::ReplacementRunning),
            s.taint_reaction
                .as_ref()
                .map(|t| format!("{} / {}", fmt_opt_ms(Some(t.p50_ms)), fmt_opt_ms(t.p99_ms)))
                .unwrap_or_else(|| "—".into()),
            cores("kube-apiserver"),
            cores("etcd"),
            me,
            s.events_seen,
            match &r.error {
                Some(_) => "error",
                None => r.verdict.as_str(),
            }
        );
    }
    out
}

/// The curve for a terminal: a row per run with the milestones a reader compares (every node
/// NotReady, old pods deleted, volumes detached, replacements Running with their volume: p50
/// and all), cut to `width`; the full table with costs is `--format markdown`.
pub fn curve_table(results: &[&RunResult], width: Option<usize>) -> String {
    use crate::timeline::scale::Milestone as M;
    let mut out = super::table::wrap(BANNER, width, "  ");
    out.push_str("\n\n");
    let rows: Vec<Vec<String>> = scaled(results)
        .map(|(r, s)| {
            let fig = |m: M| s.milestones.iter().find(|f| f.milestone == m);
            let all = |m: M| match fig(m) {
                Some(f) if f.all_ms().is_some() => fmt_opt_ms(f.all_ms()),
                Some(f) if f.of == 0 => "—".into(),
                Some(f) => format!("{}/{}", f.reached, f.of),
                None => "—".into(),
            };
            let both = |m: M| match fig(m) {
                Some(f) if f.all_ms().is_some() => {
                    format!("{} / {}", fmt_opt_ms(f.p50_ms()), all(m))
                }
                Some(_) => all(m),
                None => "—".into(),
            };
            vec![
                r.id.clone(),
                match &r.error {
                    Some(_) => "error".to_string(),
                    None => r.verdict.as_str().to_string(),
                },
                s.lost_nodes.to_string(),
                s.instances.to_string(),
                all(M::NodeNotReady),
                both(M::OldPodDeleted),
                both(M::VolumeDetached),
                both(M::ReplacementRunning),
            ]
        })
        .collect();
    out.push_str(&super::table::grid(
        &[
            "RUN",
            "VERDICT",
            "LOST",
            "PODS",
            "NOT-READY",
            "DELETED",
            "DETACHED",
            "RUNNING",
        ],
        &rows,
        width,
    ));
    out.push_str(
        "\nall NotReady; pods deleted, volumes detached, replacements Running with their volume: \
         p50 / all (k/n: only k of n got there); costs and taints: --format markdown\n",
    );
    out
}

/// The runs as JUnit XML: a test suite per experiment, a test case per run (a failure when its
/// expectation failed, an error when unknown), its milestones, taint reaction and costs as
/// properties; the banner is the suite's first property, so a CI page says it was simulated.
pub fn curve_junit(results: &[&RunResult]) -> String {
    use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};
    let mut report = quick_junit::Report::new("nodedown simulated");
    let mut suites: Vec<TestSuite> = Vec::new();
    for (r, sc) in scaled(results) {
        let experiment = r.id.split('/').next().unwrap_or(&r.id);
        let i = match suites.iter().position(|s| s.name.as_str() == experiment) {
            Some(i) => i,
            None => {
                let mut s = TestSuite::new(experiment);
                s.add_property(Property::new("simulated", BANNER));
                suites.push(s);
                suites.len() - 1
            }
        };
        let status = match (r.verdict, &r.error) {
            (Verdict::Pass, None) => TestCaseStatus::success(),
            (v, error) => {
                let mut s = TestCaseStatus::non_success(if v == Verdict::Fail {
                    NonSuccessKind::Failure
                } else {
                    NonSuccessKind::Error
                });
                s.set_message(message(r, error.as_deref()));
                s
            }
        };
        let mut case = TestCase::new(r.id.as_str(), status);
        case.set_classname(format!("simulated.{experiment}"));
        // The run's wall time, as real runs' cases have it (absent in curves of old).
        if r.duration_ms > 0 {
            case.set_time(std::time::Duration::from_millis(r.duration_ms));
        }
        let mut props = vec![
            ("lost-nodes".to_string(), sc.lost_nodes.to_string()),
            ("instances".to_string(), sc.instances.to_string()),
            ("remediation".to_string(), r.remediation.to_string()),
            ("events".to_string(), sc.events_seen.to_string()),
        ];
        if let Some(o) = &r.outcome {
            props.push(("outcome".to_string(), o.summary.clone()));
        }
        for f in &sc.milestones {
            let m = f.milestone.as_str();
            props.push((format!("{m}.reached"), format!("{}/{}", f.reached, f.of)));
            if let Some(v) = f.p50_ms() {
                props.push((format!("{m}.p50"), v.to_string()));
            }
            if let Some(v) = f.all_ms() {
                props.push((format!("{m}.all"), v.to_string()));
            }
        }
        if let Some(t) = &sc.taint_reaction {
            props.push(("taint-reaction.p50".into(), t.p50_ms.to_string()));
            if let Some(p99) = t.p99_ms {
                props.push(("taint-reaction.p99".into(), p99.to_string()));
            }
        }
        for c in &sc.cost {
            props.push((format!("cost.{}.cores", c.name), format!("{:.3}", c.cores)));
            props.push((
                format!("cost.{}.peak-mib", c.name),
                format!("{:.0}", c.max_rss_mib),
            ));
        }
        case.add_properties(props.into_iter().map(|(n, v)| Property::new(n, v)));
        suites[i].add_test_case(case);
    }
    report.add_test_suites(suites);
    let mut xml = report.to_string().expect("JUnit XML serializes");
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    xml
}

/// Why a run did not pass, for JUnit: the harness error, and each expectation that failed or
/// could not be decided, named with what was expected and what happened.
fn message(r: &RunResult, error: Option<&str>) -> String {
    let mut parts: Vec<String> = error.map(|e| format!("error: {e}")).into_iter().collect();
    for x in r.expectations.iter().filter(|x| x.verdict != Verdict::Pass) {
        parts.push(format!(
            "{} {}: expected {}, actual {} ({})",
            x.name,
            x.verdict.as_str(),
            x.expected,
            x.actual,
            x.evidence
        ));
    }
    if r.expectations.is_empty() {
        parts.push("no expectations: nothing was checked".into());
    }
    parts.join("; ")
}

/// One difference between two simulated invocations' runs (`nodedown compare` of two curves).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CurveChange {
    /// The run (`experiment/variant/repetition`).
    pub run: String,
    /// Whether it counts against the candidate (exit 1).
    pub worse: bool,
    pub what: String,
}

/// Each simulated run of `results` with its figures.
fn scaled<'a, 'b>(
    results: &'b [&'a RunResult],
) -> impl Iterator<Item = (&'a RunResult, &'a ScaleResult)> + 'b {
    results
        .iter()
        .copied()
        .filter_map(|r| Some((r, r.scale.as_ref()?)))
}

/// A run's milestone figures (none: not a simulated run).
fn milestones(r: &RunResult) -> &[MilestoneFigure] {
    r.scale.as_ref().map_or(&[], |s| &s.milestones)
}

fn verdict_rank(v: Verdict) -> u8 {
    match v {
        Verdict::Pass => 2,
        Verdict::Unknown => 1,
        Verdict::Fail => 0,
    }
}

/// A candidate curve against a baseline, run by run (matched by run id): a verdict that got
/// worse; a milestone fewer objects reached; the time until every replacement was running (or its
/// p50) beyond `tolerance` of the baseline's. A run in only one of them is named, not counted
/// against the candidate (a different plan is not a regression). Each run is one sample: the
/// caller says so.
pub fn compare(
    baseline: &[&RunResult],
    candidate: &[&RunResult],
    tolerance: crate::report::compare::Tolerance,
) -> Vec<CurveChange> {
    use crate::timeline::scale::Milestone;
    let mut out = Vec::new();
    for b in baseline {
        let Some(c) = candidate.iter().find(|c| c.id == b.id) else {
            out.push(CurveChange {
                run: b.id.clone(),
                worse: false,
                what: "not in the candidate".into(),
            });
            continue;
        };
        let (bv, cv) = (
            if b.error.is_some() {
                Verdict::Unknown
            } else {
                b.verdict
            },
            if c.error.is_some() {
                Verdict::Unknown
            } else {
                c.verdict
            },
        );
        if bv != cv {
            out.push(CurveChange {
                run: b.id.clone(),
                worse: verdict_rank(cv) < verdict_rank(bv),
                what: format!(
                    "verdict {} → {}{}",
                    bv.as_str(),
                    cv.as_str(),
                    c.error
                        .as_ref()
                        .map(|e| format!(" (error: {e})"))
                        .unwrap_or_default()
                ),
            });
        }
        for bf in milestones(b) {
            let Some(cf) = milestones(c).iter().find(|f| f.milestone == bf.milestone) else {
                continue;
            };
            if cf.reached < bf.reached {
                out.push(CurveChange {
                    run: b.id.clone(),
                    worse: true,
                    what: format!(
                        "{}: {}/{} reached (baseline {}/{})",
                        bf.milestone.as_str(),
                        cf.reached,
                        cf.of,
                        bf.reached,
                        bf.of
                    ),
                });
            }
        }
        let running = |r: &RunResult| {
            milestones(r)
                .iter()
                .find(|f| f.milestone == Milestone::ReplacementRunning)
                .cloned()
        };
        if let (Some(bf), Some(cf)) = (running(b), running(c)) {
            for (what, x, y) in [
                ("every replacement running", bf.all_ms(), cf.all_ms()),
                ("replacement running p50", bf.p50_ms(), cf.p50_ms()),
            ] {
                if let (Some(x), Some(y)) = (x, y) {
                    if x != y {
                        let limit = tolerance.limit(x);
                        out.push(CurveChange {
                            run: b.id.clone(),
                            worse: y > limit,
                            what: format!(
                                "{what}: {} → {} ({}{:.0}%; tolerance {})",
                                crate::units::fmt_ms(x),
                                crate::units::fmt_ms(y),
                                if y >= x { "+" } else { "" },
                                (y as f64 - x as f64) * 100.0 / (x.max(1) as f64),
                                tolerance.describe()
                            ),
                        });
                    }
                }
            }
        }
    }
    for c in candidate {
        if !baseline.iter().any(|b| b.id == c.id) {
            out.push(CurveChange {
                run: c.id.clone(),
                worse: false,
                what: "not in the baseline".into(),
            });
        }
    }
    out
}

/// One line of a curve chart: its name, colour, and per point the pods lost and the time
/// (`None`: never, within the window).
struct Series {
    name: String,
    color: &'static str,
    points: Vec<(usize, Option<u64>)>,
}

/// A line chart of times against pods lost (log axis across, seconds up), a line per series,
/// each point's time written beside it; a point that never got there is an ✕ in the `never`
/// band at the top, so it cannot be read as fast.
fn curve_chart(title: &str, series: &[Series]) -> String {
    use super::text::xml_escape;
    use std::fmt::Write;
    let (left, plot_w, plot_h, top) = (70.0, 620.0, 260.0, 60.0);
    let never_band = 24.0;
    let xs: Vec<usize> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let (min_x, max_x) = (
        *xs.iter().min().unwrap_or(&1) as f64,
        *xs.iter().max().unwrap_or(&1) as f64,
    );
    let max_y = series
        .iter()
        .flat_map(|s| s.points.iter().filter_map(|p| p.1))
        .max()
        .unwrap_or(10_000)
        .max(10_000)
        .div_ceil(10_000)
        * 10_000;
    let x = |pods: usize| {
        if max_x <= min_x {
            left + plot_w / 2.0
        } else {
            left + ((pods as f64).ln() - min_x.ln()) / (max_x.ln() - min_x.ln()) * plot_w
        }
    };
    let y = |ms: Option<u64>| match ms {
        Some(ms) => top + never_band + plot_h - ms as f64 / max_y as f64 * plot_h,
        None => top + never_band / 2.0,
    };
    let legend_h = 16.0 * series.len() as f64;
    let (width, height) = (
        left + plot_w + 200.0,
        top + never_band + plot_h + 50.0 + legend_h,
    );
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" style="max-width:100%;height:auto" font-family="sans-serif" role="img" aria-label="{t}"><text x="8" y="22" font-size="15" font-weight="bold">{t}</text>"#,
        t = xml_escape(title)
    );
    let base = top + never_band + plot_h;
    // The never band, the y grid every 10 s (or 30 s / 60 s), the x ticks at each pod count.
    let _ = write!(
        out,
        r##"<rect x="{left}" y="{top}" width="{plot_w}" height="{never_band}" fill="#f9e0e0"/><text x="{}" y="{}" font-size="11" text-anchor="end" fill="#c0392b">never</text>"##,
        left - 6.0,
        top + never_band / 2.0 + 4.0
    );
    let step = match max_y {
        m if m <= 120_000 => 10_000,
        m if m <= 600_000 => 60_000,
        _ => 300_000,
    };
    let mut t = 0;
    while t <= max_y {
        let ty = y(Some(t));
        let _ = write!(
            out,
            r##"<line x1="{left}" x2="{}" y1="{ty:.1}" y2="{ty:.1}" stroke="#e5e5e5"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            left + plot_w,
            left - 6.0,
            ty + 4.0,
            crate::units::fmt_ms(t)
        );
        t += step;
    }
    let mut ticks: Vec<usize> = xs.clone();
    ticks.sort_unstable();
    ticks.dedup();
    for p in &ticks {
        let tx = x(*p);
        let _ = write!(
            out,
            r##"<line x1="{tx:.1}" x2="{tx:.1}" y1="{top}" y2="{base}" stroke="#eeeeee"/><text x="{tx:.1}" y="{}" font-size="11" text-anchor="middle">{p}</text>"##,
            base + 16.0
        );
    }
    let _ = write!(
        out,
        r##"<text x="{}" y="{}" font-size="11" text-anchor="middle" fill="#666">pods lost (log scale)</text>"##,
        left + plot_w / 2.0,
        base + 34.0
    );
    for s in series {
        let mut pts = s.points.clone();
        pts.sort_by_key(|p| p.0);
        // The line joins the points that got there; a never breaks it.
        let mut path = String::new();
        let mut pen_down = false;
        for (pods, ms) in &pts {
            match ms {
                Some(_) => {
                    let _ = write!(
                        path,
                        "{}{:.1},{:.1} ",
                        if pen_down { "L" } else { "M" },
                        x(*pods),
                        y(*ms)
                    );
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        if !path.is_empty() {
            let _ = write!(
                out,
                r#"<path class="curve" data-series="{}" d="{}" fill="none" stroke="{}" stroke-width="2"/>"#,
                xml_escape(&s.name),
                path.trim_end(),
                s.color
            );
        }
        for (pods, ms) in &pts {
            let (px, py) = (x(*pods), y(*ms));
            match ms {
                Some(v) => {
                    let _ = write!(
                        out,
                        r##"<circle class="point" cx="{px:.1}" cy="{py:.1}" r="4" fill="{c}"><title>{n}: {pods} pods, {t}</title></circle><text x="{:.1}" y="{:.1}" font-size="10" fill="{c}">{t}</text>"##,
                        px + 6.0,
                        py - 6.0,
                        c = s.color,
                        n = xml_escape(&s.name),
                        t = crate::units::fmt_ms(*v)
                    );
                }
                None => {
                    let _ = write!(
                        out,
                        r##"<path class="never" data-series="{n}" d="M{a:.1},{b:.1} l8,8 m0,-8 l-8,8" stroke="{c}" stroke-width="2"><title>{n}: {pods} pods, never</title></path>"##,
                        a = px - 4.0,
                        b = py - 4.0,
                        c = s.color,
                        n = xml_escape(&s.name)
                    );
                }
            }
        }
    }
    for (i, s) in series.iter().enumerate() {
        let ly = base + 50.0 + 16.0 * i as f64;
        let _ = write!(
            out,
            r##"<g class="legend"><rect x="{left}" y="{:.1}" width="14" height="4" fill="{}"/><text x="{}" y="{ly:.1}" font-size="11" fill="#333">{}</text></g>"##,
            ly - 5.0,
            s.color,
            left + 20.0,
            xml_escape(&s.name)
        );
    }
    out.push_str("</svg>\n");
    out
}

const CURVE_COLORS: [&str; 8] = [
    "#1e8449", "#c0392b", "#2980b9", "#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#b7950b",
];

/// The curve as one self-contained HTML page: the banner, time to every replacement Running with its volume
/// against pods lost (a line per remediation, never marked), each milestone against pods lost
/// per remediation, and the table of `curve_markdown`.
pub fn curve_html(results: &[&RunResult]) -> String {
    use super::text::xml_escape;
    use crate::timeline::scale::Milestone as M;
    use std::fmt::Write;
    let mut remediations: Vec<crate::vocab::RemediationKind> = Vec::new();
    for r in results {
        if !remediations.contains(&r.remediation) {
            remediations.push(r.remediation);
        }
    }
    // A run's time for a milestone: every instance there (None: not all got there).
    let all = |r: &RunResult, m: M| {
        milestones(r)
            .iter()
            .find(|f| f.milestone == m)
            .and_then(|f| f.all_ms())
    };
    let faulted = |r: &RunResult| milestones(r).iter().any(|f| f.of > 0);
    let instances = |r: &RunResult| r.scale.as_ref().map_or(0, |s| s.instances);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>nodedown simulated curve</title><style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 6px}}th{{background:#f4f4f4}}.banner{{background:#fff3cd;padding:8px;border:1px solid #e0c96a}}div.scroll{{overflow-x:auto}}</style></head><body>"
    );
    let _ = writeln!(
        out,
        "<h1>nodedown simulated curve</h1><p class=\"banner\"><b>{}</b></p>",
        xml_escape(BANNER)
    );
    // A line joins only runs alike but for their pods: the same remediation and the same
    // number of nodes lost (runs that differ in both are two lines, never one).
    let lost = |r: &RunResult| r.scale.as_ref().map_or(0, |s| s.lost_nodes);
    let mut groups: Vec<(crate::vocab::RemediationKind, usize)> = Vec::new();
    for rem in &remediations {
        let mut counts: Vec<usize> = results
            .iter()
            .filter(|r| r.remediation == *rem && faulted(r))
            .map(|r| lost(r))
            .collect();
        counts.sort_unstable();
        counts.dedup();
        groups.extend(counts.into_iter().map(|n| (*rem, n)));
    }
    let group_name = |(rem, n): (crate::vocab::RemediationKind, usize)| {
        format!("{rem}, {n} node{} lost", if n == 1 { "" } else { "s" })
    };
    let series: Vec<Series> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| Series {
            name: group_name(*g),
            color: CURVE_COLORS[i % CURVE_COLORS.len()],
            points: results
                .iter()
                .filter(|r| r.remediation == g.0 && lost(r) == g.1 && faulted(r))
                .map(|r| (instances(r), all(r, M::ReplacementRunning)))
                .collect(),
        })
        .collect();
    out.push_str(&curve_chart(
        "time to every replacement Running with its volume, by pods lost",
        &series,
    ));
    for g in &groups {
        let rem = group_name(*g);
        let runs: Vec<&RunResult> = results
            .iter()
            .copied()
            .filter(|r| r.remediation == g.0 && lost(r) == g.1 && faulted(r))
            .collect();
        // One colour per milestone in every chart.
        let series: Vec<Series> = M::ALL
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                runs.iter()
                    .any(|r| milestones(r).iter().any(|f| f.milestone == **m && f.of > 0))
            })
            .map(|(j, m)| Series {
                name: m.as_str().to_string(),
                color: CURVE_COLORS[j % CURVE_COLORS.len()],
                points: runs.iter().map(|r| (instances(r), all(r, *m))).collect(),
            })
            .collect();
        if !series.is_empty() {
            out.push_str(&curve_chart(
                &format!("{rem}: every milestone (all instances there), by pods lost"),
                &series,
            ));
        }
    }
    // The table, as curve.md has it.
    let md = curve_markdown(results);
    let _ = writeln!(out, "<div class=\"scroll\"><table>");
    for (n, line) in md.lines().filter(|l| l.starts_with('|')).enumerate() {
        if n == 1 {
            continue; // the alignment row
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let tag = if n == 0 { "th" } else { "td" };
        let row: String = cells
            .iter()
            .map(|c| format!("<{tag}>{}</{tag}>", xml_escape(c)))
            .collect();
        let _ = writeln!(out, "<tr>{row}</tr>");
    }
    let _ = writeln!(out, "</table></div></body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded curve (docs/simulated-scale/: a real invocation on 200 simulated nodes,
    /// written before simulated runs were in results.json), as written.
    fn legacy() -> Vec<LegacyResult> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs/simulated-scale/curve.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// Each run of the recorded curve with its spec, as a result.
    fn recorded() -> Vec<(PlannedRun, RunResult)> {
        legacy()
            .into_iter()
            .map(|r| (r.spec.clone().unwrap(), r.into_run_result()))
            .collect()
    }

    /// `r`'s figures, verdict and outcome again from its observations, by `run`.
    fn recompute(run: &PlannedRun, r: &RunResult) -> RunResult {
        let mut r = r.clone();
        let scale = r.scale.take().unwrap();
        let window = run.timeouts.recovery.as_millis() as u64;
        judged(run, r, scale, Some(window))
    }

    fn obs(r: &mut RunResult) -> &mut ScaleObservations {
        &mut r.scale.as_mut().unwrap().observations
    }

    #[test]
    fn a_run_that_ended_before_its_fault_shows_nothing_observed_not_zero_of_zero() {
        let (run, mut r) = recorded().remove(0);
        *obs(&mut r) = ScaleObservations::default();
        r.error = Some("interrupted: SIGINT".into());
        let r = recompute(&run, &r);
        let md = curve_markdown(&[&r]);
        assert!(!md.contains("0/0 only"), "{md}");
        assert!(md.contains("| — | — |"), "{md}");
    }

    #[test]
    fn the_recorded_curve_read_as_results_has_the_figures_and_verdicts_the_run_wrote() {
        for old in legacy() {
            assert!(old.spec.is_some(), "{}: the spec is recorded", old.run);
            let r = old.clone().into_run_result();
            let s = r.scale.as_ref().unwrap();
            assert_eq!(s.milestones, old.milestones, "{}", old.run);
            assert_eq!(s.taint_reaction, old.taint_reaction, "{}", old.run);
            assert_eq!(r.verdict, old.verdict, "{}", old.run);
            assert_eq!(r.expectations, old.expectations, "{}", old.run);
            assert_eq!(r.id, old.run);
            assert_eq!(s.cost, old.cost);
            // What happened, said from the same observations.
            let o = r.outcome.as_ref().unwrap();
            let all = old
                .milestones
                .iter()
                .find(|f| f.milestone == Milestone::ReplacementRunning)
                .unwrap();
            assert_eq!(o.members_affected, Some(all.of), "{}", old.run);
            assert_eq!(o.members_recovered, Some(all.reached), "{}", old.run);
        }
    }

    #[test]
    fn an_expectation_the_run_cannot_meet_fails_its_case_by_name() {
        let (mut run, r) = recorded()
            .into_iter()
            .find(|(_, r)| r.variant == "lost-20-x20-taint")
            .unwrap();
        run.expect.time_to_running = Some(crate::spec::Bound {
            max: std::time::Duration::from_secs(1),
        });
        let r = recompute(&run, &r);
        assert_eq!(r.verdict, Verdict::Fail);
        let xml = curve_junit(&[&r]);
        let case = xml
            .split("<testcase")
            .nth(1)
            .unwrap_or_else(|| panic!("{xml}"));
        assert!(
            case.contains("name=\"scale-simulated/lost-20-x20-taint/1\""),
            "{case}"
        );
        assert!(case.contains("<failure"), "{case}");
        assert!(
            case.contains("timeToRunning fail: expected &lt;= 1s"),
            "{case}"
        );
        let md = run_markdown(&r);
        assert!(md.contains("| timeToRunning | <= 1s |"), "{md}");
    }

    #[test]
    fn comparing_curves_names_what_got_worse_and_only_that() {
        use crate::report::compare::Tolerance;
        let recorded = recorded();
        let base: Vec<&RunResult> = recorded.iter().map(|(_, r)| r).collect();
        assert!(compare(&base, &base, Tolerance::Percent(20.0)).is_empty());
        // The candidate: one run slower by half, one run that lost its replacements, one run
        // left out; the baseline then misses nothing the candidate has.
        let mut changed: Vec<(PlannedRun, RunResult)> = recorded.clone();
        for (run, r) in &mut changed {
            if r.variant == "lost-1-x20-taint" {
                for i in &mut obs(r).instances {
                    i.volume_attached_ms = i.volume_attached_ms.map(|ms| ms * 3 / 2);
                }
                *r = recompute(run, r);
            }
            if r.variant == "lost-5-x20-taint" {
                obs(r).instances[0].volume_attached_ms = None;
                *r = recompute(run, r);
            }
        }
        changed.retain(|(_, r)| r.variant != "lost-20-x20-none");
        let cand: Vec<&RunResult> = changed.iter().map(|(_, r)| r).collect();
        let changes = compare(&base, &cand, Tolerance::Percent(20.0));
        let worse: Vec<&str> = changes
            .iter()
            .filter(|c| c.worse)
            .map(|c| c.run.as_str())
            .collect();
        assert!(
            worse.contains(&"scale-simulated/lost-1-x20-taint/1"),
            "{changes:#?}"
        );
        assert!(
            worse.contains(&"scale-simulated/lost-5-x20-taint/1"),
            "{changes:#?}"
        );
        assert!(
            changes.iter().any(|c| c.run.ends_with("lost-5-x20-taint/1")
                && c.what.starts_with("verdict pass → fail")),
            "{changes:#?}"
        );
        let absent = changes
            .iter()
            .find(|c| c.run.ends_with("lost-20-x20-none/1"))
            .unwrap();
        assert!(!absent.worse && absent.what == "not in the candidate");
        // The other direction: faster is a change, not a regression.
        let back = compare(&cand, &base, Tolerance::Percent(20.0));
        assert!(
            back.iter()
                .filter(|c| c.run.ends_with("lost-1-x20-taint/1"))
                .all(|c| !c.worse),
            "{back:#?}"
        );
    }

    #[test]
    fn an_errored_run_is_an_error_case_and_no_expectation_is_never_a_pass() {
        let mut rs = recorded();
        rs.truncate(2);
        rs[0].1.error = Some("kwok exited".into());
        rs[0].1 = recompute(&rs[0].0, &rs[0].1);
        rs[1].0.expect = Default::default();
        rs[1].1 = recompute(&rs[1].0, &rs[1].1);
        let rs: Vec<&RunResult> = rs.iter().map(|(_, r)| r).collect();
        assert_eq!(rs[0].verdict, Verdict::Unknown);
        assert_eq!(rs[1].verdict, Verdict::Unknown);
        let xml = curve_junit(&rs);
        assert_eq!(xml.matches("<testcase").count(), 2, "{xml}");
        assert_eq!(xml.matches("<error").count(), 2, "{xml}");
        assert!(xml.contains("error: kwok exited"), "{xml}");
        assert!(
            xml.contains("no expectations: nothing was checked"),
            "{xml}"
        );
        let md = curve_markdown(&rs);
        assert!(md.contains("| error |"), "{md}");
    }
}
