//! Short texts shared by the renderers.

use super::{ExpectationResult, RunResult, Verdict};

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
