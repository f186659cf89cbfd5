//! The ledger checker: one streaming pass over the ledger, 256 bytes at a time.
//!
//! Memory is independent of the ledger's size: per writer incarnation a summary and the set of
//! sequence numbers it wrote, kept as ranges (one range for a writer that wrote in order), and
//! for every finding a count plus at most `max_examples` examples. Only the acks, which the
//! caller passes in, are held whole.
//!
//! # Verdict rules
//! - **Fail** when any of these is found:
//!   - a *lost acknowledged write*: for a writer incarnation with acks, a sequence number from
//!     its first seq (its first record in the ledger, or its lowest ack if lower) up to its
//!     highest ack that is not in the ledger as a valid record of that incarnation (ack seq 0
//!     means "nothing written yet" and is ignored);
//!   - *corruption*: a slot that fails to decode and is followed later by a valid record
//!     (garbage, or an all-zero hole between records), or a torn tail (see below) that is not
//!     allowed;
//!   - *split brain*: an incarnation writing again after another one wrote (A … B … A in file
//!     order), an incarnation that first writes after a newer one (later `started_ms`, beyond
//!     `clock_skew_ms`) has written, or a sequence number written by two incarnations — also
//!     when the newer one's record of it is gone but its ack proves it wrote it: an acknowledged
//!     seq of a newer incarnation that the ledger holds as a record of an older one (the older
//!     writer wrote over the newer one's acknowledged record; the write is lost *and* there
//!     were two writers). The other way round — an older incarnation's acknowledged seq held by
//!     a newer one — is only a lost write: a replacement that never saw the lost record
//!     continues from the one before it.
//! - The **torn tail** is everything after the last valid record: all-zero slots (unwritten,
//!   never a finding), undecodable slots and a trailing fragment shorter than a record (torn).
//!   A torn tail is allowed when the last writer in file order has no acks, or its records in
//!   the ledger reach its highest ack — i.e. the tail lies after that writer's last
//!   acknowledged record.
//!   Otherwise its torn slots count as corruption.
//! - **Unknown** (when nothing fails) when: no ack with seq ≥ 1 was given (nothing to check
//!   durability against — the ledger may be empty too); the ledger could not be read to its
//!   end; or the tracking limits were exceeded (more incarnations or more sequence fragments
//!   than `CheckOptions` allows). Lost acks found while the read failed or the limits were
//!   exceeded are reported but give Unknown, not Fail, since they may be artifacts of that.
//! - **Pass** otherwise.
//!
//! Sequence gaps and regressions inside one incarnation, and an incarnation whose first seq is
//! not one more than the highest seq before it, are evidence only; when they hide lost
//! acknowledged writes those are reported as such.

use super::record::{self, Incarnation, IncarnationKey, RecordView, RECORD_LEN};
use super::text::{lost_text, plural, range_text, split_text};
use crate::outcome::Verdict;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;

pub use super::model::*;

/// Checks a ledger against the acks, with default options. See the module docs for the rules.
pub fn check(ledger: impl Read, acks: &[Ack]) -> IntegrityReport {
    check_with(ledger, acks, &CheckOptions::default())
}

pub fn check_with(ledger: impl Read, acks: &[Ack], opts: &CheckOptions) -> IntegrityReport {
    let mut st = Scan::new(opts);
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, ledger);
    let mut buf = [0u8; RECORD_LEN];
    let mut offset = 0u64;
    loop {
        match read_full(&mut reader, &mut buf) {
            Ok(0) => break,
            Ok(n) if n < RECORD_LEN => {
                st.bytes_read += n as u64;
                st.on_partial(offset, &buf[..n]);
                break;
            }
            Ok(_) => {
                st.bytes_read += RECORD_LEN as u64;
                match record::view(&buf) {
                    Ok(v) => st.on_valid(offset, v),
                    Err(e) => st.on_invalid(offset, RECORD_LEN as u64, e.kind(), &e),
                }
                offset += RECORD_LEN as u64;
            }
            Err(e) => {
                st.read_error = Some(format!("reading the ledger at offset {offset}: {e}"));
                break;
            }
        }
    }
    st.finish(acks)
}

/// Fills `buf` unless the reader ends first; returns the bytes read.
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Acknowledged seqs of a newer incarnation (`first..=last`, `count` of them) that the ledger
/// holds as records of the older incarnation `older`.
struct Overwritten {
    /// The newer incarnation's index, when it has records in the ledger at all.
    newer: Option<usize>,
    newer_inc: Incarnation,
    older: usize,
    first: u64,
    last: u64,
    count: u64,
}

/// The sequence numbers one incarnation wrote, as disjoint inclusive ranges.
#[derive(Debug, Default)]
struct Seqs {
    ranges: BTreeMap<u64, u64>,
}

impl Seqs {
    fn contains(&self, s: u64) -> bool {
        self.ranges
            .range(..=s)
            .next_back()
            .is_some_and(|(_, &e)| s <= e)
    }

    /// `Ok(true)` added, `Ok(false)` already there, `Err(())` a new range would exceed `budget`.
    fn insert(&mut self, s: u64, budget: &mut usize) -> Result<bool, ()> {
        // The common case: one above the highest.
        if let Some(mut last) = self.ranges.last_entry() {
            let e = *last.get();
            if e.checked_add(1) == Some(s) {
                *last.get_mut() = s;
                return Ok(true);
            }
            if s > e {
                return self.new_range(s, budget);
            }
        } else {
            return self.new_range(s, budget);
        }
        let pred = self.ranges.range(..=s).next_back().map(|(&a, &e)| (a, e));
        if pred.is_some_and(|(_, e)| s <= e) {
            return Ok(false);
        }
        let joins_pred = pred.filter(|&(_, e)| e + 1 == s).map(|(a, _)| a);
        let succ_end = s.checked_add(1).and_then(|n| self.ranges.get(&n).copied());
        match (joins_pred, succ_end) {
            (Some(a), Some(se)) => {
                self.ranges.remove(&(s + 1));
                self.ranges.insert(a, se);
                *budget += 1;
            }
            (Some(a), None) => {
                self.ranges.insert(a, s);
            }
            (None, Some(se)) => {
                self.ranges.remove(&(s + 1));
                self.ranges.insert(s, se);
            }
            (None, None) => return self.new_range(s, budget),
        }
        Ok(true)
    }

    fn new_range(&mut self, s: u64, budget: &mut usize) -> Result<bool, ()> {
        if *budget == 0 {
            return Err(());
        }
        *budget -= 1;
        self.ranges.insert(s, s);
        Ok(true)
    }

    /// How many of `lo..=hi` are in the set.
    fn count_in(&self, lo: u64, hi: u64) -> u64 {
        let from = self
            .ranges
            .range(..=lo)
            .next_back()
            .map(|(&a, _)| a)
            .unwrap_or(lo);
        self.ranges
            .range(from..=hi)
            .map(|(&a, &b)| {
                let (x, y) = (a.max(lo), b.min(hi));
                if x <= y {
                    y - x + 1
                } else {
                    0
                }
            })
            .sum()
    }

    /// Calls `f(a, b)` for each maximal range `a..=b` inside `lo..=hi` that is not in the set.
    fn missing(&self, lo: u64, hi: u64, mut f: impl FnMut(u64, u64)) {
        if lo > hi {
            return;
        }
        let from = self
            .ranges
            .range(..=lo)
            .next_back()
            .map(|(&a, _)| a)
            .unwrap_or(lo);
        let mut next = lo;
        for (&a, &b) in self.ranges.range(from..) {
            if a > hi {
                break;
            }
            if b < next {
                continue;
            }
            if a > next {
                f(next, a - 1);
            }
            if b >= hi {
                return;
            }
            next = b + 1;
        }
        f(next, hi);
    }
}

#[derive(Debug)]
struct Inc {
    inc: Incarnation,
    key: IncarnationKey,
    first_seq: u64,
    last_seq: u64,
    min_seq: u64,
    max_seq: u64,
    count: u64,
    first_offset: u64,
    last_offset: u64,
    seqs: Seqs,
}

/// Undecodable slots since the last valid record: a torn tail if nothing valid follows.
#[derive(Debug, Default)]
struct Pending {
    zeros: u64,
    torn: u64,
    partial_bytes: u64,
    first_offset: Option<u64>,
    examples: Vec<CorruptRun>,
    /// Examples dropped because `examples` was full.
    dropped: bool,
}

#[derive(Debug)]
struct DupRun {
    by: usize,
    of: usize,
    first_seq: u64,
    last_seq: u64,
    first_offset: u64,
    last_offset: u64,
}

const NONE: usize = usize::MAX;

struct Scan<'o> {
    opts: &'o CheckOptions,
    bytes_read: u64,
    records_valid: u64,
    incs: Vec<Inc>,
    index: HashMap<IncarnationKey, usize>,
    /// The incarnation of the previous valid record (None after an untracked one).
    cur: Option<usize>,
    /// The two largest `max_seq` of distinct incarnations: (index, value).
    top: [(usize, u64); 2],
    ledger_max_seq: u64,
    /// The incarnation with the latest `started_ms` seen so far.
    newest: Option<usize>,
    range_budget: usize,
    range_limit_hit: bool,
    inc_limit_hit: bool,
    untracked_records: u64,
    last_writer: Option<usize>,
    pending: Pending,
    corrupt: Corruption,
    corrupt_mid_examples: usize,
    split: SplitBrain,
    split_examples: [usize; 3],
    dup_run: Option<DupRun>,
    seq: SequenceAnomalies,
    seq_examples: [usize; 3],
    read_error: Option<String>,
}

impl<'o> Scan<'o> {
    fn new(opts: &'o CheckOptions) -> Self {
        Scan {
            opts,
            bytes_read: 0,
            records_valid: 0,
            incs: Vec::new(),
            index: HashMap::new(),
            cur: None,
            top: [(NONE, 0), (NONE, 0)],
            ledger_max_seq: 0,
            newest: None,
            range_budget: opts.max_seq_ranges,
            range_limit_hit: false,
            inc_limit_hit: false,
            untracked_records: 0,
            last_writer: None,
            pending: Pending::default(),
            corrupt: Corruption::default(),
            corrupt_mid_examples: 0,
            split: SplitBrain::default(),
            split_examples: [0; 3],
            dup_run: None,
            seq: SequenceAnomalies::default(),
            seq_examples: [0; 3],
            read_error: None,
        }
    }

    fn on_invalid(
        &mut self,
        offset: u64,
        len: u64,
        kind: &'static str,
        err: &dyn std::fmt::Display,
    ) {
        let p = &mut self.pending;
        p.first_offset.get_or_insert(offset);
        if kind == "all-zero" {
            p.zeros += 1;
        } else {
            p.torn += 1;
        }
        if let Some(last) = p.examples.last_mut() {
            if last.kind == kind && last.last_offset + RECORD_LEN as u64 == offset {
                last.last_offset = offset;
                last.slots += 1;
                last.len = len;
                return;
            }
        }
        if p.examples.len() < self.opts.max_examples {
            p.examples.push(CorruptRun {
                offset,
                last_offset: offset,
                slots: 1,
                len,
                kind: kind.to_string(),
                error: err.to_string(),
                in_allowed_tail: false,
            });
        } else {
            p.dropped = true;
        }
    }

    fn on_partial(&mut self, offset: u64, bytes: &[u8]) {
        self.pending.partial_bytes = bytes.len() as u64;
        if bytes.iter().all(|&b| b == 0) {
            self.on_invalid(
                offset,
                bytes.len() as u64,
                "all-zero",
                &format_args!("all-zero fragment of {} bytes", bytes.len()),
            );
        } else {
            self.on_invalid(
                offset,
                bytes.len() as u64,
                "partial",
                &format_args!(
                    "fragment of {} bytes, shorter than a record ({RECORD_LEN})",
                    bytes.len()
                ),
            );
        }
    }

    /// Undecodable slots followed by a valid record: corruption, whatever their kind.
    fn flush_pending_as_corrupt(&mut self) {
        let p = std::mem::take(&mut self.pending);
        self.corrupt.count += p.zeros + p.torn;
        for mut ex in p.examples {
            if self.corrupt_mid_examples >= self.opts.max_examples {
                break;
            }
            if ex.kind == "all-zero" {
                ex.error = "all-zero slot before later valid records (a hole)".into();
            }
            self.corrupt.examples.push(ex);
            self.corrupt_mid_examples += 1;
        }
    }

    fn on_valid(&mut self, offset: u64, v: RecordView<'_>) {
        if self.pending.first_offset.is_some() {
            self.flush_pending_as_corrupt();
        }
        self.records_valid += 1;
        let s = v.seq();
        let idx = match self.cur {
            Some(i) if self.incs[i].key == *v.incarnation_key() => i,
            _ => match self.switch(offset, &v) {
                Some(i) => i,
                None => {
                    self.untracked_records += 1;
                    self.cur = None;
                    self.last_writer = None;
                    self.ledger_max_seq = self.ledger_max_seq.max(s);
                    return;
                }
            },
        };
        self.cur = Some(idx);
        self.last_writer = Some(idx);

        // Inside the incarnation.
        let (count, last_seq) = (self.incs[idx].count, self.incs[idx].last_seq);
        if count > 0 && s != last_seq.wrapping_add(1) {
            let me = &self.incs[idx].inc;
            if s > last_seq {
                self.seq.gaps += 1;
                if self.seq_examples[0] < self.opts.max_examples {
                    self.seq_examples[0] += 1;
                    self.seq.evidence.push(format!(
                        "offset {offset}: {me} jumped from seq {last_seq} to {s} ({} not written by it here)",
                        range_text(last_seq + 1, s - 1)
                    ));
                }
            } else {
                self.seq.regressions += 1;
                if self.seq_examples[1] < self.opts.max_examples {
                    self.seq_examples[1] += 1;
                    self.seq.evidence.push(format!(
                        "offset {offset}: {me} wrote seq {s} after seq {last_seq}"
                    ));
                }
            }
        }

        // Another incarnation wrote this seq already?
        if s <= self.others_max(idx) {
            let dup_of = (0..self.incs.len()).find(|&j| {
                let o = &self.incs[j];
                j != idx && o.count > 0 && o.min_seq <= s && s <= o.max_seq && o.seqs.contains(s)
            });
            if let Some(j) = dup_of {
                self.on_duplicate(idx, j, s, offset);
            }
        }

        let inc = &mut self.incs[idx];
        match inc.seqs.insert(s, &mut self.range_budget) {
            Ok(_) => {}
            Err(()) => self.range_limit_hit = true,
        }
        if inc.count == 0 {
            inc.first_seq = s;
            inc.first_offset = offset;
            inc.min_seq = s;
            inc.max_seq = s;
        }
        inc.count += 1;
        inc.last_seq = s;
        inc.last_offset = offset;
        inc.min_seq = inc.min_seq.min(s);
        let grew = s > inc.max_seq || inc.count == 1;
        inc.max_seq = inc.max_seq.max(s);
        if grew {
            self.bump_top(idx, s);
        }
        self.ledger_max_seq = self.ledger_max_seq.max(s);
    }

    /// The record's incarnation differs from the previous record's.
    fn switch(&mut self, offset: u64, v: &RecordView<'_>) -> Option<usize> {
        let s = v.seq();
        if let Some(&i) = self.index.get(v.incarnation_key()) {
            // A … B … A: `i` wrote before, then someone else, now `i` again.
            self.split.interleavings += 1;
            self.involve(i);
            if let Some(b) = self.cur {
                self.involve(b);
            }
            if self.split_examples[0] < self.opts.max_examples {
                self.split_examples[0] += 1;
                let a = &self.incs[i];
                let between = match self.cur {
                    Some(b) => {
                        let b = &self.incs[b];
                        format!(
                            "{} (node {}) had written (its last record: seq {} at offset {})",
                            b.inc, b.inc.node, b.last_seq, b.last_offset
                        )
                    }
                    None => "an untracked incarnation had written".to_string(),
                };
                self.split.evidence.push(format!(
                    "interleaved writers: offset {offset}: {} (node {}) wrote seq {s} after {between}; it had written before up to seq {} at offset {}",
                    a.inc, a.inc.node, a.last_seq, a.last_offset
                ));
            }
            return Some(i);
        }
        if self.incs.len() >= self.opts.max_incarnations {
            self.inc_limit_hit = true;
            return None;
        }
        let inc = v.incarnation();
        let i = self.incs.len();
        if let Some(n) = self.newest {
            let newer = &self.incs[n].inc;
            if inc.started_ms.saturating_add(self.opts.clock_skew_ms) < newer.started_ms {
                self.split.older_after_newer += 1;
                self.split.detected = true;
                if !self.split.writers.contains(&inc) {
                    self.split.writers.push(inc.clone());
                }
                self.involve(n);
                if self.split_examples[1] < self.opts.max_examples {
                    self.split_examples[1] += 1;
                    let nn = &self.incs[n];
                    self.split.evidence.push(format!(
                        "older writer after a newer one: offset {offset}: {inc} (node {}) first wrote seq {s}, after {} (node {}), which started {} ms later, had written from offset {} (seq {})",
                        inc.node,
                        nn.inc,
                        nn.inc.node,
                        nn.inc.started_ms - inc.started_ms,
                        nn.first_offset,
                        nn.first_seq
                    ));
                }
            }
        }
        let expected = self.ledger_max_seq + 1;
        if s != expected {
            self.seq.discontinuities += 1;
            if self.seq_examples[2] < self.opts.max_examples {
                self.seq_examples[2] += 1;
                let what = if s > expected {
                    format!("{} missing before it", range_text(expected, s - 1))
                } else {
                    format!(
                        "the ledger already reached seq {} before it",
                        self.ledger_max_seq
                    )
                };
                self.seq.evidence.push(format!(
                    "offset {offset}: {inc} starts at seq {s}, expected {expected}: {what}"
                ));
            }
        }
        let newest_started = self.newest.map(|n| self.incs[n].inc.started_ms);
        if newest_started.is_none_or(|t| inc.started_ms > t) {
            self.newest = Some(i);
        }
        self.index.insert(*v.incarnation_key(), i);
        self.incs.push(Inc {
            key: *v.incarnation_key(),
            inc,
            first_seq: s,
            last_seq: s,
            min_seq: s,
            max_seq: s,
            count: 0,
            first_offset: offset,
            last_offset: offset,
            seqs: Seqs::default(),
        });
        Some(i)
    }

    fn involve(&mut self, i: usize) {
        self.split.detected = true;
        if !self.split.writers.contains(&self.incs[i].inc) {
            self.split.writers.push(self.incs[i].inc.clone());
        }
    }

    fn on_duplicate(&mut self, by: usize, of: usize, s: u64, offset: u64) {
        self.split.duplicate_seqs += 1;
        if let Some(r) = &mut self.dup_run {
            if r.by == by
                && r.of == of
                && r.last_seq + 1 == s
                && r.last_offset + RECORD_LEN as u64 == offset
            {
                r.last_seq = s;
                r.last_offset = offset;
                return;
            }
        }
        self.close_dup_run();
        self.involve(by);
        self.involve(of);
        self.dup_run = Some(DupRun {
            by,
            of,
            first_seq: s,
            last_seq: s,
            first_offset: offset,
            last_offset: offset,
        });
    }

    fn close_dup_run(&mut self) {
        let Some(r) = self.dup_run.take() else { return };
        if self.split_examples[2] >= self.opts.max_examples {
            return;
        }
        self.split_examples[2] += 1;
        let (by, of) = (&self.incs[r.by], &self.incs[r.of]);
        let offsets = if r.first_offset == r.last_offset {
            format!("offset {}", r.first_offset)
        } else {
            format!("offsets {}..={}", r.first_offset, r.last_offset)
        };
        self.split.evidence.push(format!(
            "duplicate sequence numbers: {} at {offsets} by {} (node {}) were already written by {} (node {}; its records at offsets {}..={})",
            range_text(r.first_seq, r.last_seq),
            by.inc,
            by.inc.node,
            of.inc,
            of.inc.node,
            of.first_offset,
            of.last_offset
        ));
    }

    fn others_max(&self, i: usize) -> u64 {
        if self.top[0].0 == i {
            self.top[1].1
        } else {
            self.top[0].1
        }
    }

    /// `i`'s highest seq grew to `m`.
    fn bump_top(&mut self, i: usize, m: u64) {
        if self.top[0].0 == i {
            self.top[0].1 = m;
        } else if m > self.top[0].1 || self.top[0].0 == NONE {
            self.top[1] = self.top[0];
            self.top[0] = (i, m);
        } else if self.top[1].0 == i || m > self.top[1].1 || self.top[1].0 == NONE {
            self.top[1] = (i, m);
        }
    }

    /// The report of the scanned ledger against the acknowledgements: what was acknowledged and
    /// lost, the tail classified, the verdict and its reasons.
    fn finish(mut self, acks: &[Ack]) -> IntegrityReport {
        self.close_dup_run();
        let limits = self.limits();
        let tracked_all = limits.is_empty();
        let (mut ack_summary, groups) = self.ack_groups(acks);
        let (lost, max_acked, max_acked_of, overwritten) =
            self.lost_acked(&groups, tracked_all, &mut ack_summary);
        self.overwritten_acks(overwritten);
        // Writers involved in split brain, in order of first appearance.
        let index = &self.index;
        self.split
            .writers
            .sort_by_key(|w| index.get(&w.key()).copied().unwrap_or(NONE));
        let bad_tail_reason = self.classify_tail(&max_acked_of);
        let (verdict, reasons) = self.verdict(
            &lost,
            &limits,
            bad_tail_reason,
            !groups.is_empty(),
            acks.len(),
        );
        let incarnations = self
            .incs
            .iter()
            .enumerate()
            .map(|(i, c)| IncarnationSummary {
                incarnation: c.inc.clone(),
                first_seq: c.first_seq,
                last_seq: c.last_seq,
                min_seq: c.min_seq,
                max_seq: c.max_seq,
                count: c.count,
                first_offset: c.first_offset,
                last_offset: c.last_offset,
                max_acked_seq: max_acked_of.get(&i).copied(),
            })
            .collect();
        let limits_exceeded = (!limits.is_empty()).then(|| limits.join("; "));
        IntegrityReport {
            verdict,
            reasons,
            bytes_read: self.bytes_read,
            records_valid: self.records_valid,
            incarnations,
            acks: ack_summary,
            max_acked,
            lost_acked: lost,
            corrupt: self.corrupt,
            split_brain: self.split,
            sequence: self.seq,
            read_error: self.read_error,
            limits_exceeded,
        }
    }

    /// The tracking limits the scan ran into (none: it tracked everything).
    fn limits(&self) -> Vec<String> {
        let opts = self.opts;
        let mut limits = Vec::new();
        if self.inc_limit_hit {
            limits.push(format!(
                "more than {} writer incarnations ({} records of later ones not tracked)",
                opts.max_incarnations, self.untracked_records
            ));
        }
        if self.range_limit_hit {
            limits.push(format!(
                "more than {} sequence ranges (the ledger is too fragmented to track every seq)",
                opts.max_seq_ranges
            ));
        }
        limits
    }

    /// The acks per incarnation (each sorted by seq), in the order of first appearance in the
    /// ledger, then the rest; and their count (`ignored`: seq 0).
    fn ack_groups<'a>(&self, acks: &'a [Ack]) -> (AckSummary, Vec<AckGroup<'a>>) {
        let mut ack_summary = AckSummary {
            count: acks.len() as u64,
            ..Default::default()
        };
        let mut groups: Vec<AckGroup<'_>> = Vec::new();
        let mut by_key: HashMap<IncarnationKey, usize> = HashMap::new();
        for a in acks {
            if a.seq == 0 {
                ack_summary.ignored += 1;
                continue;
            }
            let key = a.incarnation.key();
            let g = *by_key.entry(key).or_insert_with(|| {
                groups.push(AckGroup {
                    key,
                    inc: &a.incarnation,
                    acks: Vec::new(),
                });
                groups.len() - 1
            });
            groups[g].acks.push(a);
        }
        for g in &mut groups {
            g.acks.sort_by_key(|a| (a.seq, a.at_ms));
        }
        groups.sort_by_key(|g| {
            (
                self.index.get(&g.key).copied().unwrap_or(NONE),
                g.inc.started_ms,
            )
        });
        (ack_summary, groups)
    }

    /// The acknowledged writes missing from the ledger, each incarnation's highest acked seq
    /// (also by tracked incarnation index); counts the acknowledged writes into `ack_summary`.
    fn lost_acked(
        &self,
        groups: &[AckGroup<'_>],
        tracked_all: bool,
        ack_summary: &mut AckSummary,
    ) -> (
        LostAcked,
        Vec<MaxAcked>,
        HashMap<usize, u64>,
        Vec<Overwritten>,
    ) {
        let opts = self.opts;
        let mut lost = LostAcked::default();
        let mut overwritten = Vec::new();
        let mut max_acked = Vec::new();
        let mut max_acked_of: HashMap<usize, u64> = HashMap::new();
        for g in groups {
            let (min_ack, max_ack) = (g.acks[0].seq, g.acks[g.acks.len() - 1].seq);
            let tracked = self.index.get(&g.key).copied();
            max_acked.push(MaxAcked {
                incarnation: g.inc.clone(),
                seq: max_ack,
                acks: g.acks.len() as u64,
                in_ledger: tracked.is_some(),
            });
            if let Some(i) = tracked {
                max_acked_of.insert(i, max_ack);
            }
            let lo = tracked.map_or(min_ack, |i| self.incs[i].min_seq.min(min_ack));
            ack_summary.acknowledged_writes += max_ack - lo + 1;
            if tracked.is_none() && !tracked_all {
                continue; // It may be one of the untracked incarnations.
            }
            let mut push = |a: u64, b: u64, note: Option<String>| {
                lost.count += b - a + 1;
                lost.ranges_total += 1;
                if lost.ranges.len() < opts.max_lost_ranges {
                    let at = g.acks.partition_point(|x| x.seq < a);
                    let ack = g.acks[at.min(g.acks.len() - 1)];
                    lost.ranges.push(LostRange {
                        incarnation: g.inc.clone(),
                        first: a,
                        last: b,
                        acked_seq: ack.seq,
                        acked_at_ms: ack.at_ms,
                        acked_wall: ack.wall.clone(),
                        note,
                    });
                }
            };
            let incs = &self.incs;
            let elsewhere = |me: Option<usize>, a: u64, b: u64| {
                let n: u64 = (0..incs.len())
                    .filter(|&j| Some(j) != me)
                    .map(|j| incs[j].seqs.count_in(a, b))
                    .sum();
                (n > 0).then(|| {
                    format!(
                        "{} of these seqs are in the ledger as records of other incarnations",
                        n.min(b - a + 1)
                    )
                })
            };
            let mut missing = Vec::new();
            match tracked {
                Some(i) => self.incs[i].seqs.missing(lo, max_ack, |a, b| {
                    push(a, b, elsewhere(Some(i), a, b));
                    missing.push((a, b));
                }),
                None => {
                    push(
                        lo,
                        max_ack,
                        Some(
                            "no record of this incarnation is in the ledger; its first seq is unknown, counted from its lowest ack"
                                .into(),
                        ),
                    );
                    missing.push((lo, max_ack));
                }
            }
            // Those held by an older incarnation's records: it wrote over them.
            for (a, b) in missing {
                for (j, older) in incs.iter().enumerate() {
                    if Some(j) == tracked
                        || older.inc.started_ms.saturating_add(opts.clock_skew_ms)
                            >= g.inc.started_ms
                    {
                        continue;
                    }
                    let count = older.seqs.count_in(a, b);
                    if count > 0 {
                        overwritten.push(Overwritten {
                            newer: tracked,
                            newer_inc: g.inc.clone(),
                            older: j,
                            first: a,
                            last: b,
                            count,
                        });
                    }
                }
            }
        }
        (lost, max_acked, max_acked_of, overwritten)
    }

    /// Split brain from acknowledged writes of a newer incarnation that an older one's records
    /// hold ([`Scan::lost_acked`]).
    fn overwritten_acks(&mut self, overwritten: Vec<Overwritten>) {
        let mut examples = 0;
        for o in overwritten {
            self.split.acked_overwritten += o.count;
            self.involve(o.older);
            match o.newer {
                Some(i) => self.involve(i),
                None if !self.split.writers.contains(&o.newer_inc) => {
                    self.split.writers.push(o.newer_inc.clone())
                }
                None => {}
            }
            if examples < self.opts.max_examples {
                examples += 1;
                let older = &self.incs[o.older].inc;
                let which = if o.count == o.last - o.first + 1 {
                    format!("the acknowledged {}", range_text(o.first, o.last))
                } else {
                    format!(
                        "{} of the acknowledged {}",
                        o.count,
                        range_text(o.first, o.last)
                    )
                };
                self.split.evidence.push(format!(
                    "acknowledged writes overwritten by an older writer: {which} of {} (node {}) {} in the ledger as records of {} (node {}), which started {} ms earlier: it wrote after the newer one had",
                    o.newer_inc,
                    o.newer_inc.node,
                    if o.count == 1 { "is" } else { "are" },
                    older,
                    older.node,
                    o.newer_inc.started_ms - older.started_ms
                ));
            }
        }
    }

    /// Everything after the last valid record: a torn tail is allowed unless the last writer
    /// acknowledged more than the ledger holds of it (then its torn records count as corrupt,
    /// and the reason is returned).
    fn classify_tail(&mut self, max_acked_of: &HashMap<usize, u64>) -> Option<String> {
        let p = std::mem::take(&mut self.pending);
        self.corrupt.partial_tail_bytes = p.partial_bytes;
        self.corrupt.tail_offset = p.first_offset;
        let mut bad_tail_reason = None;
        if self.read_error.is_some() {
            self.corrupt.unclassified = p.zeros + p.torn;
            return None;
        }
        let allowed = match self.last_writer {
            None => true,
            Some(l) => match max_acked_of.get(&l) {
                None => true,
                Some(&a) => {
                    if self.incs[l].max_seq >= a {
                        true
                    } else {
                        bad_tail_reason = Some(format!(
                            "the last writer {} acknowledged seq {a} but its last record in the ledger is seq {}",
                            self.incs[l].inc, self.incs[l].max_seq
                        ));
                        false
                    }
                }
            },
        };
        self.corrupt.unwritten_tail = p.zeros;
        if allowed {
            self.corrupt.allowed_tail = p.torn;
        } else {
            self.corrupt.count += p.torn;
            self.corrupt.in_bad_tail = p.torn;
        }
        for mut ex in p.examples {
            ex.in_allowed_tail = allowed || ex.kind == "all-zero";
            self.corrupt.examples.push(ex);
        }
        bad_tail_reason
    }

    /// The verdict and its reasons (what failed first, then what left it unknown).
    fn verdict(
        &self,
        lost: &LostAcked,
        limits: &[String],
        bad_tail_reason: Option<String>,
        any_acked: bool,
        acks_given: usize,
    ) -> (Verdict, Vec<String>) {
        let mut fail = Vec::new();
        let mut unknown = Vec::new();
        if lost.count > 0 {
            let text = lost_text(lost);
            if self.read_error.is_none() && limits.is_empty() {
                fail.push(text);
            } else {
                unknown.push(format!(
                    "{text} — possibly an artifact of the unread or untracked part of the ledger"
                ));
            }
        }
        let mid = self.corrupt.count - self.corrupt.in_bad_tail;
        if mid > 0 {
            let first = self
                .corrupt
                .examples
                .iter()
                .find(|e| !e.in_allowed_tail)
                .map(|e| format!(" (first at offset {}: {})", e.offset, e.error))
                .unwrap_or_default();
            fail.push(format!(
                "{mid} corrupt record{} before later valid records{first}",
                plural(mid)
            ));
        }
        if self.corrupt.in_bad_tail > 0 {
            fail.push(format!(
                "{} torn record{} at the end (offset {}) where acknowledged records should be: {}",
                self.corrupt.in_bad_tail,
                plural(self.corrupt.in_bad_tail),
                self.corrupt.tail_offset.unwrap_or(0),
                bad_tail_reason.unwrap_or_default()
            ));
        }
        if self.split.detected {
            fail.push(split_text(&self.split));
        }
        if let Some(e) = &self.read_error {
            unknown.push(format!("could not read the whole ledger: {e}"));
        }
        if !limits.is_empty() {
            unknown.push(format!("tracking limits exceeded: {}", limits.join("; ")));
        }
        if !any_acked {
            unknown.push(if self.bytes_read == 0 {
                "the ledger is empty and no write was acknowledged: nothing to check".to_string()
            } else {
                format!(
                    "no write was acknowledged (no ack with seq ≥ 1 among {acks_given} given): cannot tell whether acknowledged writes survived"
                )
            });
        }
        let verdict = if !fail.is_empty() {
            Verdict::Fail
        } else if !unknown.is_empty() {
            Verdict::Unknown
        } else {
            Verdict::Pass
        };
        fail.extend(unknown);
        (verdict, fail)
    }
}

struct AckGroup<'a> {
    key: IncarnationKey,
    inc: &'a Incarnation,
    acks: Vec<&'a Ack>,
}

#[cfg(test)]
mod seqs_tests {
    use super::Seqs;

    fn missing(s: &Seqs, lo: u64, hi: u64) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        s.missing(lo, hi, |a, b| v.push((a, b)));
        v
    }

    #[test]
    fn ranges_merge_and_report_holes() {
        let mut budget = 100;
        let mut s = Seqs::default();
        for x in [5, 6, 7, 10, 9, 1, 3, 2] {
            assert_eq!(s.insert(x, &mut budget), Ok(true), "{x}");
        }
        assert_eq!(s.insert(6, &mut budget), Ok(false));
        assert_eq!(
            s.ranges.iter().map(|(&a, &b)| (a, b)).collect::<Vec<_>>(),
            vec![(1, 3), (5, 7), (9, 10)]
        );
        assert_eq!(s.insert(8, &mut budget), Ok(true));
        assert_eq!(
            s.ranges.iter().map(|(&a, &b)| (a, b)).collect::<Vec<_>>(),
            vec![(1, 3), (5, 10)]
        );
        assert_eq!(budget, 98);
        assert!(s.contains(1) && s.contains(10) && !s.contains(4) && !s.contains(11));
        assert_eq!(missing(&s, 1, 10), vec![(4, 4)]);
        assert_eq!(missing(&s, 0, 12), vec![(0, 0), (4, 4), (11, 12)]);
        assert_eq!(missing(&s, 6, 9), vec![]);
        assert_eq!(missing(&s, 11, 11), vec![(11, 11)]);
        assert_eq!(missing(&Seqs::default(), 3, 5), vec![(3, 5)]);
        let mut zero = 0;
        let mut t = Seqs::default();
        assert_eq!(t.insert(1, &mut zero), Err(()));
    }
}
