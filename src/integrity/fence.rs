//! Fence efficacy (pure): did the storage really stop the fenced node's writes?
//!
//! Every ledger record names the node its writer ran on and carries the writer's clock when it
//! wrote it. A storage fence is in place from the moment its controller reported Succeeded
//! (`fence-succeeded`) until it was seen gone (`unfenced`). A record of a writer on the fenced
//! node written inside that window got through the fence: the fence **failed**. None: it
//! **held**. A record of that node written after the unfence is the **unfence hazard** made
//! real: an old writer wrote again once the storage served its node again.
//!
//! The clocks: the record's time is its writer's (the fenced node's) clock, the window's the
//! harness's; `clock_skew_ms` widens the fence's start by that much (a record within it of the
//! fence is counted as before it, not as a breach).

use super::check::read_full;
use super::record::{self, RECORD_LEN};
use crate::outcome::Verdict;
use serde::{Deserialize, Serialize};
use std::io::Read;

/// The window in which the storage must refuse `node`, in ms since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceWindow {
    pub node: String,
    pub fenced_ms: u64,
    pub unfenced_ms: Option<u64>,
    pub clock_skew_ms: u64,
}

/// What the ledger says about the fence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FenceEfficacy {
    /// Pass: no record of the fenced node written while fenced; Fail: some; Unknown: the ledger
    /// could not be read to its end.
    pub verdict: Verdict,
    pub node: String,
    /// Records of writers on the fenced node written while the fence was in place.
    pub through_fence: u64,
    /// Records of writers on the fenced node written after the fence was lifted.
    pub after_unfence: u64,
    /// The last record of the fenced node before the fence (its seq and how long before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_before: Option<String>,
    /// The first offending records, each named by seq, pod, incarnation and time.
    pub evidence: Vec<String>,
}

const EXAMPLES: usize = 10;

pub fn fence_efficacy(ledger: impl Read, w: &FenceWindow) -> FenceEfficacy {
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, ledger);
    let mut buf = [0u8; RECORD_LEN];
    let mut out = FenceEfficacy {
        verdict: Verdict::Pass,
        node: w.node.clone(),
        through_fence: 0,
        after_unfence: 0,
        last_before: None,
        evidence: Vec::new(),
    };
    let from = w.fenced_ms + w.clock_skew_ms;
    let mut last_before: Option<(u64, u64)> = None;
    loop {
        match read_full(&mut reader, &mut buf) {
            Ok(n) if n < RECORD_LEN => break,
            Ok(_) => {}
            Err(e) => {
                out.verdict = Verdict::Unknown;
                out.evidence
                    .push(format!("the ledger could not be read: {e}"));
                return out;
            }
        }
        let Ok(v) = record::view(&buf) else { continue };
        if v.node() != w.node {
            continue;
        }
        let at = v.written_ms();
        let describe = |what: &str, rel: u64| {
            format!(
                "seq {} by pod {} (uid {}, started {}) on {}: written {} {what}",
                v.seq(),
                v.pod(),
                v.pod_uid(),
                humantime::format_rfc3339_millis(
                    std::time::UNIX_EPOCH + std::time::Duration::from_millis(v.started_ms())
                ),
                v.node(),
                crate::units::fmt_ms(rel)
            )
        };
        match w.unfenced_ms {
            Some(u) if at >= u => {
                out.after_unfence += 1;
                if out.evidence.len() < EXAMPLES {
                    out.evidence.push(describe("after the unfence", at - u));
                }
            }
            _ if at > from => {
                out.through_fence += 1;
                if out.evidence.len() < EXAMPLES {
                    out.evidence
                        .push(describe("after the fence succeeded", at - w.fenced_ms));
                }
            }
            _ => {
                if last_before.is_none_or(|(_, t)| at >= t) {
                    last_before = Some((v.seq(), at));
                }
            }
        }
    }
    out.last_before = last_before.map(|(seq, at)| {
        format!(
            "seq {seq}, written {} before the fence succeeded",
            crate::units::fmt_ms(w.fenced_ms.saturating_sub(at))
        )
    });
    if out.through_fence > 0 {
        out.verdict = Verdict::Fail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrity::{encode, Incarnation, Record};

    /// Synthetic ledger: records of two writers, one on the fenced node.
    fn ledger(records: &[(&str, u64, u64)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, (node, written_ms, started)) in records.iter().enumerate() {
            out.extend(encode(&Record {
                incarnation: Incarnation::new(
                    format!("uid-{node}-{started}"),
                    *started,
                    *node,
                    "ledger-0",
                ),
                seq: i as u64 + 1,
                written_ms: *written_ms,
                payload: vec![1, 2, 3],
            }));
        }
        out
    }

    fn window(unfenced: Option<u64>) -> FenceWindow {
        FenceWindow {
            node: "w1".into(),
            fenced_ms: 10_000,
            unfenced_ms: unfenced,
            clock_skew_ms: 0,
        }
    }

    #[test]
    fn a_fence_that_held_passes_and_names_the_last_record_before_it() {
        let l = ledger(&[
            ("w1", 9_000, 1),
            ("w1", 9_900, 1),
            ("w2", 12_000, 2),
            ("w2", 13_000, 2),
        ]);
        let e = fence_efficacy(&l[..], &window(Some(20_000)));
        assert_eq!(e.verdict, Verdict::Pass);
        assert_eq!((e.through_fence, e.after_unfence), (0, 0));
        assert_eq!(
            e.last_before.as_deref(),
            Some("seq 2, written 0.100s before the fence succeeded")
        );
    }

    #[test]
    fn a_record_of_the_fenced_node_inside_the_window_fails_it_with_the_record_as_evidence() {
        let l = ledger(&[("w1", 9_000, 1), ("w1", 10_500, 1), ("w2", 12_000, 2)]);
        let e = fence_efficacy(&l[..], &window(None));
        assert_eq!(e.verdict, Verdict::Fail);
        assert_eq!(e.through_fence, 1);
        assert!(
            e.evidence[0].starts_with("seq 2 by pod ledger-0 (uid uid-w1-1")
                && e.evidence[0].ends_with("written 0.500s after the fence succeeded"),
            "{:?}",
            e.evidence
        );
    }

    #[test]
    fn writes_after_the_unfence_are_the_hazard_not_a_breach() {
        let l = ledger(&[("w1", 9_000, 1), ("w2", 12_000, 2), ("w1", 21_000, 3)]);
        let e = fence_efficacy(&l[..], &window(Some(20_000)));
        assert_eq!(e.verdict, Verdict::Pass);
        assert_eq!((e.through_fence, e.after_unfence), (0, 1));
        assert!(e.evidence[0].ends_with("written 1.0s after the unfence"));
    }

    #[test]
    fn the_clock_skew_allowance_moves_the_fence_start() {
        let l = ledger(&[("w1", 10_200, 1)]);
        let mut w = window(None);
        w.clock_skew_ms = 500;
        assert_eq!(fence_efficacy(&l[..], &w).verdict, Verdict::Pass);
        w.clock_skew_ms = 0;
        assert_eq!(fence_efficacy(&l[..], &w).verdict, Verdict::Fail);
    }
}
