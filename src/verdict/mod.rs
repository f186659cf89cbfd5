//! Verdicts (pure): each expectation of a run checked against its timeline, three-valued.
//!
//! An expectation is *decided* when the events prove it either way; otherwise it is
//! `Unknown`. A run whose observation ended with a harness error still decides what the
//! events already prove (a replacement that was Ready is Ready; a bound that was already
//! exceeded is exceeded), and leaves the rest `Unknown`.

use crate::plan::PlannedRun;
use crate::spec::Bound;
use crate::timeline::{Metric, Phase, Timeline};
use crate::units::{fmt_duration, fmt_ms, millis};
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub use crate::outcome::Verdict;

mod integrity;
pub mod simulated;
pub use integrity::{evaluate_integrity, fence_efficacy, integrity_verdict};

/// One expectation of a run, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpectationResult {
    /// e.g. `recovered`, `timeToRunning`.
    pub name: String,
    /// What the experiment asked for, e.g. `true`, `<= 2m`.
    pub expected: String,
    /// What happened, e.g. `false`, `47.2s`, `absent (never Running)`.
    pub actual: String,
    pub verdict: Verdict,
    /// The events or facts the verdict rests on, for humans.
    pub evidence: String,
}

impl ExpectationResult {
    /// An expectation not decided (yet): `actual` unknown, no evidence.
    pub(crate) fn undecided(name: &str, expected: String) -> ExpectationResult {
        ExpectationResult {
            name: name.into(),
            expected,
            actual: "unknown".into(),
            verdict: Verdict::Unknown,
            evidence: String::new(),
        }
    }
}

/// ", 26.2s over the 1s bound": what a time `ms` past the bound adds to the evidence.
pub(crate) fn over_the_bound(ms: u64, bound: &Bound) -> String {
    format!(
        ", {} over the {} bound",
        fmt_ms(ms.saturating_sub(millis(bound.max))),
        fmt_duration(bound.max)
    )
}

/// Checks every expectation of `run` against `timeline`.
///
/// `finished` is the error of the run's `run-finished` event: `Some` when the harness could not
/// complete the run (including a missing `run-finished` event, which the caller reports as an
/// error).
///
/// The overall verdict is `Fail` when any expectation failed; otherwise `Unknown` when any
/// expectation is unknown, when the run ended with an error, or when the run has no
/// expectations at all; otherwise `Pass`.
///
/// **A run without expectations is `Unknown`, never `Pass`.** Nothing was checked, and a CI
/// job must not turn green on an experiment that forgot its `expect:` (nor red: nothing
/// failed). The returned list is then empty — the list holds only what the experiment asked
/// for — and renderers say "no expectations" for such a run.
pub fn evaluate(
    run: &PlannedRun,
    timeline: &Timeline,
    finished: Option<&str>,
) -> (Vec<ExpectationResult>, Verdict) {
    let ctx = Ctx {
        run,
        tl: timeline,
        error: finished,
    };
    let mut results = Vec::new();
    if let Some(expected) = run.expect.recovered {
        results.push(ctx.recovered(expected));
    }
    if let Some(bound) = &run.expect.time_to_running {
        results.push(ctx.bound("timeToRunning", Metric::TimeToRunning, "Running", bound));
    }
    if let Some(bound) = &run.expect.time_to_ready {
        results.push(ctx.bound("timeToReady", Metric::TimeToReady, "Ready", bound));
    }
    if let Some(phases) = &run.expect.phases {
        for phase in &phases.seen {
            results.push(ctx.phase(*phase, true));
        }
        for phase in &phases.not_seen {
            results.push(ctx.phase(*phase, false));
        }
    }
    let verdict = combine(&results, finished.is_some());
    (results, verdict)
}

/// The overall verdict of a run from its expectation results: any `Fail` → `Fail`; else any
/// `Unknown`, a harness error, or no expectations at all → `Unknown`; else `Pass`.
pub fn combine(results: &[ExpectationResult], harness_error: bool) -> Verdict {
    if results.iter().any(|r| r.verdict == Verdict::Fail) {
        Verdict::Fail
    } else if harness_error
        || results.is_empty()
        || results.iter().any(|r| r.verdict == Verdict::Unknown)
    {
        Verdict::Unknown
    } else {
        Verdict::Pass
    }
}

/// A fleet's expectations from its instances' (`per`: each instance's name and results, all
/// evaluated from the same experiment, so the same names in the same order): an expectation is
/// met when every instance meets it — Fail when any instance fails it, else Unknown when any
/// could not decide it, else Pass. `actual` is the first failing (else undecided, else the
/// last) instance's, named; the evidence names every instance that did not pass.
pub fn combine_instances(per: &[(&str, &[ExpectationResult])]) -> Vec<ExpectationResult> {
    // Every expectation any member has, in the order they first appear (the members a fault
    // left alone have `undisturbed` instead of the recovery's).
    let mut wanted: Vec<&ExpectationResult> = Vec::new();
    for (_, rs) in per {
        for r in rs.iter() {
            if !wanted
                .iter()
                .any(|w| w.name == r.name && w.expected == r.expected)
            {
                wanted.push(r);
            }
        }
    }
    wanted
        .into_iter()
        .map(|want| {
            let each: Vec<(&str, &ExpectationResult)> = per
                .iter()
                .filter_map(|(n, rs)| {
                    rs.iter()
                        .find(|r| r.name == want.name && r.expected == want.expected)
                        .map(|r| (*n, r))
                })
                .collect();
            let find = |v: Verdict| each.iter().find(|(_, r)| r.verdict == v);
            let (verdict, (who, shown)) = match (find(Verdict::Fail), find(Verdict::Unknown)) {
                (Some(f), _) => (Verdict::Fail, *f),
                (None, Some(u)) => (Verdict::Unknown, *u),
                (None, None) => (Verdict::Pass, *each.last().expect("the first has it")),
            };
            let not_passed: Vec<String> = each
                .iter()
                .filter(|(_, r)| r.verdict != Verdict::Pass)
                .map(|(n, r)| format!("{n}: {} ({}): {}", r.actual, r.verdict.as_str(), r.evidence))
                .collect();
            let passed = each.len() - not_passed.len();
            let mut evidence = format!("{passed} of {} instances met it", each.len());
            if verdict == Verdict::Pass {
                evidence.push_str(&format!("; the last, {who}: {}", shown.evidence));
            }
            for line in &not_passed {
                evidence.push('\n');
                evidence.push_str(line);
            }
            ExpectationResult {
                name: want.name.clone(),
                expected: want.expected.clone(),
                actual: format!("{} ({who})", shown.actual),
                verdict,
                evidence,
            }
        })
        .collect()
}

/// The phases that show a workload pod was disturbed: ended, restarted or replaced.
const DISTURBED: [Phase; 5] = [
    Phase::PodTerminating,
    Phase::PodShutDownByKubelet,
    Phase::OldPodDeleted,
    Phase::ContainerRestarted,
    Phase::ReplacementCreated,
];

/// The expectation of a member whose node no fault took (another replica of the StatefulSet):
/// `undisturbed` — its pod served on, never terminating, restarted or replaced, from the fault
/// until the harness began its teardown (the `heal` stage deletes the run's namespace).
/// Unknown when its pod or the fault was never seen.
pub fn undisturbed(tl: &Timeline) -> ExpectationResult {
    let pod = tl.target_pod.as_deref().unwrap_or("its pod");
    let node = tl.target_node.as_deref().unwrap_or("its node");
    let before_teardown = |ms: &u64| tl.heal_at_ms.is_none_or(|h| *ms < h);
    let hit: Vec<String> = DISTURBED
        .iter()
        .filter_map(|p| {
            tl.at(*p)
                .filter(before_teardown)
                .map(|ms| format!("{} at {}", p.name(), fmt_ms(ms)))
        })
        .collect();
    let (verdict, actual, evidence) = if tl.target_pod.is_none() || tl.fault_at_ms.is_none() {
        (
            Verdict::Unknown,
            "unknown".to_string(),
            "the pod was never seen serving before a fault".to_string(),
        )
    } else if hit.is_empty() {
        let observed = match (tl.heal_at_ms, tl.observed_ms) {
            (Some(ms), _) => format!(" until the teardown began {} after the fault", fmt_ms(ms)),
            (None, Some(ms)) => format!(" for the {} observed", fmt_ms(ms)),
            (None, None) => String::new(),
        };
        (
            Verdict::Pass,
            "true".to_string(),
            format!(
                "{pod} on {node}, which no fault took ({}), served on{observed}: never terminating, restarted or replaced",
                tl.faulted_nodes.join(", ")
            ),
        )
    } else {
        (
            Verdict::Fail,
            "false".to_string(),
            format!(
                "{pod} on {node}, which no fault took, was disturbed: {}",
                hit.join(", ")
            ),
        )
    };
    ExpectationResult {
        name: "undisturbed".into(),
        expected: "true".into(),
        actual,
        verdict,
        evidence,
    }
}

struct Ctx<'a> {
    run: &'a PlannedRun,
    tl: &'a Timeline,
    error: Option<&'a str>,
}

impl Ctx<'_> {
    fn pod(&self) -> &str {
        self.tl.target_pod.as_deref().unwrap_or("the workload pod")
    }

    fn node(&self) -> &str {
        self.tl.target_node.as_deref().unwrap_or("the target node")
    }

    fn recovery(&self) -> Duration {
        self.run.timeouts.recovery
    }

    /// The evidence when no fault was injected.
    fn no_fault(&self) -> String {
        let mut s = "no fault-injected event: the fault was never applied, so nothing was measured"
            .to_string();
        if let Some(err) = self.error {
            s.push_str(&format!("; run error: {err}"));
        }
        s
    }

    /// "replacement writer-0 (uid …)"
    fn replacement(&self) -> String {
        match &self.tl.replacement_uid {
            Some(uid) => format!("replacement {} (uid {uid})", self.pod()),
            None => format!("replacement {}", self.pod()),
        }
    }

    /// " on kind-worker2", or nothing when the replacement's node is unknown.
    fn on_node(&self) -> String {
        self.tl
            .replacement_node
            .as_ref()
            .map_or_else(String::new, |n| format!(" on {n}"))
    }

    /// "replacement writer-0 (uid …) Ready on kind-worker2 at 41.2s"
    fn replacement_at(&self, state: &str, ms: u64) -> String {
        format!(
            "{} {state}{} at {}",
            self.replacement(),
            self.on_node(),
            fmt_ms(ms)
        )
    }

    /// What happened to the node, the old pod and its replacement, as far as it got.
    fn story(&self) -> String {
        let tl = self.tl;
        let at = |p: Phase| tl.at(p).map(fmt_ms);
        let mut parts = Vec::new();
        parts.push(match at(Phase::NodeNotReady) {
            Some(t) => format!("node {} NotReady at {t}", self.node()),
            None => format!("node {} never NotReady", self.node()),
        });
        if let Some(t) = at(Phase::RemediationApplied) {
            let name = tl.remediation.as_deref().unwrap_or("remediation");
            parts.push(format!("{name} applied at {t}"));
        }
        parts.push(
            match (at(Phase::OldPodDeleted), at(Phase::PodTerminating)) {
                (Some(t), _) => format!("old pod {} deleted at {t}", self.pod()),
                (None, Some(t)) => format!("old pod {} Terminating since {t}", self.pod()),
                (None, None) => format!("old pod {} never Terminating", self.pod()),
            },
        );
        if let Some(t) = at(Phase::ReplacementCreated) {
            let mut s = format!("{} created at {t}", self.replacement());
            match (
                at(Phase::ReplacementScheduled),
                at(Phase::ReplacementRunning),
                at(Phase::ReplacementReady),
            ) {
                (_, _, Some(t)) => s.push_str(&format!(", Ready{} at {t}", self.on_node())),
                (_, Some(t), None) => {
                    s.push_str(&format!(", Running{} at {t}, never Ready", self.on_node()))
                }
                (Some(t), None, None) => s.push_str(&format!(
                    ", scheduled{} at {t}, never Running",
                    self.on_node()
                )),
                (None, None, None) => s.push_str(", never scheduled"),
            }
            if let Some(t) = at(Phase::MultiAttachError) {
                s.push_str(&format!("; Multi-Attach error at {t}"));
            }
            if tl.has(Phase::ReplacementScheduled) && !tl.has(Phase::VolumeAttached) {
                match at(Phase::VolumeDetached) {
                    Some(t) => s.push_str(&format!(
                        " (volume detached from {} at {t}, never attached elsewhere)",
                        self.node()
                    )),
                    None => s.push_str(&format!(" (volume still attached to {})", self.node())),
                }
            }
            parts.push(s);
        } else {
            parts.push("no replacement pod was created".to_string());
        }
        parts.join("; ")
    }

    /// How the observation of the failover ended.
    fn window_end(&self) -> String {
        let tl = self.tl;
        if let Some(t) = tl.at(Phase::RecoveryTimeout) {
            format!(
                "the {} recovery timeout elapsed at {}",
                fmt_duration(self.recovery()),
                fmt_ms(t)
            )
        } else if let Some(t) = tl.at(Phase::FaultHealed) {
            format!("the fault was healed at {}", fmt_ms(t))
        } else {
            format!(
                "observed until {} after the fault",
                fmt_ms(tl.observed_ms.unwrap_or(0))
            )
        }
    }

    /// Evidence for an undecided expectation of a run that ended with an error.
    fn ended_early(&self, what: &str) -> String {
        format!(
            "the run ended {} after the fault, before {what}: {}; so far: {}",
            fmt_ms(self.tl.observed_ms.unwrap_or(0)),
            self.error.unwrap_or("unknown error"),
            self.story()
        )
    }

    fn recovered(&self, expected: bool) -> ExpectationResult {
        let mut r = ExpectationResult {
            name: "recovered".into(),
            expected: expected.to_string(),
            actual: "unknown".into(),
            verdict: Verdict::Unknown,
            evidence: String::new(),
        };
        if self.tl.fault_at_ms.is_none() {
            r.actual = "unknown (no fault)".into();
            r.evidence = self.no_fault();
            return r;
        }
        let limit = millis(self.recovery());
        let recovery = fmt_duration(self.recovery());
        if let Some((lo, hi)) = self.tl.bounds(Metric::TimeToReady) {
            if lo != hi && lo <= limit && hi > limit {
                r.actual = "unknown (seen after a watch gap)".into();
                r.evidence = format!(
                    "{} somewhere between {} and {} (a watch gap hid it), and the recovery timeout is {recovery}",
                    self.replacement_at("Ready", hi),
                    fmt_ms(lo),
                    fmt_ms(hi)
                );
                return r;
            }
        }
        let actual = match self.tl.at(Phase::ReplacementReady) {
            Some(t) if t <= limit => {
                r.evidence = self.replacement_at("Ready", t);
                if let Some(d) = self.tl.at(Phase::OldPodDeleted) {
                    r.evidence.push_str(&format!(
                        " (old pod deleted at {}, node {} NotReady at {})",
                        fmt_ms(d),
                        self.node(),
                        self.tl.at(Phase::NodeNotReady).map_or("—".into(), fmt_ms)
                    ));
                }
                true
            }
            Some(t) => {
                r.evidence = format!(
                    "{}, after the {recovery} recovery timeout",
                    self.replacement_at("Ready", t)
                );
                false
            }
            None => {
                let observed = self.tl.observed_ms.unwrap_or(0);
                if self.error.is_some() && !self.tl.window_closed() && observed < limit {
                    r.actual = "unknown (run ended early)".into();
                    r.evidence = self.ended_early("a replacement was Ready");
                    return r;
                }
                r.evidence = format!(
                    "{}; no replacement Ready within the {recovery} recovery timeout ({})",
                    self.story(),
                    self.window_end()
                );
                false
            }
        };
        r.actual = actual.to_string();
        r.verdict = if actual == expected {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        r
    }

    /// `expect.phases`: `name` seen (or not) in the failover window. A phase not seen while a
    /// watch gap was open, or in a run that ended early, may have been missed: unknown.
    fn phase(&self, phase: Phase, want_seen: bool) -> ExpectationResult {
        let name = phase.name();
        let key = if want_seen { "seen" } else { "notSeen" };
        let mut r = ExpectationResult {
            name: format!("phases.{key}"),
            expected: name.to_string(),
            actual: "unknown".into(),
            verdict: Verdict::Unknown,
            evidence: String::new(),
        };
        if self.tl.fault_at_ms.is_none() {
            r.actual = "unknown (no fault)".into();
            r.evidence = self.no_fault();
            return r;
        }
        match self.tl.phase(phase) {
            Some(p) => {
                r.actual = format!("seen at {}", fmt_ms(p.at_ms));
                r.evidence = format!("{name} at {}; {}", fmt_ms(p.at_ms), self.story());
                r.verdict = if want_seen {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                };
            }
            None => {
                // Only gaps that began inside the observed window could have hidden it.
                let end = self.tl.observed_ms.unwrap_or(u64::MAX);
                let gaps = self
                    .tl
                    .gaps
                    .iter()
                    .filter(|(_, from, _)| *from <= end)
                    .count();
                let early = self.error.is_some() && !self.tl.window_closed();
                if gaps > 0 || early {
                    r.actual = "not seen (unknown: the observation has holes)".into();
                    r.evidence = format!(
                        "{name} not seen, but {}; {}",
                        if early {
                            "the run ended early".to_string()
                        } else {
                            format!("{gaps} watch gap(s) may have hidden it")
                        },
                        self.story()
                    );
                    return r;
                }
                r.actual = "not seen".into();
                r.evidence = format!(
                    "{name} not seen within {} of observation; {}",
                    fmt_ms(self.tl.observed_ms.unwrap_or(0)),
                    self.story()
                );
                r.verdict = if want_seen {
                    Verdict::Fail
                } else {
                    Verdict::Pass
                };
            }
        }
        r
    }

    fn bound(&self, name: &str, metric: Metric, state: &str, bound: &Bound) -> ExpectationResult {
        let max = millis(bound.max);
        let mut r = ExpectationResult::undecided(name, format!("<= {}", fmt_duration(bound.max)));
        if self.tl.fault_at_ms.is_none() {
            r.actual = "unknown (no fault)".into();
            r.evidence = self.no_fault();
            return r;
        }
        if let Some((lo, hi)) = self.tl.bounds(metric).filter(|(lo, hi)| lo != hi) {
            r.actual = format!("{}–{} (seen after a watch gap)", fmt_ms(lo), fmt_ms(hi));
            r.evidence = format!(
                "{}; a watch gap hid the moment, it lies between {} and {}",
                self.replacement_at(state, hi),
                fmt_ms(lo),
                fmt_ms(hi)
            );
            r.verdict = if hi <= max {
                Verdict::Pass
            } else if lo > max {
                Verdict::Fail
            } else {
                Verdict::Unknown
            };
            return r;
        }
        match self.tl.metric(metric) {
            Some(t) => {
                r.actual = fmt_ms(t);
                r.evidence = self.replacement_at(state, t);
                if t <= max {
                    r.verdict = Verdict::Pass;
                } else {
                    r.verdict = Verdict::Fail;
                    r.evidence.push_str(&over_the_bound(t, bound));
                }
            }
            None => {
                let observed = self.tl.observed_ms.unwrap_or(0);
                if self.error.is_some() && !self.tl.window_closed() && observed <= max {
                    r.actual = "unknown (run ended early)".into();
                    r.evidence = self.ended_early(&format!("the replacement was {state}"));
                } else {
                    r.actual = format!("absent (never {state})");
                    r.evidence = format!("{}; {}", self.story(), self.window_end());
                    r.verdict = Verdict::Fail;
                }
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(name: &str, actual: &str, verdict: Verdict) -> ExpectationResult {
        ExpectationResult {
            name: name.into(),
            expected: "want".into(),
            actual: actual.into(),
            verdict,
            evidence: format!("why {actual}"),
        }
    }

    #[test]
    fn a_fleet_meets_an_expectation_only_when_every_instance_does() {
        use Verdict::{Fail as F, Pass as P, Unknown as U};
        let a = [exp("recovered", "true", P), exp("integrity", "pass", P)];
        let b = [
            exp("recovered", "true", P),
            exp("integrity", "lost-writes", F),
        ];
        let c = [exp("recovered", "true", P), exp("integrity", "unknown", U)];
        let all = combine_instances(&[("ledger", &a), ("ledger-i1", &b), ("ledger-i2", &c)]);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].verdict, P);
        assert_eq!(all[0].actual, "true (ledger-i2)");
        assert!(all[0].evidence.starts_with("3 of 3 instances met it"));
        assert_eq!(all[1].verdict, F, "one lost write fails the fleet");
        assert_eq!(
            all[1].actual, "lost-writes (ledger-i1)",
            "the failing one named"
        );
        assert!(all[1].evidence.starts_with("1 of 3 instances met it"));
        assert!(all[1].evidence.contains("ledger-i1: lost-writes (fail)"));
        assert!(all[1].evidence.contains("ledger-i2: unknown (unknown)"));
        let undecided = combine_instances(&[("ledger", &a), ("ledger-i2", &c)]);
        assert_eq!(undecided[1].verdict, U, "no failure, one undecided");
        assert!(combine_instances(&[]).is_empty());
    }
    pub(crate) use crate::plan::fixtures::{
        bound, events, planned, secs, FORCE_DELETE, NONE_TIMEOUT, OOS_TAINT,
    };
    use crate::spec::{Expectations, RemediationSpec};
    use crate::timeline::{analyze, Event, EventKind};

    fn expect(
        recovered: Option<bool>,
        running: Option<Bound>,
        ready: Option<Bound>,
    ) -> Expectations {
        Expectations {
            recovered,
            time_to_running: running,
            time_to_ready: ready,
            ..Default::default()
        }
    }

    fn oos() -> RemediationSpec {
        RemediationSpec::OutOfServiceTaint {
            after: Duration::ZERO,
            fence: crate::spec::Fence::Power,
            lift_after: None,
        }
    }

    fn eval(
        text: &str,
        recovery: u64,
        e: Expectations,
        err: Option<&str>,
    ) -> (Vec<ExpectationResult>, Verdict) {
        let run = planned("node-shutdown", "v", 1, oos(), secs(recovery), e);
        evaluate(&run, &analyze(&events(text)), err)
    }

    #[test]
    fn recovered_run_passes_with_evidence_naming_the_replacement() {
        let (r, v) = eval(
            OOS_TAINT,
            120,
            expect(Some(true), bound(120), bound(60)),
            None,
        );
        assert_eq!(v, Verdict::Pass);
        assert_eq!(r.len(), 3);
        assert!(r.iter().all(|x| x.verdict == Verdict::Pass), "{r:#?}");
        assert_eq!(r[0].name, "recovered");
        assert_eq!(r[0].expected, "true");
        assert_eq!(r[0].actual, "true");
        assert!(
            r[0].evidence.starts_with(
                "replacement writer-0 (uid b7e9a0c1-2d3e-4f50-8a6b-7c8d9e0f1a2b) Ready on \
                 kind-worker2 at 39.7s"
            ),
            "{}",
            r[0].evidence
        );
        assert_eq!(r[1].name, "timeToRunning");
        assert_eq!(r[1].expected, "<= 2m");
        assert_eq!(r[1].actual, "31.8s");
        assert_eq!(r[2].name, "timeToReady");
        assert_eq!(r[2].actual, "39.7s");
    }

    #[test]
    fn phase_expectations_pass_fail_and_name_what_was_seen() {
        let phases = crate::spec::PhaseExpectation {
            seen: vec![
                Phase::from_name("replacement-ready").unwrap(),
                Phase::from_name("multi-attach-error").unwrap(),
            ],
            not_seen: vec![
                Phase::from_name("two-pods-running").unwrap(),
                Phase::from_name("out-of-service-taint").unwrap(),
            ],
        };
        let e = Expectations {
            phases: Some(phases),
            ..Default::default()
        };
        let (r, v) = eval(OOS_TAINT, 120, e, None);
        assert_eq!(v, Verdict::Fail);
        let by = |name: &str, exp: &str| {
            r.iter()
                .find(|x| x.name == name && x.expected == exp)
                .unwrap_or_else(|| panic!("{name} {exp}: {r:#?}"))
        };
        assert_eq!(
            by("phases.seen", "replacement-ready").verdict,
            Verdict::Pass
        );
        assert_eq!(
            by("phases.seen", "replacement-ready").actual,
            "seen at 39.7s"
        );
        let mae = by("phases.seen", "multi-attach-error");
        assert_eq!(
            (mae.verdict, mae.actual.as_str()),
            (Verdict::Fail, "not seen")
        );
        assert!(
            mae.evidence
                .starts_with("multi-attach-error not seen within"),
            "{}",
            mae.evidence
        );
        assert_eq!(
            by("phases.notSeen", "two-pods-running").verdict,
            Verdict::Pass
        );
        assert_eq!(
            by("phases.notSeen", "out-of-service-taint").verdict,
            Verdict::Fail
        );
    }

    #[test]
    fn a_watch_gap_after_the_window_does_not_make_a_phase_unknown() {
        let e = Expectations {
            phases: Some(crate::spec::PhaseExpectation {
                seen: vec![],
                not_seen: vec![Phase::from_name("volume-detached").unwrap()],
            }),
            ..Default::default()
        };
        // The heal's relist after the recovery timeout: a gap long after the window closed.
        let mut text = NONE_TIMEOUT.to_string();
        text.push_str(r#"{"at_ms":999000,"wall":"x","event":"watch-gap","resource":"events","error":"too old"}"#);
        text.push('\n');
        text.push_str(r#"{"at_ms":999500,"wall":"x","event":"watch-resumed","resource":"events","relisted":true}"#);
        text.push('\n');
        let (r, _) = eval(&text, 120, e, None);
        assert_eq!(r[0].verdict, Verdict::Pass, "{r:#?}");
        assert_eq!(r[0].actual, "not seen");
    }

    #[test]
    fn a_phase_not_seen_in_a_run_that_ended_early_is_unknown() {
        let e = Expectations {
            phases: Some(crate::spec::PhaseExpectation {
                seen: vec![Phase::from_name("volume-attached").unwrap()],
                not_seen: vec![],
            }),
            ..Default::default()
        };
        let cut: String = NONE_TIMEOUT
            .lines()
            .filter(|l| {
                !["recovery-timeout", "fault-healed", "run-finished"]
                    .iter()
                    .any(|k| l.contains(k))
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let (r, v) = eval(&cut, 120, e, Some("interrupted"));
        assert_eq!(v, Verdict::Unknown, "{r:#?}");
        assert!(r[0].actual.starts_with("not seen (unknown"), "{r:#?}");
    }

    #[test]
    fn bound_exceeded_fails() {
        let (r, v) = eval(OOS_TAINT, 120, expect(None, None, bound(30)), None);
        assert_eq!(v, Verdict::Fail);
        assert_eq!(r[0].verdict, Verdict::Fail);
        assert_eq!(r[0].actual, "39.7s");
        assert!(
            r[0].evidence.ends_with("9.7s over the 30s bound"),
            "{}",
            r[0].evidence
        );
    }

    #[test]
    fn expected_non_recovery_is_a_pass() {
        let (r, v) = eval(NONE_TIMEOUT, 120, expect(Some(false), None, None), None);
        assert_eq!(v, Verdict::Pass);
        assert_eq!(r[0].actual, "false");
        assert_eq!(
            r[0].evidence,
            "node kind-worker NotReady at 20.6s; old pod writer-0 Terminating since 30.7s; \
             no replacement pod was created; no replacement Ready within the 2m recovery \
             timeout (the 2m recovery timeout elapsed at 2m00s)"
        );
    }

    #[test]
    fn unrecovered_run_fails_recovered_and_bounds_as_absent() {
        let (r, v) = eval(
            NONE_TIMEOUT,
            120,
            expect(Some(true), bound(120), bound(120)),
            None,
        );
        assert_eq!(v, Verdict::Fail);
        assert_eq!(r[0].verdict, Verdict::Fail);
        assert_eq!(r[0].actual, "false");
        assert_eq!(r[1].verdict, Verdict::Fail);
        assert_eq!(r[1].actual, "absent (never Running)");
        assert_eq!(r[2].actual, "absent (never Ready)");
        assert!(r[2].evidence.contains("recovery timeout elapsed at 2m00s"));
    }

    #[test]
    fn ready_after_the_recovery_timeout_is_not_recovered() {
        // The force-delete run is Ready at 7m03s; with a 5m recovery timeout that is too late.
        let (r, v) = eval(FORCE_DELETE, 300, expect(Some(true), None, None), None);
        assert_eq!(v, Verdict::Fail);
        assert_eq!(r[0].actual, "false");
        assert!(
            r[0].evidence
                .ends_with("Ready on kind-worker2 at 7m03s, after the 5m recovery timeout"),
            "{}",
            r[0].evidence
        );
        let (_, v) = eval(FORCE_DELETE, 600, expect(Some(true), None, None), None);
        assert_eq!(v, Verdict::Pass);
    }

    /// The oos-taint run cut off at `at_ms` (no run-finished).
    fn truncated(at_ms: u64) -> Vec<Event> {
        let mut ev = events(OOS_TAINT);
        ev.retain(|e| e.at_ms <= at_ms);
        ev
    }

    #[test]
    fn harness_error_makes_undecided_expectations_unknown() {
        let run = planned(
            "node-shutdown",
            "v",
            1,
            oos(),
            secs(120),
            expect(Some(true), bound(120), bound(60)),
        );
        // Cut 25 s after the fault: nothing decided yet.
        let tl = analyze(&truncated(10_402 + 25_000));
        let (r, v) = evaluate(&run, &tl, Some("lost the API server"));
        assert_eq!(v, Verdict::Unknown);
        assert!(r.iter().all(|x| x.verdict == Verdict::Unknown), "{r:#?}");
        assert_eq!(r[0].actual, "unknown (run ended early)");
        assert!(
            r[0].evidence.starts_with(
                "the run ended 21.4s after the fault, before a replacement was Ready: lost the \
                 API server; so far: node kind-worker NotReady at 20.9s"
            ),
            "{}",
            r[0].evidence
        );
    }

    #[test]
    fn harness_error_still_decides_what_the_events_prove() {
        let run = planned(
            "node-shutdown",
            "v",
            1,
            oos(),
            secs(120),
            expect(Some(true), bound(20), bound(60)),
        );
        // Cut 35 s after the fault: Running (31.8 s) exceeded the 20 s bound, Ready unknown.
        let tl = analyze(&truncated(10_402 + 35_000));
        let (r, v) = evaluate(&run, &tl, Some("watch failed"));
        assert_eq!(r[0].verdict, Verdict::Unknown);
        assert_eq!(r[1].verdict, Verdict::Fail);
        assert_eq!(r[2].verdict, Verdict::Unknown);
        assert_eq!(v, Verdict::Fail);

        // Everything passing but the run errored (e.g. during healing): Unknown overall.
        let run = planned(
            "node-shutdown",
            "v",
            1,
            oos(),
            secs(120),
            expect(Some(true), bound(120), bound(60)),
        );
        let tl = analyze(&events(OOS_TAINT));
        let (r, v) = evaluate(&run, &tl, Some("heal failed: node did not come back"));
        assert!(r.iter().all(|x| x.verdict == Verdict::Pass));
        assert_eq!(v, Verdict::Unknown);

        // An absent metric whose bound had already passed when the run died is a Fail.
        let run = planned(
            "node-shutdown",
            "v",
            1,
            oos(),
            secs(120),
            expect(None, None, bound(30)),
        );
        let tl = analyze(&truncated(10_402 + 35_000));
        let (r, v) = evaluate(&run, &tl, Some("watch failed"));
        assert_eq!(r[0].actual, "absent (never Ready)");
        assert_eq!(v, Verdict::Fail);
    }

    #[test]
    fn evidence_names_a_replacement_stuck_on_the_attached_volume() {
        // The force-delete run observed for 2 minutes only, then finished cleanly.
        let mut ev = events(FORCE_DELETE);
        ev.retain(|e| e.at_ms <= 9_870 + 120_000);
        ev.push(Event {
            at_ms: 9_870 + 120_000,
            wall: "2025-06-02T10:28:09.870Z".into(),
            what: EventKind::RunFinished { error: None },
        });
        let run = planned(
            "node-shutdown",
            "force-delete",
            1,
            RemediationSpec::ForceDeletePod {
                after: secs(30),
                fence: crate::spec::Fence::None,
            },
            secs(600),
            expect(Some(true), bound(60), None),
        );
        let (r, v) = evaluate(&run, &analyze(&ev), None);
        assert_eq!(v, Verdict::Fail);
        assert_eq!(
            r[0].evidence,
            "node kind-worker NotReady at 20.8s; force-delete-pod applied at 50.8s; old pod \
             writer-0 deleted at 50.8s; replacement writer-0 (uid \
             4d5e6f70-8192-4a3b-9c4d-5e6f7a8b9c0d) created at 50.9s, scheduled on kind-worker2 \
             at 51.0s, never Running (volume still attached to kind-worker); no replacement \
             Ready within the 10m recovery timeout (observed until 2m00s after the fault)"
        );
        assert_eq!(r[1].actual, "absent (never Running)");
    }

    #[test]
    fn no_expectations_is_unknown() {
        let (r, v) = eval(OOS_TAINT, 120, Expectations::default(), None);
        assert!(r.is_empty());
        assert_eq!(v, Verdict::Unknown);
    }

    #[test]
    fn no_fault_is_unknown_even_without_error() {
        let mut ev = events(OOS_TAINT);
        ev.retain(|e| !matches!(e.what, EventKind::FaultInjected { .. }));
        let run = planned(
            "node-shutdown",
            "v",
            1,
            oos(),
            secs(120),
            expect(Some(false), bound(60), None),
        );
        let (r, v) = evaluate(&run, &analyze(&ev), None);
        assert_eq!(v, Verdict::Unknown);
        assert_eq!(r[0].actual, "unknown (no fault)");
        assert_eq!(r[1].verdict, Verdict::Unknown);
        assert!(r[0].evidence.starts_with("no fault-injected event"));
    }

    #[test]
    fn combine_rules() {
        let res = |v| ExpectationResult {
            name: "x".into(),
            expected: "".into(),
            actual: "".into(),
            verdict: v,
            evidence: "".into(),
        };
        assert_eq!(combine(&[res(Verdict::Pass)], false), Verdict::Pass);
        assert_eq!(combine(&[res(Verdict::Pass)], true), Verdict::Unknown);
        assert_eq!(
            combine(&[res(Verdict::Unknown), res(Verdict::Fail)], true),
            Verdict::Fail
        );
        assert_eq!(
            combine(&[res(Verdict::Pass), res(Verdict::Unknown)], false),
            Verdict::Unknown
        );
        assert_eq!(combine(&[], false), Verdict::Unknown);
    }
}
