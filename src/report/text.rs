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

/// `name: expected X, got Y`
pub(crate) fn mismatch(e: &ExpectationResult) -> String {
    format!("{}: expected {}, got {}", e.name, e.expected, e.actual)
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
