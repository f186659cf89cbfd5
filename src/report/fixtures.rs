//! Test support for the report renderers: a report assembled from the synthetic (hand-written)
//! events in `tests/fixtures/synthetic/events/`, and golden-file comparison (`NODEDOWN_BLESS=1` rewrites them).

use super::assemble;
use super::Report;
use crate::plan::fixtures::{events, planned, secs, FORCE_DELETE, NONE_TIMEOUT, OOS_TAINT};
use crate::plan::PlannedRun;
use crate::spec::{Bound, Expectations, RemediationSpec};
use crate::timeline::{Event, EventKind};
use std::path::PathBuf;
use std::time::Duration;

fn expect(recovered: Option<bool>, running: Option<u64>, ready: Option<u64>) -> Expectations {
    let b = |s: Option<u64>| s.map(|s| Bound { max: secs(s) });
    Expectations {
        recovered,
        time_to_running: b(running),
        time_to_ready: b(ready),
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

/// The out-of-service-taint run: recovered, Running ≤ 2m, Ready ≤ 1m.
pub(crate) fn oos_run() -> PlannedRun {
    planned(
        "node-shutdown",
        "oos-taint",
        1,
        oos(),
        secs(120),
        expect(Some(true), Some(120), Some(60)),
    )
}

/// The force-delete run again, `offset_ms` later, and with every event after the forced
/// detach `late_ms` later still.
fn force_delete_repetition(offset_ms: u64, late_ms: u64, repetition: u32) -> Vec<Event> {
    let fault = 9_870;
    events(FORCE_DELETE)
        .into_iter()
        .map(|mut e| {
            let shift = offset_ms + if e.at_ms > fault + 60_000 { late_ms } else { 0 };
            let wall = humantime::parse_rfc3339(&e.wall).expect("fixture wall clock");
            e.wall =
                humantime::format_rfc3339_millis(wall + Duration::from_millis(shift)).to_string();
            // at_ms counts from the run's start: only the late part moves.
            if e.at_ms > fault + 60_000 {
                e.at_ms += late_ms;
            }
            if let EventKind::RunStarted {
                run, repetition: r, ..
            } = &mut e.what
            {
                *r = repetition;
                *run = format!("node-shutdown/force-delete/{repetition}");
            }
            e
        })
        .collect()
}

/// The runs of the golden report, in run order:
/// - node-shutdown/oos-taint/1: pass;
/// - node-shutdown/baseline/1: expected non-recovery, pass;
/// - node-shutdown/force-delete/1 and /2: Ready in 7m03s (pass) and 7m08s (fail, bound 7m05s);
/// - strict-recovery/oos-taint/1: Ready in 39.7s, bound 30s: fail;
/// - strict-recovery/oos-taint/2: cut off 25 s after the fault, no run-finished: unknown;
/// - strict-recovery/baseline/1: the `none` run expected to recover: fail, never Running;
/// - strict-recovery/unchecked/1: no expectations: unknown.
pub(crate) fn golden_runs() -> Vec<(PlannedRun, Vec<Event>)> {
    let force = RemediationSpec::ForceDeletePod {
        after: secs(30),
        fence: crate::spec::Fence::None,
    };
    let strict = |variant: &str, rep: u32, remediation: RemediationSpec, e: Expectations| {
        let mut run = planned("strict-recovery", variant, rep, remediation, secs(120), e);
        run.file = PathBuf::from("experiments/strict-recovery.yaml");
        run
    };
    let cut = {
        let mut ev = events(OOS_TAINT);
        ev.retain(|e| e.at_ms <= 10_402 + 25_000);
        ev
    };
    vec![
        (oos_run(), events(OOS_TAINT)),
        (
            planned(
                "node-shutdown",
                "baseline",
                1,
                RemediationSpec::None,
                secs(120),
                expect(Some(false), None, None),
            ),
            events(NONE_TIMEOUT),
        ),
        (
            planned(
                "node-shutdown",
                "force-delete",
                1,
                force.clone(),
                secs(600),
                expect(Some(true), None, Some(425)),
            ),
            events(FORCE_DELETE),
        ),
        (
            planned(
                "node-shutdown",
                "force-delete",
                2,
                force,
                secs(600),
                expect(Some(true), None, Some(425)),
            ),
            force_delete_repetition(480_000, 5_000, 2),
        ),
        (
            strict("oos-taint", 1, oos(), expect(Some(true), None, Some(30))),
            events(OOS_TAINT),
        ),
        (
            strict("oos-taint", 2, oos(), expect(Some(true), None, Some(30))),
            cut,
        ),
        (
            strict(
                "baseline",
                1,
                RemediationSpec::None,
                expect(Some(true), Some(120), None),
            ),
            events(NONE_TIMEOUT),
        ),
        (
            strict("unchecked", 1, oos(), Expectations::default()),
            events(OOS_TAINT),
        ),
    ]
}

/// The report every golden file is rendered from.
/// The results.json of the recorded run directory `tests/fixtures/runs/<name>/` (real runs).
pub(crate) fn recorded(name: &str) -> Report {
    let path = format!(
        "{}/tests/fixtures/runs/{name}/results.json",
        env!("CARGO_MANIFEST_DIR")
    );
    super::json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub(crate) fn golden_report() -> Report {
    assemble::report(golden_runs(), "0.1.0-test")
}

/// Whether goldens are rewritten: `NODEDOWN_BLESS=1`, which is refused when `CI` is set (a
/// CI job that blessed would compare the output with itself and pass whatever it printed).
fn blessing(bless: Option<&str>, ci: Option<&str>) -> bool {
    let bless = bless == Some("1");
    if bless && ci.is_some_and(|v| !v.is_empty() && v != "false" && v != "0") {
        panic!("NODEDOWN_BLESS=1 is refused when CI is set: bless goldens locally and commit them");
    }
    bless
}

/// Compares `actual` with `tests/fixtures/golden/<name>`; with `NODEDOWN_BLESS=1` writes it
/// instead (never under CI).
pub(crate) fn check_golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/golden")
        .join(name);
    if blessing(
        std::env::var("NODEDOWN_BLESS").ok().as_deref(),
        std::env::var("CI").ok().as_deref(),
    ) {
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with NODEDOWN_BLESS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the output at line {} (NODEDOWN_BLESS=1 rewrites it after you have \
             checked the change)\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display(),
            line + 1
        );
    }
}

#[cfg(test)]
mod tests {
    use super::blessing;

    #[test]
    fn blessing_is_refused_under_ci() {
        assert!(blessing(Some("1"), None));
        assert!(blessing(Some("1"), Some("false")));
        assert!(!blessing(None, Some("true")));
        assert!(!blessing(Some("0"), None));
        let refused = std::panic::catch_unwind(|| blessing(Some("1"), Some("true")));
        assert!(refused.is_err(), "CI=true with NODEDOWN_BLESS=1 must panic");
    }
}
