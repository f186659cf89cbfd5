//! Exit codes: the contract a CI job bets a release on. Pure; unit-tested over every mix of
//! run verdicts.
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | every run passed (with `--fail-on fail`: no run failed and every run completed) |
//! | 1 | an expectation failed; with `--fail-on unknown` (the default) also: a completed run whose verdict is unknown (an expectation could not be decided, or it has none) |
//! | 2 | bad input or usage |
//! | 3 | the harness could not run or complete a run (and no expectation failed) |
//! | 130 | interrupted; the cluster was healed |

use crate::report::Report;
use crate::verdict::Verdict;
use clap::ValueEnum;

pub const EXIT_OK: u8 = 0;
pub const EXIT_EXPECTATION_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
pub const EXIT_HARNESS: u8 = 3;
pub const EXIT_INTERRUPTED: u8 = 130;

/// Which verdicts fail the invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum FailOn {
    /// Only a failed expectation (and a harness error) fails; an undecided run passes.
    Fail,
    /// A failed expectation, and also a run whose verdict is unknown (the default: nothing that
    /// was not proven counts as met).
    #[default]
    Unknown,
}

/// The exit code of a finished invocation (not interrupted) from its report.
///
/// Precedence: a failed expectation (1) over a harness error (3) over an unknown verdict (1
/// under `--fail-on unknown`) over success (0). A report without any run is a harness error:
/// nothing ran.
pub fn exit_code(report: &Report, fail_on: FailOn) -> u8 {
    let runs: Vec<_> = report.experiments.iter().flat_map(|e| &e.runs).collect();
    if runs.is_empty() {
        return EXIT_HARNESS;
    }
    if runs.iter().any(|r| r.verdict == Verdict::Fail) {
        return EXIT_EXPECTATION_FAILED;
    }
    if runs.iter().any(|r| r.error.is_some()) {
        return EXIT_HARNESS;
    }
    if fail_on == FailOn::Unknown && runs.iter().any(|r| r.verdict == Verdict::Unknown) {
        return EXIT_EXPECTATION_FAILED;
    }
    EXIT_OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{ExperimentResult, RunResult};

    fn run(verdict: Verdict, error: bool) -> RunResult {
        RunResult {
            id: "e/v/1".into(),
            variant: "v".into(),
            repetition: 1,
            fault: "node-shutdown".into(),
            remediation: "none".into(),
            remediation_detail: None,
            provider: None,
            profile: None,
            started: None,
            duration_ms: 0,
            stages_ms: vec![],
            lane: None,
            lane_nodes: vec![],
            target_node: None,
            replacement_node: None,
            time_zero: None,
            phases: vec![],
            metrics: Default::default(),
            write_outage: None,
            expectations: vec![],
            verdict,
            error: error.then(|| "boom".to_string()),
            environment: None,
            spec_hash: String::new(),
            integrity: None,
            controller_counters: None,
        }
    }

    fn report(runs: Vec<RunResult>) -> Report {
        Report {
            schema_version: crate::report::SCHEMA_VERSION,
            tool: "nodedown test".into(),
            invocation: None,
            experiments: vec![ExperimentResult {
                name: "e".into(),
                file: "e.yaml".into(),
                runs,
                variants: vec![],
            }],
        }
    }

    /// Every mix of up to three runs of (pass, fail, unknown, unknown+harness error) under both
    /// policies, against the rule written out case by case.
    #[test]
    fn every_verdict_mix() {
        use Verdict::*;
        let kinds = [
            (Pass, false),
            (Fail, false),
            (Unknown, false),
            (Unknown, true),
        ];
        let mut mixes: Vec<Vec<(Verdict, bool)>> = vec![vec![]];
        for _ in 0..3 {
            let mut next = Vec::new();
            for m in &mixes {
                for k in kinds {
                    let mut m = m.clone();
                    m.push(k);
                    next.push(m);
                }
            }
            mixes.extend(next);
        }
        mixes.sort();
        mixes.dedup();
        assert_eq!(mixes.len(), 1 + 4 + 16 + 64);
        for mix in mixes {
            let rep = report(mix.iter().map(|&(v, e)| run(v, e)).collect());
            let any_fail = mix.iter().any(|&(v, _)| v == Fail);
            let any_error = mix.iter().any(|&(_, e)| e);
            let any_unknown = mix.iter().any(|&(v, _)| v == Unknown);
            for policy in [FailOn::Fail, FailOn::Unknown] {
                let want = if mix.is_empty() {
                    EXIT_HARNESS
                } else if any_fail {
                    EXIT_EXPECTATION_FAILED
                } else if any_error {
                    EXIT_HARNESS
                } else if any_unknown && policy == FailOn::Unknown {
                    EXIT_EXPECTATION_FAILED
                } else {
                    EXIT_OK
                };
                assert_eq!(exit_code(&rep, policy), want, "{mix:?} {policy:?}");
            }
        }
    }

    #[test]
    fn named_cases() {
        use Verdict::*;
        let r = |v: Vec<(Verdict, bool)>| report(v.into_iter().map(|(v, e)| run(v, e)).collect());
        assert_eq!(exit_code(&r(vec![(Pass, false)]), FailOn::Unknown), 0);
        // integrity Unknown, no expectations, ledger not collected: unknown without an error
        assert_eq!(exit_code(&r(vec![(Unknown, false)]), FailOn::Unknown), 1);
        assert_eq!(exit_code(&r(vec![(Unknown, false)]), FailOn::Fail), 0);
        assert_eq!(
            exit_code(&r(vec![(Pass, false), (Unknown, true)]), FailOn::Fail),
            3
        );
        assert_eq!(
            exit_code(&r(vec![(Fail, false), (Unknown, true)]), FailOn::Fail),
            1
        );
        assert_eq!(exit_code(&r(vec![]), FailOn::Fail), 3);
    }
}
