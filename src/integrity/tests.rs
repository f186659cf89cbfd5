//! Checker tests: crafted ledgers, seeded property loops, and a streaming run.

use super::check::{check, check_with, read_acks, Ack, CheckOptions, IntegrityReport};
use super::record::{encode, Incarnation, Record, RECORD_LEN};
use crate::outcome::Verdict;
use std::io::Read;

const T0: u64 = 1_777_636_800_000; // 2026-05-01T12:00:00Z

fn inc(pod: &str, uid: &str, started_ms: u64, node: &str) -> Incarnation {
    Incarnation::new(uid, started_ms, node, pod)
}

fn a() -> Incarnation {
    inc(
        "ledger-0",
        "aaaaaaaa-0000-4000-8000-000000000001",
        T0,
        "node-a",
    )
}

fn b() -> Incarnation {
    inc(
        "ledger-0",
        "bbbbbbbb-0000-4000-8000-000000000002",
        T0 + 60_000,
        "node-b",
    )
}

fn rec(who: &Incarnation, seq: u64) -> [u8; RECORD_LEN] {
    encode(&Record {
        incarnation: who.clone(),
        seq,
        written_ms: who.started_ms + seq * 50,
        payload: seq.to_le_bytes().repeat(4),
    })
}

/// Appends records of `who` with seqs `seqs`.
fn write(ledger: &mut Vec<u8>, who: &Incarnation, seqs: impl IntoIterator<Item = u64>) {
    for s in seqs {
        ledger.extend_from_slice(&rec(who, s));
    }
}

fn ack(who: &Incarnation, seq: u64) -> Ack {
    let at_ms = who.started_ms + seq * 50 + 10;
    Ack {
        at_ms,
        wall: super::record::rfc3339_ms(at_ms),
        pod: who.pod.clone(),
        incarnation: who.clone(),
        seq,
    }
}

fn acks(who: &Incarnation, seqs: impl IntoIterator<Item = u64>) -> Vec<Ack> {
    seqs.into_iter().map(|s| ack(who, s)).collect()
}

fn run(ledger: &[u8], acks: &[Ack]) -> IntegrityReport {
    let r = check(ledger, acks);
    // Every report survives a JSON round trip.
    let j = serde_json::to_string(&r).unwrap();
    let back: IntegrityReport = serde_json::from_str(&j).unwrap();
    assert_eq!(back, r);
    r
}

#[test]
fn clean_single_writer_passes() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=100);
    let r = run(&l, &acks(&a(), (10..=100).step_by(10)));
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.evidence());
    assert_eq!(r.records_valid, 100);
    assert_eq!(r.incarnations.len(), 1);
    let w = &r.incarnations[0];
    assert_eq!((w.first_seq, w.last_seq, w.count), (1, 100, 100));
    assert_eq!((w.first_offset, w.last_offset), (0, 99 * 256));
    assert_eq!(w.max_acked_seq, Some(100));
    assert_eq!(r.acks.acknowledged_writes, 100);
    assert_eq!(
        r.summary(),
        "pass: 100 records by 1 writer in order, every one of 100 acknowledged writes present"
    );
    assert!(r.reasons.is_empty());
    assert_eq!(r.sequence.evidence, Vec::<String>::new());
}

#[test]
fn failover_to_a_second_writer_that_continues_passes() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=40);
    write(&mut l, &b(), 41..=80);
    let mut k = acks(&a(), [5, 17, 38]);
    k.extend(acks(&b(), [41, 60, 77]));
    let r = run(&l, &k);
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.evidence());
    assert_eq!(r.incarnations.len(), 2);
    assert_eq!(r.incarnations[1].first_seq, 41);
    assert_eq!(r.incarnations[1].first_offset, 40 * 256);
    // a: 1..=38, b: 41..=77
    assert_eq!(r.acks.acknowledged_writes, 38 + 37);
    assert_eq!(
        r.summary(),
        "pass: 80 records by 2 writers in order, every one of 75 acknowledged writes present"
    );
    assert!(!r.split_brain.detected);
    assert_eq!(r.sequence.discontinuities, 0);
}

#[test]
fn torn_last_record_after_a_crash_passes() {
    for torn in [
        rec(&a(), 41)[..100].to_vec(), // a short fragment
        {
            let mut t = rec(&a(), 41).to_vec(); // full length, second half never made it
            t[128..].fill(0);
            t
        },
        {
            let mut t = rec(&a(), 41).to_vec(); // full length, garbage
            t[7] ^= 0x5a;
            t[200] ^= 0xff;
            t
        },
    ] {
        let mut l = Vec::new();
        write(&mut l, &a(), 1..=40);
        l.extend_from_slice(&torn);
        l.extend_from_slice(&[0; 256]); // an unwritten slot after it
        let r = run(&l, &acks(&a(), [20, 40]));
        assert_eq!(r.verdict, Verdict::Pass, "{}", r.evidence());
        assert_eq!(r.corrupt.allowed_tail, 1);
        assert_eq!(r.corrupt.count, 0);
        assert_eq!(r.corrupt.tail_offset, Some(40 * 256));
        assert!(r.corrupt.examples.iter().all(|e| e.in_allowed_tail));
        assert!(
            r.summary().contains("torn tail of 1 record"),
            "{}",
            r.summary()
        );
    }
    // Partial fragment: counted in bytes.
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=3);
    l.extend_from_slice(&rec(&a(), 4)[..77]);
    let r = run(&l, &acks(&a(), [3]));
    assert_eq!(r.verdict, Verdict::Pass);
    assert_eq!(r.corrupt.partial_tail_bytes, 77);
    assert_eq!(r.bytes_read, 3 * 256 + 77);
}

#[test]
fn corrupt_record_in_the_middle_fails_naming_the_offset() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=40);
    l[19 * 256 + 150] ^= 0x01; // seq 20
    let r = run(&l, &acks(&a(), [10]));
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.corrupt.count, 1);
    let e = &r.corrupt.examples[0];
    assert_eq!((e.offset, e.kind.as_str()), (19 * 256, "checksum-mismatch"));
    assert!(!e.in_allowed_tail);
    assert!(
        r.summary()
            .contains("1 corrupt record before later valid records (first at offset 4864"),
        "{}",
        r.summary()
    );
    // Seq 20 was not acknowledged: no lost write, but a gap in the writer's sequence.
    assert_eq!(r.lost_acked.count, 0);
    assert_eq!(r.sequence.gaps, 1);
    // Once acknowledged, it is also a lost write.
    let r = run(&l, &acks(&a(), [30]));
    assert_eq!(r.lost_acked.count, 1);
    assert_eq!(
        (r.lost_acked.ranges[0].first, r.lost_acked.ranges[0].last),
        (20, 20)
    );
}

#[test]
fn a_hole_of_zeros_between_records_is_corruption() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=10);
    l[5 * 256..6 * 256].fill(0);
    let r = run(&l, &acks(&a(), [3]));
    assert_eq!(r.verdict, Verdict::Fail, "{}", r.evidence());
    assert_eq!(r.corrupt.count, 1);
    assert_eq!(r.corrupt.examples[0].kind, "all-zero");
    assert!(r.corrupt.examples[0].error.contains("hole"));
}

#[test]
fn lost_acknowledged_writes_fail_naming_the_seqs() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=40);
    let r = run(&l, &acks(&a(), [10, 20, 35, 50]));
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.lost_acked.count, 10);
    let lr = &r.lost_acked.ranges[0];
    assert_eq!((lr.first, lr.last, lr.acked_seq), (41, 50, 50));
    assert_eq!(lr.incarnation, a());
    assert_eq!(lr.acked_wall, ack(&a(), 50).wall);
    assert!(
        r.summary().starts_with(
            "fail: 10 acknowledged writes lost: seqs 41..=50 of ledger-0/aaaaaaaa…@node-a"
        ),
        "{}",
        r.summary()
    );
    assert!(r.evidence().contains("seqs 41..=50 of"), "{}", r.evidence());
}

#[test]
fn a_torn_tail_where_acknowledged_records_should_be_is_not_allowed() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=40);
    l.extend_from_slice(&rec(&a(), 41)[..200]);
    let r = run(&l, &acks(&a(), [41]));
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.lost_acked.count, 1);
    assert_eq!((r.corrupt.count, r.corrupt.in_bad_tail), (1, 1));
    assert!(r.reasons.iter().any(|x| x.contains("acknowledged seq 41")));
}

#[test]
fn an_incarnation_absent_from_the_ledger_lost_its_acks() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=40);
    let mut k = acks(&a(), [40]);
    k.extend(acks(&b(), [43, 45]));
    let r = run(&l, &k);
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.lost_acked.count, 3);
    assert!(r.lost_acked.ranges[0].note.is_some());
    assert!(r
        .max_acked
        .iter()
        .any(|m| m.incarnation == b() && !m.in_ledger));
}

#[test]
fn interleaved_writers_are_split_brain_naming_both_nodes() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=10);
    write(&mut l, &b(), 11..=20);
    write(&mut l, &a(), 21..=30);
    let r = run(&l, &acks(&a(), [30]));
    assert_eq!(r.verdict, Verdict::Fail);
    assert!(r.split_brain.detected);
    assert_eq!(r.split_brain.interleavings, 1);
    assert_eq!(r.split_brain.writers.len(), 2);
    let ev = &r.split_brain.evidence[0];
    assert!(ev.contains("offset 5120"), "{ev}");
    assert!(
        ev.contains("node node-a") && ev.contains("node node-b"),
        "{ev}"
    );
    let s = r.summary();
    assert!(
        s.contains("ledger-0@node-a") && s.contains("ledger-0@node-b"),
        "{s}"
    );
    // a acked 30 and has no 11..=20: counted lost, with a note that b wrote them.
    assert_eq!(r.lost_acked.count, 10);
    let note = r.lost_acked.ranges[0].note.as_deref().unwrap();
    assert_eq!(
        note,
        "10 of these seqs are in the ledger as records of other incarnations"
    );
}

#[test]
fn duplicate_seqs_across_incarnations_are_split_brain() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=20);
    write(&mut l, &b(), 15..=30);
    let mut k = acks(&a(), [20]);
    k.extend(acks(&b(), [30]));
    let r = run(&l, &k);
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.split_brain.duplicate_seqs, 6);
    assert_eq!(r.split_brain.interleavings, 0);
    let ev = r
        .split_brain
        .evidence
        .iter()
        .find(|e| e.starts_with("duplicate"))
        .unwrap();
    assert!(ev.contains("seqs 15..=20 at offsets 5120..=6400"), "{ev}");
    assert!(
        ev.contains("node node-b") && ev.contains("node node-a"),
        "{ev}"
    );
    assert_eq!(r.sequence.discontinuities, 1);
    assert_eq!(r.lost_acked.count, 0);
}

#[test]
fn an_older_writer_after_a_newer_one_is_split_brain() {
    let mut l = Vec::new();
    write(&mut l, &b(), 1..=10); // started T0+60s
    write(&mut l, &a(), 11..=20); // started T0, first writes after b
    let mut k = acks(&b(), [10]);
    k.extend(acks(&a(), [20]));
    let r = run(&l, &k);
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.split_brain.older_after_newer, 1);
    assert!(r.split_brain.evidence[0].contains("60000 ms later"));
    // Within the clock-skew tolerance, it is not.
    let r = check_with(
        &l[..],
        &k,
        &CheckOptions {
            clock_skew_ms: 60_000,
            ..Default::default()
        },
    );
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.evidence());
}

#[test]
fn a_container_restart_in_the_same_pod_is_a_new_incarnation() {
    let first = a();
    let again = Incarnation {
        started_ms: first.started_ms + 5_000,
        ..first.clone()
    };
    let mut l = Vec::new();
    write(&mut l, &first, 1..=10);
    write(&mut l, &again, 11..=20);
    let mut k = acks(&first, [10]);
    k.extend(acks(&again, [20]));
    let r = run(&l, &k);
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.evidence());
    assert_eq!(r.incarnations.len(), 2);
}

#[test]
fn no_acks_is_unknown_and_says_why() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=10);
    let r = run(&l, &[]);
    assert_eq!(r.verdict, Verdict::Unknown);
    assert!(
        r.summary()
            .starts_with("unknown: no write was acknowledged"),
        "{}",
        r.summary()
    );
    let r = run(&[], &[]);
    assert_eq!(r.verdict, Verdict::Unknown);
    assert!(
        r.summary().contains("the ledger is empty"),
        "{}",
        r.summary()
    );
    // Acks of seq 0 ("nothing durable yet") do not count.
    let r = run(&l, &acks(&a(), [0]));
    assert_eq!(r.verdict, Verdict::Unknown);
    assert_eq!(r.acks.ignored, 1);
    // An empty ledger with acks has lost them.
    assert_eq!(run(&[], &acks(&a(), [1])).verdict, Verdict::Fail);
    // Split brain fails even without acks.
    let mut l2 = Vec::new();
    write(&mut l2, &a(), 1..=2);
    write(&mut l2, &b(), 3..=4);
    write(&mut l2, &a(), 5..=6);
    assert_eq!(run(&l2, &[]).verdict, Verdict::Fail);
}

#[test]
fn a_read_error_makes_it_unknown() {
    struct Failing(Vec<u8>, usize);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.1 >= self.0.len() {
                return Err(std::io::Error::other("disk on fire"));
            }
            let n = buf.len().min(self.0.len() - self.1).min(100);
            buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
            self.1 += n;
            Ok(n)
        }
    }
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=10);
    let r = check(Failing(l, 0), &acks(&a(), [12]));
    assert_eq!(r.verdict, Verdict::Unknown, "{}", r.evidence());
    assert!(r.read_error.as_deref().unwrap().contains("disk on fire"));
    assert_eq!(r.records_valid, 10);
    assert_eq!(r.lost_acked.count, 2);
}

#[test]
fn tracking_limits_make_it_unknown() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=10);
    write(&mut l, &b(), 11..=20);
    let mut k = acks(&a(), [10]);
    k.extend(acks(&b(), [20]));
    let opts = CheckOptions {
        max_incarnations: 1,
        ..Default::default()
    };
    let r = check_with(&l[..], &k, &opts);
    assert_eq!(r.verdict, Verdict::Unknown, "{}", r.evidence());
    assert!(r.limits_exceeded.unwrap().contains("10 records"));
    let opts = CheckOptions {
        max_seq_ranges: 1,
        ..Default::default()
    };
    let mut l = Vec::new();
    write(&mut l, &a(), [1, 2, 5, 6]);
    let r = check_with(&l[..], &acks(&a(), [6]), &opts);
    assert_eq!(r.verdict, Verdict::Unknown, "{}", r.evidence());
}

#[test]
fn evidence_lists_every_finding() {
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=10);
    l[3 * 256] = b'X';
    write(&mut l, &b(), 11..=12);
    write(&mut l, &a(), 13..=14);
    let e = run(&l, &acks(&a(), [14])).evidence();
    for want in [
        "fail: ",
        "writer 1: ledger-0/aaaaaaaa…@node-a",
        "writer 2: ledger-0/bbbbbbbb…@node-b",
        "lost acknowledged writes: 3 in 2 ranges",
        "offset 768: bad magic",
        "split brain: 2 writers",
        "interleaved writers: offset 3072",
        "sequence anomalies",
    ] {
        assert!(e.contains(want), "missing {want:?} in\n{e}");
    }
}

#[test]
fn acks_are_read_from_jsonl() {
    let k = acks(&a(), [1, 2]);
    let text = format!(
        "{}\n\n{}\n",
        serde_json::to_string(&k[0]).unwrap(),
        serde_json::to_string(&k[1]).unwrap()
    );
    assert!(text.contains("\"atMs\"") && text.contains("\"podUid\""));
    assert_eq!(read_acks(text.as_bytes()).unwrap(), k);
    let err = read_acks(format!("{text}{{oops\n").as_bytes()).unwrap_err();
    assert!(err.to_string().starts_with("acks line 4:"), "{err}");
    // The JSON-lines rule: a torn last line (no newline: the writer died mid-line) is ignored,
    // a bad line in the middle is an error.
    assert_eq!(
        read_acks(format!("{text}{{\"atMs\":1").as_bytes()).unwrap(),
        k
    );
    let err = read_acks(format!("{{oops\n{text}").as_bytes()).unwrap_err();
    assert!(err.to_string().starts_with("acks line 1:"), "{err}");
}

/// A small seeded generator (splitmix64): the property loops below are reproducible by seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
}

/// What a crash leaves after the last complete record.
fn crash_debris(rng: &mut Rng, next: &[u8; RECORD_LEN]) -> Vec<u8> {
    match rng.below(5) {
        0 => Vec::new(),
        1 => next[..1 + rng.below(255) as usize].to_vec(), // a prefix made it
        2 => {
            // full length, only a prefix of the data made it
            let mut t = next.to_vec();
            t[1 + rng.below(250) as usize..].fill(0);
            t
        }
        3 => {
            // full length, garbled from some point on
            let mut t = next.to_vec();
            for x in &mut t[rng.below(250) as usize..] {
                *x = rng.next() as u8;
            }
            t[RECORD_LEN - 1] ^= 1; // make sure it differs
            t
        }
        _ => vec![0; (1 + rng.below(3) as usize) * RECORD_LEN], // preallocated, never written
    }
}

/// What the harness saw: some polls of the writer's last durable seq, all ≤ `durable_to`.
fn polled_acks(rng: &mut Rng, who: &Incarnation, first: u64, durable_to: u64) -> Vec<Ack> {
    let mut out = Vec::new();
    if durable_to < first {
        if rng.chance(30) {
            out.push(ack(who, 0)); // polled before its first write
        }
        return out;
    }
    let mut seq = first - 1;
    while seq < durable_to {
        seq += 1 + rng.below(8);
        if seq > durable_to {
            if rng.chance(50) {
                out.push(ack(who, durable_to));
            }
            break;
        }
        if rng.chance(70) {
            out.push(ack(who, seq));
        }
    }
    out
}

/// The writer's recovery: cut everything after the last valid record.
fn truncate_torn_tail(l: &mut Vec<u8>) {
    let mut end = 0;
    for (i, slot) in l.chunks(RECORD_LEN).enumerate() {
        if let Ok(s) = <&[u8; RECORD_LEN]>::try_from(slot) {
            if super::record::view(s).is_ok() {
                end = (i + 1) * RECORD_LEN;
            }
        }
    }
    l.truncate(end);
}

#[test]
fn property_crashes_and_failovers_never_look_like_loss_or_split_brain() {
    for seed in 0..600u64 {
        let mut rng = Rng(seed);
        let mut l = Vec::new();
        let mut all_acks = Vec::new();
        let mut next_seq = 1;
        let writers = 1 + rng.below(3);
        for w in 0..writers {
            let who = inc(
                "ledger-0",
                &format!("{w:08x}-1111-4000-8000-{seed:012x}"),
                T0 + w * 70_000 + rng.below(1000),
                &format!("node-{}", rng.below(4)),
            );
            truncate_torn_tail(&mut l);
            let first = next_seq;
            let n = rng.below(120);
            for _ in 0..n {
                l.extend_from_slice(&rec(&who, next_seq));
                next_seq += 1;
            }
            all_acks.extend(polled_acks(&mut rng, &who, first, next_seq - 1));
            // The crash, mid-record or between records.
            l.extend(crash_debris(&mut rng, &rec(&who, next_seq)));
        }
        let r = check(&l[..], &all_acks);
        let ctx = || format!("seed {seed}:\n{}", r.evidence());
        assert_eq!(r.lost_acked.count, 0, "{}", ctx());
        assert!(!r.split_brain.detected, "{}", ctx());
        assert_eq!(r.corrupt.count, 0, "{}", ctx());
        let any_ack = all_acks.iter().any(|a| a.seq > 0);
        let want = if any_ack {
            Verdict::Pass
        } else {
            Verdict::Unknown
        };
        assert_eq!(r.verdict, want, "{}", ctx());
        assert_eq!(r.records_valid, next_seq - 1, "{}", ctx());
    }
}

#[test]
fn property_any_interleaving_of_two_writers_is_split_brain() {
    for seed in 0..600u64 {
        let mut rng = Rng(seed ^ 0xdead_beef);
        let old = inc("ledger-0", "0ld", T0, "node-old");
        let new = inc("ledger-0", "new", T0 + 1 + rng.below(100_000), "node-new");
        // Who writes each record: some of the old writer first (maybe none), then the new
        // writer's first record, then any mix with at least one record of the old writer.
        let before = rng.below(30);
        let after = 1 + rng.below(40);
        let mut owners = vec![false; before as usize];
        owners.push(true);
        let mut mix: Vec<bool> = (0..after).map(|_| rng.chance(50)).collect();
        let at = rng.below(after) as usize;
        mix[at] = false;
        owners.extend(mix);
        // Seqs: a shared counter (the writers see each other's records), or each its own
        // (each continues from what it saw at start: duplicates).
        let shared = rng.chance(50);
        let (mut s_old, mut s_new, mut s_all) = (1u64, before + 1, 1u64);
        let mut l = Vec::new();
        let (mut max_old, mut max_new) = (0, 0);
        for &is_new in &owners {
            let seq = if shared {
                s_all += 1;
                s_all - 1
            } else if is_new {
                s_new += 1;
                s_new - 1
            } else {
                s_old += 1;
                s_old - 1
            };
            let who = if is_new { &new } else { &old };
            l.extend_from_slice(&rec(who, seq));
            if is_new {
                max_new = seq;
            } else {
                max_old = seq;
            }
        }
        let mut k = Vec::new();
        if rng.chance(50) && max_old > 0 {
            k.push(ack(&old, max_old));
        }
        if rng.chance(50) {
            k.push(ack(&new, max_new));
        }
        let r = check(&l[..], &k);
        assert!(r.split_brain.detected, "seed {seed}:\n{}", r.evidence());
        assert_eq!(r.verdict, Verdict::Fail, "seed {seed}");
        let nodes: Vec<&str> = r
            .split_brain
            .writers
            .iter()
            .map(|w| w.node.as_str())
            .collect();
        assert!(
            nodes.contains(&"node-old") && nodes.contains(&"node-new"),
            "seed {seed}: {nodes:?}"
        );
    }
}

/// Produces a ledger on the fly (nothing held in memory) and counts the bytes handed out.
struct Generated {
    records: u64,
    failover_at: u64,
    next: u64,
    buf: [u8; RECORD_LEN],
    pos: usize,
    bytes: std::rc::Rc<std::cell::Cell<u64>>,
}

impl Read for Generated {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == RECORD_LEN {
            if self.next > self.records {
                return Ok(0);
            }
            let who = if self.next <= self.failover_at {
                a()
            } else {
                b()
            };
            self.buf = rec(&who, self.next);
            self.next += 1;
            self.pos = 0;
        }
        let n = out.len().min(RECORD_LEN - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        self.bytes.set(self.bytes.get() + n as u64);
        Ok(n)
    }
}

#[test]
fn streams_a_large_ledger() {
    let records = 300_000u64;
    let bytes = std::rc::Rc::new(std::cell::Cell::new(0));
    let ledger = Generated {
        records,
        failover_at: 120_000,
        next: 1,
        buf: [0; RECORD_LEN],
        pos: RECORD_LEN,
        bytes: bytes.clone(),
    };
    let mut k = acks(&a(), (1000..=120_000).step_by(1000));
    k.extend(acks(&b(), (121_000..=299_000).step_by(1000)));
    let r = check(ledger, &k);
    assert_eq!(bytes.get(), records * RECORD_LEN as u64);
    assert_eq!(r.bytes_read, bytes.get());
    assert_eq!(r.verdict, Verdict::Pass, "{}", r.evidence());
    assert_eq!(r.records_valid, records);
    assert_eq!(r.incarnations[1].first_seq, 120_001);
    assert_eq!(r.acks.acknowledged_writes, 299_000);
}

#[test]
fn a_newer_writers_acknowledged_records_overwritten_by_an_older_one_are_split_brain() {
    // Synthetic, in the shape the unfenced taint left on testenv's FUSE path: b (the
    // replacement, started later) wrote and acknowledged 11..=15, then the old writer a, still
    // running, wrote its own 11..=15 over them (appending at the offset it had cached); b went
    // on at 16. Only a's records of 11..=15 are in the ledger.
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=15);
    write(&mut l, &b(), 16..=20);
    let mut k = acks(&a(), [8]);
    k.extend(acks(&b(), [12, 20]));
    let r = run(&l, &k);
    assert_eq!(r.verdict, Verdict::Fail);
    // The acknowledged 12..=15 of b are lost, and they prove two writers.
    assert_eq!(r.lost_acked.count, 4);
    assert!(r.split_brain.detected);
    assert_eq!(r.split_brain.acked_overwritten, 4);
    assert_eq!(
        (r.split_brain.interleavings, r.split_brain.duplicate_seqs),
        (0, 0)
    );
    assert_eq!(r.split_brain.writers, vec![a(), b()]);
    let ev = r
        .split_brain
        .evidence
        .iter()
        .find(|e| e.starts_with("acknowledged writes overwritten"))
        .unwrap();
    assert!(
        ev.contains("the acknowledged seqs 12..=15 of ")
            && ev.contains("(node node-b) are in the ledger"),
        "{ev}"
    );
    assert!(
        ev.contains("(node node-a), which started 60000 ms earlier"),
        "{ev}"
    );
    assert!(
        r.reasons
            .iter()
            .any(|x| x
                .contains("4 acknowledged writes of a newer writer overwritten by an older one")),
        "{:?}",
        r.reasons
    );
    // The same ledger without b's acks says nothing of b's lost records: no split brain.
    let r = run(&l, &acks(&a(), [8]));
    assert!(!r.split_brain.detected, "{:?}", r.split_brain);
}

#[test]
fn an_older_writers_acknowledged_record_held_by_a_newer_one_is_only_a_lost_write() {
    // a acknowledged 10 but its record of 10 never reached the ledger; b, the replacement,
    // read up to 9 and went on from 10: one lost write, one writer at a time.
    let mut l = Vec::new();
    write(&mut l, &a(), 1..=9);
    write(&mut l, &b(), 10..=20);
    let mut k = acks(&a(), [10]);
    k.extend(acks(&b(), [20]));
    let r = run(&l, &k);
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.lost_acked.count, 1);
    assert!(!r.split_brain.detected, "{:?}", r.split_brain);
    assert_eq!(r.split_brain.acked_overwritten, 0);
}
