//! The ledger writer: the built-in integrity workload, run inside the workload container as
//! `nodedown ledger --dir /data --port 8080`.
//!
//! It appends fixed-size checksummed records (`integrity::record`) to `<dir>/ledger.bin`, one
//! per interval, each followed by an fdatasync; only then does it count the record as durable
//! ("acknowledged"). `GET /status` on the port reports the last durable sequence number, which
//! the harness polls through the API server's pod proxy and writes to `acks.jsonl`; after
//! failover `integrity::check` proves from the ledger and the acks that nothing acknowledged was
//! lost, nothing is corrupt, and no second writer wrote.
//!
//! On a raw block volume (`--device PATH`, `volumeMode: Block`) the same records are written
//! to the device itself, record i of the ledger at byte `i × RECORD_LEN`: the ledger is the
//! device's content up to its first all-zero slot (a volume reads zeros where it was never
//! written, as freshly provisioned volumes do), and a torn tail is zeroed instead of truncated.
//! `GET /ledger` serves that extent, so the checker reads a block ledger as it reads a file.
//!
//! On start it verifies the existing ledger from the beginning (streaming), continues from the
//! highest valid sequence number, and truncates a torn tail (whatever follows the last valid
//! record: a record cut short by a crash, never acknowledged) so that its records stay aligned.
//! The first 64 KiB of a truncated tail are kept in `<dir>/ledger.bin.torn-<offset>-<ms>` as
//! evidence. Corrupt records before the last valid one are left in place for the checker.

use crate::integrity::record::{self, Incarnation, IncarnationKey, Record, RECORD_LEN};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The ledger's file name inside `--dir`.
pub const LEDGER_FILE: &str = "ledger.bin";
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(50);
pub const DEFAULT_PAYLOAD_LEN: usize = 64;
/// Bytes of a torn tail kept as evidence before it is truncated.
const TORN_TAIL_KEPT: u64 = 64 * 1024;
/// Distinct incarnations the start-up scan lists (all are counted).
const MAX_LISTED_INCARNATIONS: usize = 32;

pub use crate::integrity::wire::{ledger_url_path, status_url_path, Status};

pub fn ledger_path(dir: &Path) -> PathBuf {
    dir.join(LEDGER_FILE)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerOptions {
    pub dir: PathBuf,
    /// A raw block device to write the ledger to instead of `<dir>/ledger.bin`.
    pub device: Option<PathBuf>,
    pub port: u16,
    pub interval: Duration,
    /// Payload bytes per record, at most `record::MAX_PAYLOAD` (86).
    pub payload_len: usize,
    /// The incarnation: from the Downward API (`POD_UID`, `POD_NAME`, `NODE_NAME`).
    pub pod_uid: String,
    pub pod_name: String,
    pub node_name: String,
}

impl LedgerOptions {
    /// Options with defaults for the given incarnation (the Downward API's values, read by
    /// the command line).
    pub fn new(
        dir: impl Into<PathBuf>,
        port: u16,
        pod_uid: String,
        pod_name: String,
        node_name: String,
    ) -> Self {
        LedgerOptions {
            dir: dir.into(),
            device: None,
            port,
            interval: DEFAULT_INTERVAL,
            payload_len: DEFAULT_PAYLOAD_LEN,
            pod_uid,
            pod_name,
            node_name,
        }
    }
}

/// What the start-up scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Valid records.
    pub records: u64,
    /// Distinct incarnations, in order of first appearance (at most 32 listed).
    pub incarnations: Vec<Incarnation>,
    pub incarnations_total: u64,
    /// The highest valid seq (0 for an empty ledger).
    pub last_seq: u64,
    /// Undecodable slots before the last valid record (left in place).
    pub corrupt_records: u64,
    /// Offset of the first corrupt slot, if any.
    pub first_corrupt_offset: Option<u64>,
    /// Bytes after the last valid record, truncated.
    pub torn_tail_bytes: u64,
    pub torn_tail_offset: Option<u64>,
    /// Where the start of the truncated tail was kept.
    pub torn_tail_saved: Option<PathBuf>,
}

impl Recovery {
    pub fn torn_tail_truncated(&self) -> bool {
        self.torn_tail_bytes > 0
    }

    /// Log lines for stderr.
    pub fn describe(&self, path: &Path) -> String {
        let mut s = format!(
            "ledger: {} holds {} valid records by {} incarnation{}, last seq {}",
            path.display(),
            self.records,
            self.incarnations_total,
            if self.incarnations_total == 1 {
                ""
            } else {
                "s"
            },
            self.last_seq
        );
        for i in &self.incarnations {
            s.push_str(&format!("\nledger:   writer {i}"));
        }
        if self.corrupt_records > 0 {
            s.push_str(&format!(
                "\nledger: {} corrupt records before the last valid one (first at offset {}), left in place",
                self.corrupt_records,
                self.first_corrupt_offset.unwrap_or(0)
            ));
        }
        if self.torn_tail_bytes > 0 {
            s.push_str(&format!(
                "\nledger: torn tail of {} bytes at offset {} (never acknowledged) removed{}",
                self.torn_tail_bytes,
                self.torn_tail_offset.unwrap_or(0),
                self.torn_tail_saved
                    .as_ref()
                    .map(|p| format!("; its start kept in {}", p.display()))
                    .unwrap_or_default()
            ));
        }
        s
    }
}

/// The start-up scan's accounting, slot by slot (a file and a device alike): valid records,
/// their incarnations, corrupt slots before the last valid one, and where the valid records end.
#[derive(Default)]
struct SlotScan {
    rec: Recovery,
    valid_end: u64,
    pending_invalid: u64,
    pending_first: Option<u64>,
    last_key: Option<IncarnationKey>,
    seen: Vec<IncarnationKey>,
}

impl SlotScan {
    fn slot(&mut self, offset: u64, buf: &[u8; RECORD_LEN]) {
        let rec = &mut self.rec;
        match record::view(buf) {
            Ok(v) => {
                if self.pending_invalid > 0 {
                    rec.corrupt_records += self.pending_invalid;
                    if rec.first_corrupt_offset.is_none() {
                        rec.first_corrupt_offset = self.pending_first;
                    }
                    self.pending_invalid = 0;
                    self.pending_first = None;
                }
                rec.records += 1;
                rec.last_seq = rec.last_seq.max(v.seq());
                let key = v.incarnation_key();
                if self.last_key.as_ref() != Some(key) {
                    self.last_key = Some(*key);
                    if !self.seen.contains(key) {
                        rec.incarnations_total += 1;
                        if self.seen.len() < 4096 {
                            self.seen.push(*key);
                        }
                        if rec.incarnations.len() < MAX_LISTED_INCARNATIONS {
                            rec.incarnations.push(v.incarnation());
                        }
                    }
                }
                self.valid_end = offset + RECORD_LEN as u64;
            }
            Err(_) => {
                self.pending_invalid += 1;
                self.pending_first.get_or_insert(offset);
            }
        }
    }
}

/// Reads `file` slot by slot from the start, calling `each(offset, slot)`, up to its end — or,
/// with `until_zero` (a raw block device), up to its first all-zero slot; returns where it
/// stopped (a device's ledger extent).
fn scan_slots(
    file: &mut File,
    until_zero: bool,
    mut each: impl FnMut(u64, &[u8; RECORD_LEN]),
) -> std::io::Result<u64> {
    file.seek(SeekFrom::Start(0))?;
    let mut reader = BufReader::with_capacity(256 * 1024, &mut *file);
    let mut buf = [0u8; RECORD_LEN];
    let mut offset = 0u64;
    loop {
        let n = crate::integrity::check::read_full(&mut reader, &mut buf)?;
        if n < RECORD_LEN || (until_zero && buf.iter().all(|&b| b == 0)) {
            return Ok(offset);
        }
        each(offset, &buf);
        offset += RECORD_LEN as u64;
    }
}

/// Scans the ledger at `path` (creating it when absent), and truncates a torn tail. `tag`
/// names the evidence file of a truncated tail (the new writer's start time).
pub fn recover(path: &Path, tag: u64) -> std::io::Result<Recovery> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let mut scan = SlotScan::default();
    scan_slots(&mut file, false, |offset, buf| scan.slot(offset, buf))?;
    let (mut rec, valid_end) = (scan.rec, scan.valid_end);
    let len = file.metadata()?.len();
    if len > valid_end {
        rec.torn_tail_bytes = len - valid_end;
        rec.torn_tail_offset = Some(valid_end);
        let keep = rec.torn_tail_bytes.min(TORN_TAIL_KEPT) as usize;
        let mut tail = vec![0u8; keep];
        file.seek(SeekFrom::Start(valid_end))?;
        file.read_exact(&mut tail)?;
        if tail.iter().any(|&b| b != 0) {
            let name = format!("{LEDGER_FILE}.torn-{valid_end}-{tag}");
            let saved = path.with_file_name(name);
            let mut f = File::create(&saved)?;
            f.write_all(&tail)?;
            f.sync_all()?;
            rec.torn_tail_saved = Some(saved);
        }
        file.set_len(valid_end)?;
        file.sync_all()?;
    }
    Ok(rec)
}

/// The ledger's extent on a raw block device: the bytes before its first all-zero slot.
pub fn device_extent(path: &Path) -> std::io::Result<u64> {
    scan_slots(&mut File::open(path)?, true, |_, _| {})
}

/// [`recover`] for a raw block device: the same scan up to the first all-zero slot; the torn
/// tail (slots after the last valid record) is overwritten with zeros, since a device cannot
/// be truncated, and not kept (there is no filesystem to keep it on). Returns the recovery, the
/// device's size and where the valid records end (where the next one goes).
pub fn recover_device(file: &mut File) -> std::io::Result<(Recovery, u64, u64)> {
    let size = file.seek(SeekFrom::End(0))?;
    let mut scan = SlotScan::default();
    let extent = scan_slots(file, true, |offset, buf| scan.slot(offset, buf))?;
    let (mut rec, valid_end) = (scan.rec, scan.valid_end);
    if extent > valid_end {
        rec.torn_tail_bytes = extent - valid_end;
        rec.torn_tail_offset = Some(valid_end);
        file.seek(SeekFrom::Start(valid_end))?;
        std::io::copy(
            &mut std::io::repeat(0).take(rec.torn_tail_bytes),
            &mut *file,
        )?;
        file.sync_data()?;
    }
    Ok((rec, size, valid_end))
}

/// Where the writer's records go.
#[derive(Debug)]
enum Sink {
    /// Appended to a file.
    File,
    /// Written at `next` on a raw block device of `size` bytes.
    Device { next: u64, size: u64 },
}

/// Appends records durably. One per ledger file at a time (that is what the checker verifies).
#[derive(Debug)]
pub struct LedgerWriter {
    file: File,
    sink: Sink,
    path: PathBuf,
    incarnation: Incarnation,
    next_seq: u64,
    payload_len: usize,
    durable: Arc<AtomicU64>,
    recovery: Recovery,
    /// A write or sync failed: the file may end in a partial record; stop appending.
    failed: bool,
}

impl LedgerWriter {
    /// Opens (creating) `<dir>/ledger.bin`, recovers it, and prepares to continue its sequence.
    pub fn open(dir: &Path, incarnation: Incarnation, payload_len: usize) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = ledger_path(dir);
        let existed = path.exists();
        let recovery = recover(&path, incarnation.started_ms)?;
        let file = OpenOptions::new().append(true).open(&path)?;
        if !existed {
            // Make the new directory entry durable too.
            File::open(dir)?.sync_all()?;
        }
        Ok(Self::new(
            file,
            Sink::File,
            path,
            incarnation,
            payload_len,
            recovery,
        ))
    }

    /// A writer continuing after `recovery`'s last sequence number.
    fn new(
        file: File,
        sink: Sink,
        path: PathBuf,
        incarnation: Incarnation,
        payload_len: usize,
        recovery: Recovery,
    ) -> Self {
        LedgerWriter {
            file,
            sink,
            path,
            next_seq: recovery.last_seq + 1,
            incarnation,
            payload_len: payload_len.min(record::MAX_PAYLOAD),
            durable: Arc::new(AtomicU64::new(0)),
            recovery,
            failed: false,
        }
    }

    /// Opens the raw block device `device`, recovers the ledger on it, and prepares to continue
    /// its sequence right after its last valid record.
    pub fn open_device(
        device: &Path,
        incarnation: Incarnation,
        payload_len: usize,
    ) -> std::io::Result<Self> {
        let mut file = OpenOptions::new().read(true).write(true).open(device)?;
        let (recovery, size, next) = recover_device(&mut file)?;
        Ok(Self::new(
            file,
            Sink::Device { next, size },
            device.to_path_buf(),
            incarnation,
            payload_len,
            recovery,
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn incarnation(&self) -> &Incarnation {
        &self.incarnation
    }

    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// The highest seq this incarnation made durable (0 before its first).
    pub fn last_durable_seq(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Writes the next record, fdatasyncs, then marks it durable. Returns its seq. After an
    /// error every later call fails: the process should exit and a new incarnation recover.
    pub fn append(&mut self, written_ms: u64) -> std::io::Result<u64> {
        if self.failed {
            return Err(std::io::Error::other(
                "an earlier write to the ledger failed; restart the writer to recover it",
            ));
        }
        let seq = self.next_seq;
        let bytes = record::encode(&Record {
            incarnation: self.incarnation.clone(),
            seq,
            written_ms,
            payload: payload(seq, self.payload_len),
        });
        let done = match &mut self.sink {
            Sink::File => self.file.write_all(&bytes),
            Sink::Device { next, size } => {
                if *next + RECORD_LEN as u64 > *size {
                    Err(std::io::Error::other(format!(
                        "the device is full ({size} bytes hold {} records)",
                        *size / RECORD_LEN as u64
                    )))
                } else {
                    use std::os::unix::fs::FileExt;
                    let at = *next;
                    *next += RECORD_LEN as u64;
                    self.file.write_all_at(&bytes, at)
                }
            }
        }
        .and_then(|()| self.file.sync_data());
        if let Err(e) = done {
            self.failed = true;
            return Err(e);
        }
        self.durable.store(seq, Ordering::Release);
        self.next_seq += 1;
        Ok(seq)
    }

    /// Appends `k` records, stamping each with `clock()`; returns the last seq written.
    pub fn append_n(&mut self, k: u64, mut clock: impl FnMut() -> u64) -> std::io::Result<u64> {
        let mut last = self.last_durable_seq();
        for _ in 0..k {
            last = self.append(clock())?;
        }
        Ok(last)
    }

    /// A handle for the status server.
    pub fn status_source(&self) -> StatusSource {
        StatusSource {
            ledger: self.path.clone(),
            device: matches!(self.sink, Sink::Device { .. }),
            incarnation: self.incarnation.clone(),
            durable: self.durable.clone(),
            records_at_start: self.recovery.records,
            last_seq_at_start: self.recovery.last_seq,
            torn_tail_truncated: self.recovery.torn_tail_truncated(),
        }
    }
}

/// Deterministic filler: the payload is not checked, only checksummed.
fn payload(seq: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seq >> (8 * (i % 8))) as u8 ^ (i as u8))
        .collect()
}

/// What the status server reads: shared with the writer through an atomic.
#[derive(Debug, Clone)]
pub struct StatusSource {
    ledger: PathBuf,
    /// The ledger is on a raw block device: serve its extent, not its size.
    device: bool,
    incarnation: Incarnation,
    durable: Arc<AtomicU64>,
    records_at_start: u64,
    last_seq_at_start: u64,
    torn_tail_truncated: bool,
}

impl StatusSource {
    pub fn status(&self) -> Status {
        Status {
            incarnation: self.incarnation.clone(),
            last_durable_seq: self.durable.load(Ordering::Acquire),
            records_at_start: self.records_at_start,
            last_seq_at_start: self.last_seq_at_start,
            torn_tail_truncated: self.torn_tail_truncated,
        }
    }
}

/// Answers requests until the server is unblocked: `GET /status` with the [`Status`] JSON,
/// `GET /ledger` with the ledger file as long as it is at that moment, 404 for anything else.
pub fn serve(server: &tiny_http::Server, source: &StatusSource) {
    for req in server.incoming_requests() {
        let path = req.url().split('?').next().unwrap_or("");
        if *req.method() == tiny_http::Method::Get && path == ledger_url_path() {
            let opened = std::fs::File::open(&source.ledger).and_then(|file| {
                let len = if source.device {
                    device_extent(&source.ledger)?
                } else {
                    file.metadata()?.len()
                };
                Ok((file, len))
            });
            let _ = match opened {
                Ok((file, len)) => {
                    let len_usize = usize::try_from(len).unwrap_or(usize::MAX);
                    req.respond(tiny_http::Response::new(
                        tiny_http::StatusCode(200),
                        vec![tiny_http::Header::from_bytes(
                            "Content-Type",
                            "application/octet-stream",
                        )
                        .expect("valid header")],
                        file.take(len),
                        Some(len_usize),
                        None,
                    ))
                }
                Err(e) => req.respond(
                    tiny_http::Response::from_string(format!("cannot open the ledger: {e}\n"))
                        .with_status_code(500),
                ),
            };
            continue;
        }
        let response = if *req.method() == tiny_http::Method::Get && path == status_url_path() {
            let body = serde_json::to_string(&source.status()).unwrap_or_default();
            tiny_http::Response::from_string(body).with_header(
                tiny_http::Header::from_bytes("Content-Type", "application/json")
                    .expect("valid header"),
            )
        } else {
            tiny_http::Response::from_string("not found: try GET /status or GET /ledger\n")
                .with_status_code(404)
        };
        let _ = req.respond(response);
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Appends one record per `interval` until `stop` is set or a write fails.
pub fn run_loop(
    w: &mut LedgerWriter,
    interval: Duration,
    stop: &AtomicBool,
    mut clock: impl FnMut() -> u64,
) -> std::io::Result<()> {
    while !stop.load(Ordering::Acquire) {
        let seq = w.append(clock())?;
        if seq % 1000 == 0 {
            eprintln!("ledger: seq {seq} durable");
        }
        std::thread::sleep(interval);
    }
    Ok(())
}

/// The `nodedown ledger` process: recover, serve status, append forever (until killed or a
/// write fails, which returns the error).
pub fn run(opts: LedgerOptions) -> std::io::Result<()> {
    let incarnation = Incarnation::new(
        opts.pod_uid.as_str(),
        now_ms(),
        opts.node_name.as_str(),
        opts.pod_name.as_str(),
    );
    let mut w = match &opts.device {
        Some(device) => LedgerWriter::open_device(device, incarnation, opts.payload_len)?,
        None => LedgerWriter::open(&opts.dir, incarnation, opts.payload_len)?,
    };
    eprintln!("{}", w.recovery().describe(w.path()));
    let server = tiny_http::Server::http(("0.0.0.0", opts.port)).map_err(|e| {
        std::io::Error::other(format!(
            "ledger: cannot listen on 0.0.0.0:{}: {e} (is the port free?)",
            opts.port
        ))
    })?;
    let source = w.status_source();
    std::thread::Builder::new()
        .name("ledger-status".into())
        .spawn(move || serve(&server, &source))?;
    eprintln!(
        "ledger: {} continues at seq {}, one record every {} ms, status on :{}{}",
        w.incarnation(),
        w.recovery().last_seq + 1,
        opts.interval.as_millis(),
        opts.port,
        status_url_path()
    );
    let stop = AtomicBool::new(false);
    let result = run_loop(&mut w, opts.interval, &stop, now_ms);
    if let Err(e) = &result {
        eprintln!(
            "ledger: write failed after seq {}: {e}; exiting",
            w.last_durable_seq()
        );
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrity::{check, Ack};
    use crate::outcome::Verdict;

    fn incarnation(uid: &str, started_ms: u64, node: &str) -> Incarnation {
        Incarnation::new(uid, started_ms, node, "ledger-0")
    }

    fn ack(inc: &Incarnation, seq: u64) -> Ack {
        Ack {
            at_ms: inc.started_ms + 1,
            wall: record::rfc3339_ms(inc.started_ms + 1),
            pod: inc.pod.clone(),
            incarnation: inc.clone(),
            seq,
        }
    }

    fn check_dir(dir: &Path, acks: &[Ack]) -> crate::integrity::IntegrityReport {
        check(File::open(ledger_path(dir)).unwrap(), acks)
    }

    #[test]
    fn ledger_writer_loop_then_restart_continues_the_sequence() {
        let dir = tempfile::tempdir().unwrap();
        let a = incarnation("uid-a", 1_000, "node-a");
        let mut w = LedgerWriter::open(dir.path(), a.clone(), 32).unwrap();
        assert_eq!(w.recovery(), &Recovery::default());
        assert_eq!(w.last_durable_seq(), 0);
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let status = w.status_source();
        let t = std::thread::spawn(move || {
            let mut clock = 1_000;
            run_loop(&mut w, Duration::from_millis(2), &s2, || {
                clock += 2;
                clock
            })
            .unwrap();
            w
        });
        // Wait on the condition (5 durable records), not on a guess of how long they take.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while status.status().last_durable_seq < 5 {
            assert!(
                std::time::Instant::now() < deadline,
                "fewer than 5 durable records in 60 s"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        stop.store(true, Ordering::Release);
        let w = t.join().unwrap();
        let n = w.last_durable_seq();
        assert!(n >= 5, "{n} records");
        assert_eq!(
            std::fs::metadata(ledger_path(dir.path())).unwrap().len(),
            n * RECORD_LEN as u64
        );
        drop(w);

        // A new incarnation on another node continues.
        let b = incarnation("uid-b", 9_000, "node-b");
        let mut w = LedgerWriter::open(dir.path(), b.clone(), 32).unwrap();
        let r = w.recovery().clone();
        assert_eq!((r.records, r.last_seq, r.incarnations_total), (n, n, 1));
        assert_eq!(r.incarnations, vec![a.clone()]);
        assert!(!r.torn_tail_truncated());
        assert_eq!(w.last_durable_seq(), 0);
        assert_eq!(w.append_n(10, || 9_001).unwrap(), n + 10);
        let st = w.status_source().status();
        assert_eq!((st.last_durable_seq, st.last_seq_at_start), (n + 10, n));

        let report = check_dir(dir.path(), &[ack(&a, n), ack(&b, n + 10)]);
        assert_eq!(report.verdict, Verdict::Pass, "{}", report.evidence());
        assert_eq!(report.incarnations.len(), 2);
        assert_eq!(report.incarnations[1].first_seq, n + 1);
        assert_eq!(report.incarnations[1].incarnation, b);
    }

    /// A stand-in for a raw block device: a file of `len` zero bytes (what a freshly
    /// provisioned volume reads as), written at offsets like a device. Synthetic.
    fn zeroed_device(len: u64) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let dev = dir.path().join("device");
        File::create(&dev).unwrap().set_len(len).unwrap();
        (dir, dev)
    }

    fn extent_bytes(dev: &Path) -> Vec<u8> {
        let extent = device_extent(dev).unwrap() as usize;
        std::fs::read(dev).unwrap()[..extent].to_vec()
    }

    #[test]
    fn a_block_ledger_continues_after_its_last_record_and_serves_its_extent() {
        let (_dir, dev) = zeroed_device(64 * RECORD_LEN as u64);
        let a = incarnation("uid-a", 1_000, "node-a");
        let mut w = LedgerWriter::open_device(&dev, a.clone(), 32).unwrap();
        assert_eq!(w.recovery(), &Recovery::default());
        assert_eq!(w.append_n(5, || 1_001).unwrap(), 5);
        drop(w);
        assert_eq!(device_extent(&dev).unwrap(), 5 * RECORD_LEN as u64);
        assert_eq!(
            std::fs::metadata(&dev).unwrap().len(),
            64 * RECORD_LEN as u64,
            "a device is written in place, never grown"
        );

        let b = incarnation("uid-b", 9_000, "node-b");
        let mut w = LedgerWriter::open_device(&dev, b.clone(), 32).unwrap();
        let r = w.recovery().clone();
        assert_eq!((r.records, r.last_seq, r.incarnations_total), (5, 5, 1));
        assert!(!r.torn_tail_truncated());
        assert_eq!(w.append_n(3, || 9_001).unwrap(), 8);
        assert_eq!(device_extent(&dev).unwrap(), 8 * RECORD_LEN as u64);
        let report = check(
            std::io::Cursor::new(extent_bytes(&dev)),
            &[ack(&a, 5), ack(&b, 8)],
        );
        assert_eq!(report.verdict, Verdict::Pass, "{}", report.evidence());
        assert_eq!(report.incarnations.len(), 2);
        assert_eq!(report.incarnations[1].first_seq, 6);
    }

    #[test]
    fn a_block_ledgers_torn_tail_is_zeroed_and_overwritten() {
        let (_dir, dev) = zeroed_device(16 * RECORD_LEN as u64);
        let a = incarnation("uid-a", 1_000, "node-a");
        let mut w = LedgerWriter::open_device(&dev, a.clone(), 32).unwrap();
        w.append_n(3, || 1_001).unwrap();
        drop(w);
        // A record cut short at slot 3 and garbage in slot 4, both never acknowledged.
        {
            use std::os::unix::fs::FileExt;
            let f = OpenOptions::new().write(true).open(&dev).unwrap();
            f.write_all_at(&[0xAB; 100], 3 * RECORD_LEN as u64).unwrap();
            f.write_all_at(&[0xCD; RECORD_LEN], 4 * RECORD_LEN as u64)
                .unwrap();
        }
        let b = incarnation("uid-b", 9_000, "node-b");
        let mut w = LedgerWriter::open_device(&dev, b.clone(), 32).unwrap();
        let r = w.recovery().clone();
        assert_eq!((r.records, r.last_seq), (3, 3));
        assert_eq!(r.torn_tail_bytes, 2 * RECORD_LEN as u64);
        assert_eq!(r.torn_tail_offset, Some(3 * RECORD_LEN as u64));
        assert_eq!(r.torn_tail_saved, None, "a device has nowhere to keep it");
        assert_eq!(device_extent(&dev).unwrap(), 3 * RECORD_LEN as u64);
        assert_eq!(w.append(9_001).unwrap(), 4);
        let report = check(
            std::io::Cursor::new(extent_bytes(&dev)),
            &[ack(&a, 3), ack(&b, 4)],
        );
        assert_eq!(report.verdict, Verdict::Pass, "{}", report.evidence());
        assert_eq!(device_extent(&dev).unwrap(), 4 * RECORD_LEN as u64);
    }

    #[test]
    fn a_full_block_ledger_stops_with_an_error() {
        let (_dir, dev) = zeroed_device(2 * RECORD_LEN as u64);
        let mut w =
            LedgerWriter::open_device(&dev, incarnation("uid-a", 1_000, "node-a"), 32).unwrap();
        assert_eq!(w.append_n(2, || 1_001).unwrap(), 2);
        let e = w.append(1_002).unwrap_err();
        assert!(e.to_string().contains("the device is full"), "{e}");
        assert!(w.append(1_003).is_err(), "no write after a failed one");
    }

    #[test]
    fn ledger_torn_tail_is_truncated_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = incarnation("uid-a", 1_000, "node-a");
        let mut w = LedgerWriter::open(dir.path(), a.clone(), 16).unwrap();
        w.append_n(5, || 1_001).unwrap();
        drop(w);
        // A crash mid-record: 100 bytes of the next record, then an unwritten slot.
        let next = record::encode(&Record {
            incarnation: a.clone(),
            seq: 6,
            written_ms: 1_002,
            payload: vec![],
        });
        let mut f = OpenOptions::new()
            .append(true)
            .open(ledger_path(dir.path()))
            .unwrap();
        f.write_all(&next[..100]).unwrap();
        f.write_all(&[0; RECORD_LEN]).unwrap();
        drop(f);

        let b = incarnation("uid-b", 2_000, "node-b");
        let mut w = LedgerWriter::open(dir.path(), b.clone(), 16).unwrap();
        let r = w.recovery().clone();
        assert_eq!(r.torn_tail_bytes, 100 + 256);
        assert_eq!(r.torn_tail_offset, Some(5 * 256));
        let saved = r.torn_tail_saved.clone().unwrap();
        assert_eq!(std::fs::read(&saved).unwrap()[..100], next[..100]);
        assert!(r
            .describe(w.path())
            .contains("torn tail of 356 bytes at offset 1280"));
        assert!(w.status_source().status().torn_tail_truncated);
        assert_eq!(
            std::fs::metadata(ledger_path(dir.path())).unwrap().len(),
            5 * 256
        );
        assert_eq!(w.append(2_001).unwrap(), 6);
        let report = check_dir(dir.path(), &[ack(&a, 5), ack(&b, 6)]);
        assert_eq!(report.verdict, Verdict::Pass, "{}", report.evidence());
        assert_eq!(report.corrupt.examples, vec![]);
    }

    #[test]
    fn ledger_corruption_in_the_middle_is_left_for_the_checker() {
        let dir = tempfile::tempdir().unwrap();
        let a = incarnation("uid-a", 1_000, "node-a");
        let mut w = LedgerWriter::open(dir.path(), a.clone(), 16).unwrap();
        w.append_n(5, || 1_001).unwrap();
        drop(w);
        let path = ledger_path(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[2 * 256 + 10] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let w = LedgerWriter::open(dir.path(), incarnation("uid-b", 2_000, "node-b"), 16).unwrap();
        let r = w.recovery();
        assert_eq!((r.records, r.corrupt_records, r.last_seq), (4, 1, 5));
        assert_eq!(r.first_corrupt_offset, Some(512));
        assert_eq!(r.torn_tail_bytes, 0);
        assert!(r.describe(w.path()).contains("left in place"));
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }

    #[test]
    fn ledger_status_json_shape() {
        let st = Status {
            incarnation: incarnation("uid-a", 1_000, "node-a"),
            last_durable_seq: 42,
            records_at_start: 40,
            last_seq_at_start: 40,
            torn_tail_truncated: true,
        };
        let j = serde_json::to_value(&st).unwrap();
        let mut keys: Vec<&str> = j.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "incarnation",
                "lastDurableSeq",
                "lastSeqAtStart",
                "recordsAtStart",
                "tornTailTruncated"
            ]
        );
        assert_eq!(
            j["incarnation"],
            serde_json::json!({"podUid": "uid-a", "startedMs": 1000, "node": "node-a", "pod": "ledger-0"})
        );
        assert_eq!(j["lastDurableSeq"], 42);
        assert_eq!(serde_json::from_value::<Status>(j).unwrap(), st);
    }

    fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
        use std::io::Read as _;
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let code = out[9..12].parse().unwrap();
        let body = out.split_once("\r\n\r\n").unwrap().1.to_string();
        (code, body)
    }

    #[test]
    fn ledger_status_is_served_over_http() {
        let dir = tempfile::tempdir().unwrap();
        let a = incarnation("uid-a", 1_000, "node-a");
        let mut w = LedgerWriter::open(dir.path(), a.clone(), 16).unwrap();
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let addr = server.server_addr().to_ip().unwrap();
        let (srv, source) = (server.clone(), w.status_source());
        let t = std::thread::spawn(move || serve(&srv, &source));

        let (code, body) = http_get(addr, "/status");
        assert_eq!(code, 200);
        let st: Status = serde_json::from_str(&body).unwrap();
        assert_eq!((st.incarnation, st.last_durable_seq), (a, 0));
        w.append_n(3, || 1_001).unwrap();
        let (_, body) = http_get(addr, "/status?x=1");
        let st: Status = serde_json::from_str(&body).unwrap();
        assert_eq!(st.last_durable_seq, 3);
        assert_eq!(http_get(addr, "/nope").0, 404);

        // The ledger itself, byte for byte as it is on disk.
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET /ledger HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut s, &mut raw).unwrap();
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert!(raw.starts_with(b"HTTP/1.1 200"));
        let on_disk = std::fs::read(w.path()).unwrap();
        assert_eq!(on_disk.len(), 3 * crate::integrity::RECORD_LEN);
        assert_eq!(&raw[split..], &on_disk[..]);

        server.unblock();
        t.join().unwrap();
    }
}
