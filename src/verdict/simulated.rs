//! Verdicts of simulated runs (provider kwok; pure): every expectation the spec accepts for a
//! simulated experiment (`recovered`, `timeToRunning`; the rest is refused by
//! `spec::simulated`) checked against what the run's watches saw, three-valued like a real
//! run's and combined by the same rule ([`super::combine`]).
//!
//! A simulated run has many instances; an expectation holds when it holds for every one of them
//! (as for a fleet): `timeToRunning` is the time until every replacement was Running with its
//! volume attached (the `replacement-running` milestone of [`crate::timeline::scale`]: a
//! kubelet starts no container before the volume is attached; kwok, in its place, does not
//! wait). There is no `timeToReady`: a simulated pod has no readiness probe.

use super::{combine, ExpectationResult, Verdict};
use crate::plan::PlannedRun;
use crate::spec::Bound;
use crate::timeline::scale::{AffectedInstance, ScaleObservations};
use crate::units::{fmt_duration, fmt_ms, millis};

/// Checks `run`'s expectations against `obs`. `error` is why the harness could not complete
/// the run (`None`: it did): what the observations already prove is still decided (a bound
/// already exceeded is exceeded), the rest is unknown. No expectations: `Unknown`.
pub fn evaluate(
    run: &PlannedRun,
    obs: &ScaleObservations,
    error: Option<&str>,
) -> (Vec<ExpectationResult>, Verdict) {
    let mut results = Vec::new();
    if let Some(want) = run.expect.recovered {
        results.push(recovered(run, obs, want, error));
    }
    if let Some(bound) = &run.expect.time_to_running {
        results.push(every(
            "timeToRunning",
            "Running with its volume attached",
            obs,
            bound,
            error,
            AffectedInstance::replacement_running_ms,
        ));
    }
    if run.expect.time_to_ready.is_some() {
        // Refused by validation today; a run planned before that keeps it, never decided.
        let mut r = ExpectationResult::undecided("timeToReady", "-".into());
        r.evidence = "a simulated pod has no readiness probe: bound timeToRunning".into();
        results.push(r);
    }
    let verdict = combine(&results, error.is_some());
    (results, verdict)
}

/// The instances that reached a milestone, the slowest of them, and those that did not.
fn reach(
    obs: &ScaleObservations,
    at: impl Fn(&AffectedInstance) -> Option<u64>,
) -> (Option<(u64, &str)>, Vec<&str>) {
    let mut slowest: Option<(u64, &str)> = None;
    let mut missing = Vec::new();
    for i in &obs.instances {
        match at(i) {
            Some(ms) if slowest.is_none_or(|(s, _)| ms > s) => slowest = Some((ms, &i.name)),
            Some(_) => {}
            None => missing.push(i.name.as_str()),
        }
    }
    (slowest, missing)
}

/// "i0003, i0007, i0009 and 12 more"
fn some_of(names: &[&str]) -> String {
    crate::units::some_of(names, 3)
}

fn no_instances(error: Option<&str>) -> String {
    match error {
        Some(e) => format!("no instance was seen on a lost node; run error: {e}"),
        None => "no instance was seen on a lost node".into(),
    }
}

fn recovered(
    run: &PlannedRun,
    obs: &ScaleObservations,
    want: bool,
    error: Option<&str>,
) -> ExpectationResult {
    let mut r = ExpectationResult::undecided("recovered", want.to_string());
    let n = obs.instances.len();
    if n == 0 {
        r.evidence = no_instances(error);
        return r;
    }
    let (slowest, missing) = reach(obs, AffectedInstance::replacement_running_ms);
    let window = fmt_duration(run.timeouts.recovery);
    let back = missing.is_empty();
    if !back && error.is_some() {
        // The run ended early: an instance not back yet might have come back.
        r.evidence = format!(
            "{} of {n} replacements Running with their volume attached when the run ended: {}",
            n - missing.len(),
            error.unwrap_or_default()
        );
        return r;
    }
    r.actual = back.to_string();
    r.evidence = match (back, slowest) {
        (true, Some((ms, who))) => format!(
            "every one of {n} replacements Running with its volume attached, the last ({who}) at {}",
            fmt_ms(ms)
        ),
        _ => format!(
            "{} of {n} replacements Running with their volume attached within {window}; not back: {}",
            n - missing.len(),
            some_of(&missing)
        ),
    };
    r.verdict = if back == want {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    r
}

fn every(
    name: &str,
    state: &str,
    obs: &ScaleObservations,
    bound: &Bound,
    error: Option<&str>,
    at: impl Fn(&AffectedInstance) -> Option<u64>,
) -> ExpectationResult {
    let max = millis(bound.max);
    let mut r = ExpectationResult::undecided(name, format!("<= {}", fmt_duration(bound.max)));
    let n = obs.instances.len();
    if n == 0 {
        r.evidence = no_instances(error);
        return r;
    }
    let (slowest, missing) = reach(obs, at);
    match (slowest, missing.is_empty()) {
        (Some((ms, who)), true) => {
            r.actual = fmt_ms(ms);
            r.evidence = format!(
                "every one of {n} replacements {state}, the last ({who}) at {}",
                fmt_ms(ms)
            );
            if ms <= max {
                r.verdict = Verdict::Pass;
            } else {
                r.verdict = Verdict::Fail;
                r.evidence.push_str(&super::over_the_bound(ms, bound));
            }
        }
        (Some((ms, who)), false) if ms > max => {
            // Already over the bound, whatever the others do.
            r.actual = format!("> {}", fmt_ms(ms));
            r.verdict = Verdict::Fail;
            r.evidence = format!(
                "{who}'s replacement {state} only at {}, over the {} bound; {} of {n} never {state}: {}",
                fmt_ms(ms),
                fmt_duration(bound.max),
                missing.len(),
                some_of(&missing)
            );
        }
        _ if error.is_some() => {
            r.evidence = format!(
                "{} of {n} replacements {state} when the run ended: {}",
                n - missing.len(),
                error.unwrap_or_default()
            );
        }
        _ => {
            r.actual = format!("absent (not every replacement {state})");
            r.verdict = Verdict::Fail;
            r.evidence = format!(
                "{} of {n} replacements never {state} within the recovery window: {}",
                missing.len(),
                some_of(&missing)
            );
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanOptions;

    /// The run of the recorded curve (docs/simulated-scale/, 200 simulated nodes) and its
    /// observations: recorded, not synthetic.
    fn recorded(variant: &str) -> (PlannedRun, ScaleObservations) {
        let curve: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("docs/simulated-scale/curve.json"),
            )
            .unwrap(),
        )
        .unwrap();
        let r = curve
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["variant"] == variant)
            .unwrap_or_else(|| panic!("{variant} in the recorded curve"));
        let obs: ScaleObservations = serde_json::from_value(r["observations"].clone()).unwrap();
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("experiments/scale-simulated.yaml");
        let exp = crate::spec::load_file(&file).unwrap();
        let run = crate::plan::expand(
            &exp,
            &file,
            &PlanOptions {
                repeat: None,
                only: vec![variant.into()],
            },
        )
        .remove(0);
        (run, obs)
    }

    fn bound(s: u64) -> Option<Bound> {
        Some(Bound {
            max: std::time::Duration::from_secs(s),
        })
    }

    #[test]
    fn the_recorded_curve_passes_its_own_expectations() {
        for v in ["lost-1-x20-none", "lost-1-x20-taint", "lost-20-x20-taint"] {
            let (run, obs) = recorded(v);
            let (rs, verdict) = evaluate(&run, &obs, None);
            assert_eq!(verdict, Verdict::Pass, "{v}: {rs:#?}");
            assert_eq!(rs.len(), 1, "{v}: recovered only");
        }
    }

    #[test]
    fn a_bound_nobody_can_meet_fails_naming_the_slowest_instance() {
        let (mut run, obs) = recorded("lost-20-x20-taint");
        run.expect.time_to_running = bound(1);
        let (rs, verdict) = evaluate(&run, &obs, None);
        assert_eq!(verdict, Verdict::Fail);
        let r = &rs[1];
        assert_eq!(r.verdict, Verdict::Fail, "{r:?}");
        assert_eq!(r.expected, "<= 1s");
        assert!(r.evidence.contains("over the 1s bound"), "{r:?}");
        assert!(
            r.evidence
                .contains("every one of 400 replacements Running with its volume attached"),
            "{r:?}"
        );
        // A generous bound passes the same run.
        run.expect.time_to_running = bound(600);
        assert_eq!(evaluate(&run, &obs, None).1, Verdict::Pass);
        // `timeToReady` (refused by validation) in a run planned before: never decided.
        run.expect.time_to_ready = bound(600);
        let (rs, verdict) = evaluate(&run, &obs, None);
        assert_eq!(rs[2].verdict, Verdict::Unknown, "{:?}", rs[2]);
        assert_eq!(verdict, Verdict::Unknown);
    }

    #[test]
    fn without_a_remediation_nothing_is_back_and_bounds_fail() {
        let (mut run, obs) = recorded("lost-1-x20-none");
        run.expect.recovered = Some(true);
        run.expect.time_to_running = bound(600);
        let (rs, verdict) = evaluate(&run, &obs, None);
        assert_eq!(verdict, Verdict::Fail);
        assert_eq!(rs[0].actual, "false");
        assert!(rs[0].evidence.contains("0 of 20"), "{:?}", rs[0]);
        assert!(rs[1].actual.starts_with("absent"), "{:?}", rs[1]);
    }

    #[test]
    fn an_error_leaves_undecided_what_was_not_yet_seen_and_no_expectation_is_unknown() {
        let (mut run, obs) = recorded("lost-1-x20-none");
        let (rs, verdict) = evaluate(&run, &obs, Some("kwok exited"));
        assert_eq!(verdict, Verdict::Unknown);
        assert_eq!(rs[0].verdict, Verdict::Unknown);
        assert!(rs[0].evidence.contains("kwok exited"), "{:?}", rs[0]);
        // A run that recovered before its error still proves it.
        let (run_t, obs_t) = recorded("lost-1-x20-taint");
        let (rs, verdict) = evaluate(&run_t, &obs_t, Some("heal failed"));
        assert_eq!(rs[0].verdict, Verdict::Pass);
        assert_eq!(verdict, Verdict::Unknown, "the error keeps the run unknown");
        // No expectations: nothing checked, never a pass.
        run.expect = Default::default();
        let (rs, verdict) = evaluate(&run, &obs, None);
        assert!(rs.is_empty());
        assert_eq!(verdict, Verdict::Unknown);
        // No instance seen at all: unknown, not a pass of `recovered: false`.
        run.expect.recovered = Some(false);
        let (rs, _) = evaluate(&run, &ScaleObservations::default(), None);
        assert_eq!(rs[0].verdict, Verdict::Unknown);
    }
}
