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
    exit_code_of(
        report
            .experiments
            .iter()
            .flat_map(|e| &e.runs)
            .map(|r| (r.verdict, r.error.is_some())),
        fail_on,
    )
}

/// The same rule over each run's verdict and whether it ended with a harness error — every
/// kind of run (real or simulated) exits by it. Precedence: a failed expectation (1) over a
/// harness error (3) over an unknown verdict (1 under `--fail-on unknown`) over success (0);
/// no run at all is a harness error.
pub fn exit_code_of(runs: impl IntoIterator<Item = (Verdict, bool)>, fail_on: FailOn) -> u8 {
    let runs: Vec<(Verdict, bool)> = runs.into_iter().collect();
    if runs.is_empty() {
        return EXIT_HARNESS;
    }
    if runs.iter().any(|(v, _)| *v == Verdict::Fail) {
        return EXIT_EXPECTATION_FAILED;
    }
    if runs.iter().any(|(_, error)| *error) {
        return EXIT_HARNESS;
    }
    if fail_on == FailOn::Unknown && runs.iter().any(|(v, _)| *v == Verdict::Unknown) {
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
            variant_description: None,
            repetition: 1,
            fault: crate::vocab::FaultKind::NodeShutdown,
            remediation: crate::vocab::RemediationKind::None,
            remediation_detail: None,
            provider: None,
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
            verdict,
            outcome: None,
            error: error.then(|| "boom".to_string()),
            environment: None,
            spec_hash: String::new(),
            integrity: None,
            controller_counters: None,
            instances: vec![],
            fleet: None,
            scale: None,
        }
    }

    fn report(runs: Vec<RunResult>) -> Report {
        Report {
            schema_version: crate::report::SCHEMA_VERSION,
            tool: "nodedown test".into(),
            invocation: None,
            origin: None,
            experiments: vec![ExperimentResult {
                name: "e".into(),
                file: "e.yaml".into(),
                runs,
                variants: vec![],
                description: None,
            }],
            not_run: vec![],
            dir: None,
        }
    }

    /// The contract as a table: which kinds of run an invocation holds (P pass, F fail, U
    /// unknown, E unknown with a harness error) → the exit code under `--fail-on fail` and
    /// under `--fail-on unknown`. Written out by hand from README's exit-code table, every one
    /// of the 16 sets.
    const CONTRACT: [(&str, u8, u8); 16] = [
        ("", 3, 3), // nothing ran
        ("P", 0, 0),
        ("F", 1, 1),
        ("U", 0, 1),
        ("E", 3, 3),
        ("PF", 1, 1),
        ("PU", 0, 1),
        ("PE", 3, 3),
        ("FU", 1, 1),
        ("FE", 1, 1),
        ("UE", 3, 3),
        ("PFU", 1, 1),
        ("PFE", 1, 1),
        ("PUE", 3, 3),
        ("FUE", 1, 1),
        ("PFUE", 1, 1),
    ];

    /// Every mix of up to four runs of (pass, fail, unknown, unknown+harness error), in every
    /// order, under both policies, against [`CONTRACT`].
    #[test]
    fn every_verdict_mix() {
        use Verdict::*;
        let kinds = [
            ('P', Pass, false),
            ('F', Fail, false),
            ('U', Unknown, false),
            ('E', Unknown, true),
        ];
        let mut mixes: Vec<Vec<usize>> = vec![vec![]];
        for len in 1..=4u32 {
            for n in 0..4usize.pow(len) {
                mixes.push((0..len).map(|i| n / 4usize.pow(i) % 4).collect());
            }
        }
        assert_eq!(mixes.len(), 1 + 4 + 16 + 64 + 256);
        let mut sets_seen = std::collections::BTreeSet::new();
        for mix in mixes {
            let rep = report(mix.iter().map(|&k| run(kinds[k].1, kinds[k].2)).collect());
            let set: String = kinds
                .iter()
                .enumerate()
                .filter(|(k, _)| mix.contains(k))
                .map(|(_, (c, _, _))| *c)
                .collect();
            let (_, on_fail, on_unknown) = CONTRACT
                .iter()
                .find(|(s, _, _)| *s == set)
                .unwrap_or_else(|| panic!("{set:?} missing from the contract table"));
            assert_eq!(
                exit_code(&rep, FailOn::Fail),
                *on_fail,
                "{set} --fail-on fail"
            );
            assert_eq!(
                exit_code(&rep, FailOn::Unknown),
                *on_unknown,
                "{set} --fail-on unknown"
            );
            sets_seen.insert(set);
        }
        assert_eq!(
            sets_seen.len(),
            CONTRACT.len(),
            "every row of the table was exercised"
        );
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
