//! The checker's findings in words (pure): the one-line summary of a report and the phrases the
//! verdict's evidence is made of.

use super::model::{IntegrityReport, LostAcked, SplitBrain};
use crate::outcome::Verdict;

pub(super) fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `seq 7` or `seqs 7..=9`.
pub(super) fn range_text(a: u64, b: u64) -> String {
    if a == b {
        format!("seq {a}")
    } else {
        format!("seqs {a}..={b}")
    }
}

pub(super) fn lost_text(lost: &LostAcked) -> String {
    let mut parts: Vec<String> = lost
        .ranges
        .iter()
        .take(3)
        .map(|r| format!("{} of {}", range_text(r.first, r.last), r.incarnation))
        .collect();
    if lost.ranges_total > 3 {
        parts.push(format!("{} more ranges", lost.ranges_total - 3));
    }
    format!(
        "{} acknowledged write{} lost: {}",
        lost.count,
        plural(lost.count),
        parts.join(", ")
    )
}

pub(super) fn split_text(sb: &SplitBrain) -> String {
    let writers: Vec<String> = sb
        .writers
        .iter()
        .map(|w| format!("{}@{}", w.pod, w.node))
        .collect();
    let mut what = Vec::new();
    if sb.interleavings > 0 {
        what.push(format!(
            "{} interleaving{}",
            sb.interleavings,
            plural(sb.interleavings)
        ));
    }
    if sb.older_after_newer > 0 {
        what.push(format!(
            "{} older writer{} after a newer one",
            sb.older_after_newer,
            plural(sb.older_after_newer)
        ));
    }
    if sb.duplicate_seqs > 0 {
        what.push(format!(
            "{} duplicate sequence number{}",
            sb.duplicate_seqs,
            plural(sb.duplicate_seqs)
        ));
    }
    if sb.acked_overwritten > 0 {
        what.push(format!(
            "{} acknowledged write{} of a newer writer overwritten by an older one",
            sb.acked_overwritten,
            plural(sb.acked_overwritten)
        ));
    }
    format!(
        "split brain: {} writers wrote concurrently ({}) — {}",
        sb.writers.len(),
        what.join(", "),
        writers.join(", ")
    )
}

impl IntegrityReport {
    /// Distinct writers (incarnations) in the ledger.
    pub fn writers(&self) -> usize {
        self.incarnations.len()
    }

    /// One line for humans, e.g. `pass: 1843 records by 2 writers in order, every one of 1840
    /// acknowledged writes present`.
    pub fn summary(&self) -> String {
        let records = format!(
            "{} record{} by {} writer{}",
            self.records_valid,
            plural(self.records_valid),
            self.writers(),
            plural(self.writers() as u64)
        );
        match self.verdict {
            Verdict::Pass => {
                let mut s = format!(
                    "pass: {records} in order, every one of {} acknowledged write{} present",
                    self.acks.acknowledged_writes,
                    plural(self.acks.acknowledged_writes)
                );
                let torn = self.corrupt.allowed_tail;
                if torn > 0 {
                    s.push_str(&format!(
                        "; torn tail of {torn} record{} after the last acknowledged write (allowed)",
                        plural(torn)
                    ));
                }
                s
            }
            Verdict::Fail => format!("fail: {}", self.reasons.join("; ")),
            Verdict::Unknown => format!("unknown: {} ({records})", self.reasons.join("; ")),
        }
    }

    /// Several lines: the summary, then every finding with its evidence.
    pub fn evidence(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(o, "{}", self.summary());
        let _ = writeln!(
            o,
            "ledger: {} bytes, {} valid records, {} writer{}; {} ack{} ({} ignored with seq 0) covering {} writes",
            self.bytes_read,
            self.records_valid,
            self.writers(),
            plural(self.writers() as u64),
            self.acks.count,
            plural(self.acks.count),
            self.acks.ignored,
            self.acks.acknowledged_writes
        );
        for (n, w) in self.incarnations.iter().enumerate() {
            let acked = w
                .max_acked_seq
                .map_or("no acks".to_string(), |a| format!("acked up to seq {a}"));
            let _ = writeln!(
                o,
                "  writer {}: {}: {} records, seqs {}..={} (first {}, last {}), offsets {}..={}, {acked}",
                n + 1,
                w.incarnation,
                w.count,
                w.min_seq,
                w.max_seq,
                w.first_seq,
                w.last_seq,
                w.first_offset,
                w.last_offset
            );
        }
        for m in self.max_acked.iter().filter(|m| !m.in_ledger) {
            let _ = writeln!(
                o,
                "  acked but absent from the ledger: {} up to seq {} ({} acks)",
                m.incarnation, m.seq, m.acks
            );
        }
        if self.lost_acked.count > 0 {
            let _ = writeln!(
                o,
                "lost acknowledged writes: {} in {} range{}",
                self.lost_acked.count,
                self.lost_acked.ranges_total,
                plural(self.lost_acked.ranges_total)
            );
            for r in &self.lost_acked.ranges {
                let _ = writeln!(
                    o,
                    "  {} of {} (node {}), acknowledged by seq {} at {}{}",
                    range_text(r.first, r.last),
                    r.incarnation,
                    r.incarnation.node,
                    r.acked_seq,
                    r.acked_wall,
                    r.note
                        .as_deref()
                        .map(|n| format!("; {n}"))
                        .unwrap_or_default()
                );
            }
        }
        let c = &self.corrupt;
        if !c.examples.is_empty() || c.count > 0 {
            let _ = writeln!(
                o,
                "corrupt or torn slots: {} failing ({} in a tail that is not allowed), {} torn in the allowed tail, {} unwritten at the end, {} trailing bytes{}",
                c.count,
                c.in_bad_tail,
                c.allowed_tail,
                c.unwritten_tail,
                c.partial_tail_bytes,
                if c.unclassified > 0 {
                    format!(", {} unclassified before a read error", c.unclassified)
                } else {
                    String::new()
                }
            );
            for e in &c.examples {
                let at = if e.slots == 1 {
                    format!("offset {}", e.offset)
                } else {
                    format!(
                        "offsets {}..={} ({} slots)",
                        e.offset, e.last_offset, e.slots
                    )
                };
                let _ = writeln!(
                    o,
                    "  {at}: {}{}",
                    e.error,
                    if e.in_allowed_tail {
                        " [allowed tail]"
                    } else {
                        ""
                    }
                );
            }
        }
        if self.split_brain.detected {
            let _ = writeln!(o, "{}", split_text(&self.split_brain));
            for e in &self.split_brain.evidence {
                let _ = writeln!(o, "  {e}");
            }
        }
        let s = &self.sequence;
        if s.gaps + s.regressions + s.discontinuities > 0 {
            let _ = writeln!(
                o,
                "sequence anomalies: {} gap{}, {} regression{} inside writers; {} writer{} not continuing the ledger's highest seq",
                s.gaps,
                plural(s.gaps),
                s.regressions,
                plural(s.regressions),
                s.discontinuities,
                plural(s.discontinuities)
            );
            for e in &s.evidence {
                let _ = writeln!(o, "  {e}");
            }
        }
        if let Some(e) = &self.read_error {
            let _ = writeln!(o, "read error: {e}");
        }
        if let Some(l) = &self.limits_exceeded {
            let _ = writeln!(o, "limits exceeded: {l}");
        }
        o
    }
}
