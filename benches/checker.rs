//! Ledger benchmarks (no cluster needed):
//! 1. the integrity checker on a large ledger written to a temporary file (1 GiB = 4M records
//!    by default; NODEDOWN_BENCH_LEDGER_MB changes it): records/s, MB/s, RSS before and peak RSS
//!    during the check, and heap allocations during the check — for the whole ledger and for an
//!    eighth of it, to show that memory does not grow with the ledger;
//! 2. durable appends: the ledger writer appends 2000 records (write + fdatasync each) to a
//!    temporary file and the latency distribution is printed.
//!
//! Files go to NODEDOWN_BENCH_DIR (default: the system temp dir) and are removed afterwards.
//! Run with `cargo bench --bench checker`. It prints figures and asserts nothing about speed.

use nodedown::integrity::{self, Ack, Incarnation, Record};
use nodedown::workload::ledger::LedgerWriter;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufWriter, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Counts heap allocations and bytes in use, to show what the checker allocates.
struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static IN_USE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        let now = IN_USE.fetch_add(l.size() as u64, Relaxed) + l.size() as u64;
        PEAK.fetch_max(now, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        IN_USE.fetch_sub(l.size() as u64, Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A field of /proc/self/status in MiB (`VmHWM`: peak resident set, `VmRSS`: current).
fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Peak resident set size of this process since the last [`reset_peak_rss`], in MiB.
///
/// `getrusage(RUSAGE_SELF).ru_maxrss` is not used: Linux carries it over fork + exec, so it
/// starts at the RSS of the `cargo` process that launched the benchmark (~80 MiB).
fn peak_rss_mib() -> f64 {
    status_mib("VmHWM")
}

/// Resets the peak RSS to the current RSS (Linux ≥ 4.0: `echo 5 > /proc/self/clear_refs`).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The kernel's own peak RSS figure, for comparison.
fn ru_maxrss_mib() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss as f64 / 1024.0 // KiB on Linux
}

fn fs_type(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return "unknown".into();
    }
    match st.f_type as i64 {
        0xEF53 => "ext2/3/4".into(),
        0x01021994 => "tmpfs".into(),
        0x794C7630 => "overlayfs".into(),
        0x58465342 => "xfs".into(),
        0x9123683E => "btrfs".into(),
        0x6969 => "nfs".into(),
        other => format!("0x{other:x}"),
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let base = std::env::var_os("NODEDOWN_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let mb: u64 = std::env::var("NODEDOWN_BENCH_LEDGER_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    checker(&base, mb);
    appends(&base, 2000);
}

fn checker(base: &std::path::Path, mb: u64) {
    let records = mb * 1024 * 1024 / integrity::RECORD_LEN as u64;
    let half = records / 2;
    let a = Incarnation::new(
        "aaaaaaaa-0000-4000-8000-000000000001",
        1_777_636_800_000,
        "nodedown-worker",
        "ledger-0",
    );
    let b = Incarnation::new(
        "bbbbbbbb-0000-4000-8000-000000000002",
        1_777_640_400_000,
        "nodedown-worker2",
        "ledger-0",
    );
    let file = tempfile::NamedTempFile::new_in(base).expect("temp file");
    println!(
        "checker: ledger of {mb} MiB = {records} records, 2 writers (failover at seq {}), in {} ({})",
        half + 1,
        file.path().display(),
        fs_type(file.path())
    );
    let t = Instant::now();
    {
        let mut w = BufWriter::with_capacity(1 << 20, file.as_file());
        for seq in 1..=records {
            let who = if seq <= half { &a } else { &b };
            let r = Record {
                incarnation: who.clone(),
                seq,
                written_ms: who.started_ms + seq * 50,
                payload: vec![seq as u8; 64],
            };
            w.write_all(&integrity::encode(&r)).unwrap();
        }
        w.flush().unwrap();
    }
    file.as_file().sync_all().unwrap();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "  written in {secs:.2} s ({:.0} MB/s, encode + write + fsync)",
        (records * 256) as f64 / 1e6 / secs
    );

    // What the harness would have recorded: an ack every 1000 records.
    let acks: Vec<Ack> = (1000..=records)
        .step_by(1000)
        .map(|seq| {
            let who = if seq <= half { &a } else { &b };
            Ack {
                at_ms: who.started_ms + seq * 50 + 20,
                wall: String::new(),
                pod: who.pod.clone(),
                incarnation: who.clone(),
                seq,
            }
        })
        .collect();
    println!("  {} acks in memory", acks.len());

    let run = |limit: u64, label: &str| {
        let f = std::fs::File::open(file.path()).unwrap();
        let part = limit * 256;
        let acks: Vec<Ack> = acks.iter().filter(|x| x.seq <= limit).cloned().collect();
        let rss0 = status_mib("VmRSS");
        let reset = reset_peak_rss();
        let allocs0 = ALLOCS.load(Relaxed);
        let in_use0 = IN_USE.load(Relaxed);
        PEAK.store(in_use0, Relaxed);
        let t = Instant::now();
        let report = integrity::check(f.take(part), &acks);
        let secs = t.elapsed().as_secs_f64();
        let allocs = ALLOCS.load(Relaxed) - allocs0;
        let heap_peak = PEAK.load(Relaxed) - in_use0;
        println!("  check {label}: {}", report.summary());
        println!(
            "    {:.2} s: {:.2} M records/s, {:.0} MB/s; heap allocations during check {allocs}, heap peak +{:.1} KiB",
            secs,
            report.records_valid as f64 / secs / 1e6,
            report.bytes_read as f64 / 1e6 / secs,
            heap_peak as f64 / 1024.0
        );
        println!(
            "    RSS before {rss0:.1} MiB, peak RSS during the check {:.1} MiB{}, after {:.1} MiB",
            peak_rss_mib(),
            if reset {
                ""
            } else {
                " (could not reset the peak: it is the process's)"
            },
            status_mib("VmRSS")
        );
    };
    println!(
        "  RSS now {:.1} MiB, process peak so far {:.1} MiB (ru_maxrss {:.1} MiB, inherited from cargo)",
        status_mib("VmRSS"),
        peak_rss_mib(),
        ru_maxrss_mib()
    );
    run(records / 8, "an eighth");
    run(records, "the whole ledger");
}

fn appends(base: &std::path::Path, n: usize) {
    let dir = tempfile::tempdir_in(base).expect("temp dir");
    let who = Incarnation::new(
        "cccccccc-0000-4000-8000-000000000003",
        1_777_636_800_000,
        "bench",
        "ledger-0",
    );
    let mut w = LedgerWriter::open(dir.path(), who, 64).unwrap();
    let mut lat = Vec::with_capacity(n);
    let t = Instant::now();
    for i in 0..n {
        let s = Instant::now();
        w.append(1_777_636_800_000 + i as u64).unwrap();
        lat.push(s.elapsed().as_secs_f64() * 1e6);
    }
    let secs = t.elapsed().as_secs_f64();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "durable appends ({}): {n} × (write 256 B + fdatasync) in {secs:.2} s = {:.0} appends/s; latency µs p50 {:.0}, p99 {:.0}, max {:.0}",
        fs_type(dir.path()),
        n as f64 / secs,
        percentile(&lat, 50.0),
        percentile(&lat, 99.0),
        lat[lat.len() - 1]
    );
}
