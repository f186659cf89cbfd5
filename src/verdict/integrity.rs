//! The `integrity` expectation (pure): the ledger checker's report against what the experiment
//! expects of it.

use super::{ExpectationResult, Verdict};
use crate::plan::PlannedRun;
use crate::units::{fmt_at_least, fmt_duration, fmt_ms};

/// An `integrity` expectation against the checker's report. The checker's own Unknown decides
/// nothing: whatever it found on the way (lost writes, a second writer) is evidence, but an
/// expectation is met or not only on a decided report. On a decided report: `pass` wants Pass;
/// `fail` wants Fail; `split-brain` wants a detected second writer; `lost-writes` wants at least
/// one lost acknowledged write.
pub fn integrity_verdict(
    want: crate::spec::IntegrityExpectation,
    r: &crate::integrity::IntegrityReport,
) -> Verdict {
    use crate::spec::IntegrityExpectation as Want;
    let hit = match r.verdict {
        Verdict::Unknown => return Verdict::Unknown,
        Verdict::Pass => want == Want::Pass,
        Verdict::Fail => match want {
            Want::Pass => false,
            Want::Fail => true,
            Want::SplitBrain => r.split_brain.detected,
            Want::LostWrites => r.lost_acked.count > 0,
        },
    };
    if hit {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

/// The ledger expectations (`integrity`, `writeOutage`) of a run, from the checker's report and
/// the measured write outage. `report` is `None` when the run directory holds no ledger
/// evidence; then every ledger expectation is Unknown.
pub fn evaluate_integrity(
    run: &PlannedRun,
    report: Option<&crate::integrity::IntegrityReport>,
    outage: Option<crate::integrity::Outage>,
    acks: usize,
) -> Vec<ExpectationResult> {
    let mut out = Vec::new();
    let missing = "no ledger evidence in the run directory (ledger/ledger.bin and acks.jsonl)";
    if let Some(want) = run.expect.integrity {
        let (verdict, actual, evidence) = match report {
            None => (Verdict::Unknown, "unknown".to_string(), missing.to_string()),
            Some(r) => {
                let found = if r.split_brain.detected {
                    "split-brain"
                } else if r.lost_acked.count > 0 {
                    "lost-writes"
                } else {
                    match r.verdict {
                        Verdict::Pass => "pass",
                        Verdict::Fail => "fail",
                        Verdict::Unknown => "unknown",
                    }
                };
                let verdict = integrity_verdict(want, r);
                let evidence = r.evidence().trim_end().to_string();
                (verdict, found.to_string(), evidence)
            }
        };
        out.push(ExpectationResult {
            name: "integrity".into(),
            expected: want.as_str().into(),
            actual,
            verdict,
            evidence,
        });
    }
    if let Some(bound) = &run.expect.write_outage {
        let max = bound.max.as_millis() as u64;
        let expected = format!("<= {}", fmt_duration(bound.max));
        let r = match outage {
            Some(o) if o.restored => ExpectationResult {
                name: "writeOutage".into(),
                expected,
                actual: fmt_ms(o.duration_ms()),
                verdict: if o.duration_ms() <= max {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                },
                evidence: format!(
                    "last acknowledged write before the fault to the first one after it: {}",
                    fmt_ms(o.duration_ms())
                ),
            },
            // Not restored while watched: at least this long. Past the bound it is certainly
            // too long; within it, how long it went on is unknown.
            Some(o) => ExpectationResult {
                name: "writeOutage".into(),
                expected,
                actual: format!("{} (not restored)", fmt_at_least(o.duration_ms())),
                verdict: if o.duration_ms() > max {
                    Verdict::Fail
                } else {
                    Verdict::Unknown
                },
                evidence: format!(
                    "no write acknowledged after the fault before the watch ended, {} after the \
                     last one before it",
                    fmt_ms(o.duration_ms())
                ),
            },
            None if acks == 0 => ExpectationResult {
                name: "writeOutage".into(),
                expected,
                actual: "unknown".into(),
                verdict: Verdict::Unknown,
                evidence: "no acknowledged write was observed at all".into(),
            },
            None => ExpectationResult {
                name: "writeOutage".into(),
                expected,
                actual: "unknown".into(),
                verdict: Verdict::Unknown,
                evidence: format!(
                    "{acks} acks observed, none before the fault: the outage has no beginning"
                ),
            },
        };
        out.push(r);
    }
    out
}

/// The fence's own verdict, for a storage-fenced run: it held when no record of the fenced node
/// was written while the storage was to refuse it. What the node wrote after the fence was
/// lifted (the unfence hazard) is evidence, not a breach.
pub fn fence_efficacy(f: &crate::integrity::FenceEfficacy) -> ExpectationResult {
    let actual = match f.verdict {
        Verdict::Pass => "held".to_string(),
        Verdict::Fail => format!(
            "breached: {} record(s) of {} written while fenced",
            f.through_fence, f.node
        ),
        Verdict::Unknown => "unknown".to_string(),
    };
    let mut evidence = Vec::new();
    if let Some(last) = &f.last_before {
        evidence.push(format!(
            "last record of {} before the fence: {last}",
            f.node
        ));
    }
    if f.after_unfence > 0 {
        evidence.push(format!(
            "unfence hazard: {} record(s) of {} written after the fence was lifted",
            f.after_unfence, f.node
        ));
    }
    evidence.extend(f.evidence.iter().cloned());
    if evidence.is_empty() {
        evidence.push(format!("no record of {} in the ledger", f.node));
    }
    ExpectationResult {
        name: "fenceEfficacy".into(),
        expected: "held".into(),
        actual,
        verdict: f.verdict,
        evidence: evidence.join("\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Bound;
    use crate::spec::IntegrityExpectation as Want;
    use std::time::Duration;

    /// A checker report of the given outcome. The checker itself is tested in `integrity`;
    /// here only the fields the expectation reads matter, so they are set directly on the
    /// report of an empty ledger.
    fn report(verdict: Verdict, split: bool, lost: u64) -> crate::integrity::IntegrityReport {
        let mut r = crate::integrity::check(std::io::empty(), &[]);
        r.verdict = verdict;
        r.split_brain.detected = split;
        r.lost_acked.count = lost;
        r
    }

    /// Every expectation × every checker outcome, against the table written out by hand.
    #[test]
    fn every_expectation_against_every_checker_outcome() {
        use Verdict::{Fail as F, Pass as P, Unknown as U};
        // (checker verdict, split brain, lost acked) → verdict for pass, split-brain,
        // lost-writes, fail
        let table: [((Verdict, bool, u64), [Verdict; 4]); 7] = [
            ((P, false, 0), [P, F, F, F]),
            ((F, true, 0), [F, P, F, P]),
            ((F, false, 3), [F, F, P, P]),
            ((F, true, 3), [F, P, P, P]),
            // corruption only
            ((F, false, 0), [F, F, F, P]),
            // the checker could not decide: nothing is met, whatever it saw on the way
            ((U, false, 0), [U, U, U, U]),
            ((U, true, 3), [U, U, U, U]),
        ];
        for ((v, split, lost), want) in table {
            let r = report(v, split, lost);
            for (i, w) in [Want::Pass, Want::SplitBrain, Want::LostWrites, Want::Fail]
                .into_iter()
                .enumerate()
            {
                assert_eq!(
                    integrity_verdict(w, &r),
                    want[i],
                    "checker {v:?} split={split} lost={lost}, expecting {w:?}"
                );
            }
        }
    }

    #[test]
    fn no_ledger_evidence_is_unknown_and_outage_without_acks_is_unknown() {
        let mut run = crate::plan::fixtures::planned(
            "e",
            "v",
            1,
            crate::spec::RemediationSpec::None,
            Duration::from_secs(60),
            crate::spec::Expectations {
                integrity: Some(Want::LostWrites),
                write_outage: Some(Bound {
                    max: Duration::from_secs(30),
                }),
                ..Default::default()
            },
        );
        run.workload.kind = crate::spec::WorkloadKind::Ledger;
        let r = evaluate_integrity(&run, None, None, 0);
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|e| e.verdict == Verdict::Unknown), "{r:#?}");
        let unknown = report(Verdict::Unknown, false, 4);
        let outage = |ms: u64, restored| crate::integrity::Outage {
            from_ms: 1000,
            until_ms: 1000 + ms,
            restored,
        };
        let r = evaluate_integrity(&run, Some(&unknown), Some(outage(31_000, true)), 10);
        assert_eq!(
            r[0].verdict,
            Verdict::Unknown,
            "lost-writes on an undecided check"
        );
        assert_eq!(r[1].verdict, Verdict::Fail, "outage over its bound");
        assert_eq!(r[1].actual, "31.0s");
        // not restored while watched: over the bound it failed; within it nobody knows
        let r = evaluate_integrity(&run, Some(&unknown), Some(outage(31_000, false)), 10);
        assert_eq!(r[1].verdict, Verdict::Fail);
        assert_eq!(r[1].actual, "≥ 31.0s (not restored)");
        let r = evaluate_integrity(&run, Some(&unknown), Some(outage(20_000, false)), 10);
        assert_eq!(r[1].verdict, Verdict::Unknown);
        let r = evaluate_integrity(&run, Some(&unknown), Some(outage(20_000, true)), 10);
        assert_eq!(r[1].verdict, Verdict::Pass);
    }
}
