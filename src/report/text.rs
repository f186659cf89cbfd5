//! Short texts shared by the renderers.

use super::{ExpectationResult, RunResult, Verdict, WriteOutage};
use crate::units::{fmt_at_least, fmt_ms};

/// A write outage as every report writes it: `32.3s`, or `≥ 1m30s (not restored)` when no
/// write was acknowledged again before the watch ended.
pub(crate) fn outage_text(o: &WriteOutage) -> String {
    if o.restored {
        fmt_ms(o.duration_ms)
    } else {
        format!("{} (not restored)", fmt_at_least(o.duration_ms))
    }
}

/// The write outage over a variant's runs: the median of those restored (`[k/n]` when not all
/// were), and how many were not restored (with the shortest lower bound when none was);
/// `—` when no run measured one.
pub(crate) fn outage_over(runs: &[&RunResult]) -> String {
    let restored: Vec<u64> = runs
        .iter()
        .filter_map(|r| r.write_outage.as_ref())
        .filter(|o| o.restored)
        .map(|o| o.duration_ms)
        .collect();
    let open: Vec<u64> = runs
        .iter()
        .filter_map(|r| r.write_outage.as_ref())
        .filter(|o| !o.restored)
        .map(|o| o.duration_ms)
        .collect();
    match (crate::units::median(&restored), open.iter().min()) {
        (None, None) => "—".into(),
        (None, Some(least)) if open.len() == runs.len() => {
            format!("{} (not restored)", fmt_at_least(*least))
        }
        (None, Some(least)) => format!(
            "{} (not restored) [{}/{}]",
            fmt_at_least(*least),
            open.len(),
            runs.len()
        ),
        (Some(median), _) => {
            let mut s = fmt_ms(median);
            if restored.len() < runs.len() {
                s.push_str(&format!(" [{}/{}]", restored.len(), runs.len()));
            }
            if !open.is_empty() {
                s.push_str(&format!(", {} not restored", open.len()));
            }
            s
        }
    }
}

pub(crate) fn verdict_word(v: Verdict) -> &'static str {
    v.as_str()
}

/// Text for XML and HTML (the SVG timelines and report.html): `& < > "` escaped.
pub(crate) fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The one name every view gives a measure or expectation: the kebab-case of the experiment's
/// camelCase key (`timeToReady` → `time-to-ready`, `writeOutage` → `write-outage`), as the
/// metrics and `compare` name them.
pub(crate) fn measure(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A failed or undecided expectation in a few words: `time-to-ready 25.7s > 20s`, `not
/// recovered (expected recovered)`, `integrity fail (expected intact)`.
pub(crate) fn mismatch(e: &ExpectationResult) -> String {
    let expected = super::outcome::expected_text(e);
    let plain_time = e.actual.starts_with(|c: char| c.is_ascii_digit()) && !e.actual.contains(' ');
    match (e.name.as_str(), e.expected.strip_prefix("<= ")) {
        (_, Some(max)) if plain_time && e.verdict == Verdict::Fail => {
            format!("{} {} > {max}", measure(&e.name), e.actual)
        }
        ("recovered", _) => {
            let actual = match e.actual.as_str() {
                "true" => "recovered".to_string(),
                "false" => "not recovered".to_string(),
                other => format!("recovery {other}"),
            };
            format!("{actual} (expected {expected})")
        }
        ("phases.seen" | "phases.notSeen", _) => {
            format!("{} {} (expected {expected})", e.expected, e.actual)
        }
        _ => format!("{} {} (expected {expected})", measure(&e.name), e.actual),
    }
}

/// The verdicts' banner, above everything else in summary.md and report.html: `1 of 2 failed:
/// node-shutdown/out-of-service-taint/1 — time-to-ready 25.7s > 20s`, then the unknown runs
/// and why, then the runs that passed with a harm or without recovery (when some did not pass);
/// empty when every run passed.
pub(crate) fn verdict_banner(runs: &[&RunResult]) -> Vec<(Verdict, String)> {
    const SHOWN: usize = 5;
    let n = runs.len();
    let mut lines = Vec::new();
    for (v, word) in [(Verdict::Fail, "failed"), (Verdict::Unknown, "unknown")] {
        let these: Vec<&&RunResult> = runs.iter().filter(|r| r.verdict == v).collect();
        if these.is_empty() {
            continue;
        }
        let mut named: Vec<String> = these
            .iter()
            .take(SHOWN)
            .map(|r| format!("{} — {}", r.id, problem(r).unwrap_or_default()))
            .collect();
        if these.len() > SHOWN {
            named.push(format!("and {} more", these.len() - SHOWN));
        }
        lines.push((
            v,
            format!("{} of {n} {word}: {}", these.len(), named.join("; ")),
        ));
    }
    // Runs that passed but did what a reader would not assume from `pass`.
    let noted = pass_notes(runs);
    if !lines.is_empty() && !noted.is_empty() {
        lines.push((
            Verdict::Pass,
            format!(
                "{} of {n} passed with a harm or no recovery: {}",
                noted.len(),
                noted.join("; ")
            ),
        ));
    }
    lines
}

/// For an invocation whose runs all passed: the ones that did what a green `pass` would hide
/// (`storage-fence/lifted/1 — as expected: lost writes, split brain`), one line each.
pub(crate) fn pass_notes(runs: &[&RunResult]) -> Vec<String> {
    runs.iter()
        .filter(|r| r.verdict == Verdict::Pass)
        .filter_map(|r| super::outcome::pass_note(r).map(|n| format!("{} — {n}", r.id)))
        .collect()
}

/// Evidence lines grouped for showing: a run of more than three lines alike (the same first
/// words once digits are dropped, e.g. `  interleaved writers: offset …`) keeps its first line
/// and folds the rest; every other line stands alone. Each group: the line shown, the lines folded.
pub(crate) fn fold_lines(text: &str) -> Vec<(String, Vec<String>)> {
    const KEEP: usize = 3;
    // Lines are alike when they begin alike once their numbers are taken out.
    let label = |l: &str| {
        let shape: String = l
            .trim()
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .take(18)
            .collect();
        (shape.chars().count() >= 6).then_some(shape)
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i + 1;
        if let Some(l) = label(lines[i]) {
            while j < lines.len() && label(lines[j]).as_deref() == Some(l.as_str()) {
                j += 1;
            }
        }
        if j - i > KEEP {
            out.push((
                lines[i].to_string(),
                lines[i + 1..j].iter().map(|s| s.to_string()).collect(),
            ));
        } else {
            for l in &lines[i..j] {
                out.push((l.to_string(), Vec::new()));
            }
        }
        i = j;
    }
    out
}

/// The wall clock `ms` after `run`'s time zero (RFC 3339, UTC, ms), when its time zero's wall
/// clock was recorded.
pub(crate) fn wall_at(run: &RunResult, ms: u64) -> Option<String> {
    let t0 = run.time_zero_at()?;
    Some(humantime::format_rfc3339_millis(t0 + std::time::Duration::from_millis(ms)).to_string())
}

/// The page's title: the experiments' names, and how many runs failed or stayed unknown —
/// `nodedown: node-shutdown — 1 of 2 failed`.
pub(crate) fn title(report: &super::Report) -> String {
    let names: Vec<&str> = report.experiments.iter().map(|e| e.name.as_str()).collect();
    let runs: Vec<&RunResult> = report.experiments.iter().flat_map(|e| &e.runs).collect();
    let n = runs.len();
    let count = |v: Verdict| runs.iter().filter(|r| r.verdict == v).count();
    let state = match (count(Verdict::Fail), count(Verdict::Unknown)) {
        (0, 0) if n > 0 => format!("{n} of {n} passed"),
        (0, 0) => "no runs".to_string(),
        (0, u) => format!("{u} of {n} unknown"),
        (f, 0) => format!("{f} of {n} failed"),
        (f, u) => format!("{f} of {n} failed, {u} unknown"),
    };
    let what = match names.as_slice() {
        [] => "results".to_string(),
        [one] => one.to_string(),
        [a, b] => format!("{a}, {b}"),
        [a, rest @ ..] => format!("{a} and {} more experiments", rest.len()),
    };
    format!("nodedown: {what} — {state}")
}

/// How the invocation was started: `nodedown run experiments/x.yaml on kind cluster nodedown
/// (context kind-nodedown), started 2026-12-07T10:00:00Z`.
pub(crate) fn origin_line(o: &super::Origin) -> String {
    let mut s = String::new();
    if !o.command.is_empty() {
        let mut args = o.command.clone();
        // The program as a person types it.
        if let Some(first) = args.first_mut() {
            if let Some(base) = std::path::Path::new(first.as_str()).file_name() {
                *first = base.to_string_lossy().into_owned();
            }
        }
        s.push_str(&format!("`{}` on ", args.join(" ").replace('`', "'")));
    }
    match &o.cluster {
        Some(c) => s.push_str(&format!("{} cluster {c}", o.provider.as_str())),
        None => s.push_str(&format!("{} cluster", o.provider.as_str())),
    }
    if let Some(c) = &o.context {
        s.push_str(&format!(" (context {c})"));
    }
    if let Some(t) = &o.started {
        s.push_str(&format!(", started {t}"));
    }
    s
}

/// What to do about a run that did not pass, from its evidence: one line, or `None` for a
/// run that passed. `out` is the invocation's directory (for `nodedown cleanup`), `file` the
/// experiment file (for the rerun line).
pub(crate) fn next_step(run: &RunResult, file: &str, out: Option<&str>) -> Option<String> {
    if run.verdict == Verdict::Pass {
        return None;
    }
    let dir = out.unwrap_or("DIR");
    if run.error.is_some() {
        return Some(format!(
            "the harness could not finish the run: `nodedown cleanup {dir}` undoes what it left, \
             then rerun `nodedown run {file} --only {}`",
            run.variant
        ));
    }
    let failed = |name: &str| {
        run.expectations
            .iter()
            .any(|e| e.name == name && e.verdict == Verdict::Fail)
    };
    let phase = |p: crate::timeline::Phase| run.phases.iter().any(|x| x.name == p);
    let unfenced = run.integrity.as_ref().is_some_and(|i| {
        i.split_brain && i.fence.as_ref().is_none_or(|f| f.verdict != Verdict::Pass)
    });
    if failed("integrity") && unfenced {
        return Some(
            "two writers overlapped: fence the node first (power off or a storage fence, \
             `remediation.fence`) before the out-of-service taint lets a replacement attach"
                .into(),
        );
    }
    if failed("recovered") && phase(crate::timeline::Phase::MultiAttachError) {
        return Some(
            "the replacement waited on a Multi-Attach error: the volume stays attached to the \
             dead node until it is detached — use the out-of-service taint (`remediation: \
             {kind: out-of-service-taint}`) once the node is known down"
                .into(),
        );
    }
    if run.expectations.is_empty() {
        return Some(format!(
            "add `expect:` to the experiment (e.g. `recovered: true`, `timeToReady: {{max: 2m}}`), \
             then rerun `nodedown run {file} --only {}`",
            run.variant
        ));
    }
    if failed("recovered") {
        return Some(format!(
            "nothing brought the workload back within the recovery timeout: the failed \
             expectation's evidence says where it stopped; rerun `nodedown run {file} --only {}` \
             with a longer `timeouts.recovery` to see whether it is slow or stuck",
            run.variant
        ));
    }
    // Every failed expectation a time bound that was measured: a bound missed, not a failure
    // to recover.
    let bounds_only = run
        .expectations
        .iter()
        .filter(|e| e.verdict == Verdict::Fail)
        .all(|e| {
            e.expected.starts_with("<= ") && e.actual.starts_with(|c: char| c.is_ascii_digit())
        });
    if run.verdict == Verdict::Fail && bounds_only {
        return Some(format!(
            "a bound was missed once: rerun `nodedown run {file} --only {} --repeat 5` to see \
             its spread before changing the bound",
            run.variant
        ));
    }
    if run.verdict == Verdict::Unknown {
        return Some(format!(
            "nothing decided it: read the evidence in {dir}/{}/, then rerun `nodedown run \
             {file} --only {}`",
            run.id, run.variant
        ));
    }
    Some(format!(
        "read the failed expectations' evidence (results.json, report.html), then rerun \
         `nodedown run {file} --only {} --repeat 5`",
        run.variant
    ))
}

/// Why a run is Unknown: the harness error, else "no expectations", else the undecided
/// expectations.
pub(crate) fn unknown_reason(run: &RunResult) -> String {
    if let Some(err) = &run.error {
        return format!("harness error: {err}");
    }
    if run.expectations.is_empty() {
        return "no expectations: nothing was checked (add `expect:` to the experiment)"
            .to_string();
    }
    let undecided: Vec<String> = run
        .expectations
        .iter()
        .filter(|e| e.verdict == Verdict::Unknown)
        .map(|e| format!("{}: {}", e.name, e.actual))
        .collect();
    format!("undecided: {}", undecided.join("; "))
}

/// One line on what is wrong with a run; `None` when it passed.
pub(crate) fn problem(run: &RunResult) -> Option<String> {
    match run.verdict {
        Verdict::Pass => None,
        Verdict::Unknown => Some(unknown_reason(run)),
        Verdict::Fail => {
            let mut parts: Vec<String> = run
                .expectations
                .iter()
                .filter(|e| e.verdict == Verdict::Fail)
                .map(mismatch)
                .collect();
            if let Some(err) = &run.error {
                parts.push(format!("harness error: {err}"));
            }
            Some(parts.join("; "))
        }
    }
}
