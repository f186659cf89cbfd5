//! The run directory is the contract: the names of its files and how to read them back. Used
//! by the runner (which writes them), the offline `report` command and the tests — not by the
//! pure core, which takes the parsed contents.
//!
//! ```text
//! <out>/session.json  order.txt  invocation.json  results.json  junit.xml  summary.md
//! <out>/<experiment>/<variant>/<rep>/run.json  events.jsonl  journal.jsonl
//!                                   acks.jsonl  ledger/ledger.bin
//!                                   instances/<instance>/acks.jsonl  …/ledger/ledger.bin
//! ```
//!
//! A run of one instance keeps its ledger evidence in the run directory itself; a fleet's
//! instances each keep theirs under `instances/<name>/` ([`instance_dir`]).

use crate::plan::PlannedRun;
use crate::timeline::Event;
use std::path::{Path, PathBuf};

pub const RUN_FILE: &str = "run.json";
pub const EVENTS_FILE: &str = "events.jsonl";
pub const JOURNAL_FILE: &str = "journal.jsonl";
/// The acknowledgements the harness observed (see `observe::acks`).
pub const ACKS_FILE: &str = "acks.jsonl";
/// The ledger copied out of the workload's volume after failover.
pub const LEDGER_COPY: &str = "ledger/ledger.bin";
/// How the cluster was reached (for `nodedown cleanup`).
pub const SESSION_FILE: &str = "session.json";
/// The run ids in plan order.
pub const ORDER_FILE: &str = "order.txt";
/// Where the whole invocation's wall time went (`nodedown run` writes it at its end).
pub const INVOCATION_FILE: &str = "invocation.json";
/// The variants `--skip-unsupported` left out, and why (written before the first run).
pub const NOT_RUN_FILE: &str = "not-run.json";
/// A simulated invocation's runs as nodedown wrote them before they were in results.json
/// (read by [`load_legacy_curve`], never written).
pub const LEGACY_CURVE_FILE: &str = "curve.json";
/// A run's (or an invocation's) results.
pub const RESULTS_FILE: &str = "results.json";

/// The variants left out of the invocation in `out` (none when it has no such file).
pub fn load_not_run(out: &Path) -> Result<Vec<crate::report::NotRun>, StoreError> {
    let path = out.join(NOT_RUN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| StoreError::Invalid {
            path: path.clone(),
            detail: format!("not a list of variants left out: {e}"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(vec![]),
        Err(e) => Err(io(&path)(e)),
    }
}

pub use crate::report::InvocationTimes;

/// The invocation's times, when the directory has them (a run interrupted before its end, or
/// written by nodedown before they were recorded, has none).
pub fn load_invocation(out: &Path) -> Option<InvocationTimes> {
    let text = std::fs::read_to_string(out.join(INVOCATION_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

pub use crate::report::assemble::LedgerEvidence;

/// Where the ledger evidence of instance `name` of a run with `instances` instances lives:
/// the run directory for one instance, `instances/<name>/` in a fleet.
pub fn instance_dir(run_dir: &Path, instances: usize, name: &str) -> PathBuf {
    if instances <= 1 {
        run_dir.to_path_buf()
    } else {
        run_dir.join("instances").join(name)
    }
}

/// The ledger evidence of every instance of `run` that has some, by instance name.
pub fn load_ledgers(
    dir: &Path,
    run: &PlannedRun,
    events: &[Event],
) -> Result<crate::report::assemble::Ledgers, StoreError> {
    let names = crate::spec::members(&run.workload);
    let mut out = crate::report::assemble::Ledgers::new();
    let fence = crate::timeline::fence_window(events).map(|(node, fenced_ms, unfenced_ms)| {
        crate::integrity::FenceWindow {
            node,
            fenced_ms,
            unfenced_ms,
            clock_skew_ms: 0,
        }
    });
    for name in &names {
        if let Some(evidence) = load_ledger(&instance_dir(dir, names.len(), name), fence.as_ref())?
        {
            out.insert(name.clone(), evidence);
        }
    }
    Ok(out)
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {detail}")]
    Invalid { path: PathBuf, detail: String },
}

/// A qualification's sheet.
pub const SHEET_FILE: &str = "sheet.json";

/// The qualification sheet at `path`: `sheet.json`, or a directory holding one.
pub fn sheet_path(path: &Path) -> Option<PathBuf> {
    if path.is_dir() {
        let p = path.join(SHEET_FILE);
        p.is_file().then_some(p)
    } else {
        (path.file_name().is_some_and(|n| n == SHEET_FILE) && path.is_file())
            .then(|| path.to_path_buf())
    }
}

/// Reads a qualification sheet and verifies its digest: a sheet is evidence, and one changed
/// after `nodedown qualify` wrote it is refused.
pub fn load_sheet(path: &Path) -> Result<crate::report::sheet::Sheet, StoreError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let invalid = |detail: String| StoreError::Invalid {
        path: path.to_path_buf(),
        detail,
    };
    let sheet: crate::report::sheet::Sheet = serde_json::from_str(&text)
        .map_err(|e| invalid(format!("not a qualification sheet: {e}")))?;
    // Checked on the bytes as written, not on what this nodedown reads of them.
    let Some((recorded, computed)) = crate::report::sheet::digest_of_text(&text) else {
        return Err(invalid(
            "it has no digest: not a sheet `nodedown qualify` wrote".into(),
        ));
    };
    if computed != recorded {
        return Err(invalid(format!(
            "its content does not match its digest (recorded {recorded}, computed {computed}): it was \
             changed after `nodedown qualify` wrote it; use the sheet as it was made"
        )));
    }
    Ok(sheet)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads a run directory's `run.json` and `events.jsonl` (a torn last line — a crash mid-write
/// — is skipped; a bad line elsewhere is an error naming it).
pub fn load_run(dir: &Path) -> Result<(PlannedRun, Vec<Event>), StoreError> {
    let run_json = dir.join(RUN_FILE);
    let text = std::fs::read_to_string(&run_json).map_err(io(&run_json))?;
    let run: PlannedRun = serde_json::from_str(&text).map_err(|e| StoreError::Invalid {
        path: run_json.clone(),
        detail: format!("not a nodedown run.json: {e}"),
    })?;
    let events_path = dir.join(EVENTS_FILE);
    let text = match std::fs::read_to_string(&events_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(&events_path)(e)),
    };
    let events =
        crate::jsonl::parse_strict(&text, &events_path.display().to_string()).map_err(|bad| {
            StoreError::Invalid {
                path: events_path.clone(),
                detail: format!("line {}: not an event: {}", bad.line, bad.detail),
            }
        })?;
    Ok((run, events))
}

/// Every directory below `out` holding a run (a run.json: on real or simulated nodes), in plan
/// order when known.
pub fn run_dirs(out: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![out.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let run_json = dir.join(RUN_FILE);
        if run_json.is_file() {
            found.push(dir.clone());
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                }
            }
        }
    }
    let order: Vec<String> = std::fs::read_to_string(out.join(ORDER_FILE))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect();
    found.sort_by_key(|d| {
        let rel = d.strip_prefix(out).unwrap_or(d).display().to_string();
        (
            order.iter().position(|o| *o == rel).unwrap_or(usize::MAX),
            rel,
        )
    });
    found
}

/// The ledger evidence of a run directory: the checker's report over the collected ledger and
/// the recorded acks, and with a storage fence's window, the fence's efficacy read from the
/// same ledger. `None` when the run has no collected ledger.
pub fn load_ledger(
    dir: &Path,
    fence: Option<&crate::integrity::FenceWindow>,
) -> Result<Option<LedgerEvidence>, StoreError> {
    let ledger = dir.join(LEDGER_COPY);
    let acks_path = dir.join(ACKS_FILE);
    if !ledger.is_file() {
        return Ok(None);
    }
    let acks = match std::fs::File::open(&acks_path) {
        Ok(f) => crate::integrity::read_acks(std::io::BufReader::new(f)).map_err(|e| {
            StoreError::Invalid {
                path: acks_path.clone(),
                detail: e.to_string(),
            }
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
        Err(e) => return Err(io(&acks_path)(e)),
    };
    let file = std::fs::File::open(&ledger).map_err(io(&ledger))?;
    let report = crate::integrity::check(std::io::BufReader::new(file), &acks);
    let fence = match fence {
        Some(w) => {
            let file = std::fs::File::open(&ledger).map_err(io(&ledger))?;
            Some(crate::integrity::fence_efficacy(file, w))
        }
        None => None,
    };
    Ok(Some((report, acks, fence)))
}

/// Every run below `out`, read back: what the report is computed from.
#[allow(clippy::type_complexity)]
pub fn load_all(
    out: &Path,
) -> Result<Vec<(PlannedRun, Vec<Event>, crate::report::assemble::Ledgers)>, StoreError> {
    run_dirs(out)
        .into_iter()
        .map(|dir| {
            let (run, events) = load_run(&dir)?;
            let ledgers = load_ledgers(&dir, &run, &events)?;
            Ok((run, events, ledgers))
        })
        .collect()
}

/// The runs of a simulated invocation written before simulated runs were ordinary run
/// directories' results (its `curve.json`, an array of [`crate::report::simulated::LegacyResult`];
/// `dir` may also be that file), as results: for `nodedown report` and `compare` of old
/// invocations. `None` when `dir` has no such curve, or holds run directories (which are then
/// what is read, by [`load_all`]).
pub fn load_legacy_curve(dir: &Path) -> Option<Result<Vec<crate::report::RunResult>, StoreError>> {
    let curve = if dir.is_file() {
        dir.to_path_buf()
    } else {
        dir.join(LEGACY_CURVE_FILE)
    };
    if curve.file_name()? != LEGACY_CURVE_FILE || !curve.is_file() {
        return None;
    }
    if dir.is_dir() && !run_dirs(dir).is_empty() {
        return None;
    }
    let read = || {
        let text = std::fs::read_to_string(&curve).map_err(io(&curve))?;
        let results: Vec<crate::report::simulated::LegacyResult> = serde_json::from_str(&text)
            .map_err(|e| StoreError::Invalid {
                path: curve.clone(),
                detail: format!("not a simulated curve: {e}"),
            })?;
        Ok(results.into_iter().map(|r| r.into_run_result()).collect())
    };
    Some(read())
}
