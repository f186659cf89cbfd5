//! The compact terminal table: one row per run, then a one-line tally.
//!
//! ```text
//! RUN                        VERDICT  NOT-READY  RUNNING  READY  DETAIL
//! node-shutdown/oos-taint/1  pass     20.9s      31.8s    39.7s
//! ```
//! Times are from the fault; `—` when the phase never happened. DETAIL names the failed
//! expectations (or why the run is unknown). With `color`, the verdict is colored with ANSI
//! escapes (the caller decides: a terminal, and `NO_COLOR` unset).

use super::text::problem;
use super::{Report, RunResult, Verdict};
use crate::timeline::Metric;
use crate::units::fmt_ms;

const HEADER: [&str; 6] = ["RUN", "VERDICT", "NOT-READY", "RUNNING", "READY", "DETAIL"];
const METRICS: [Metric; 3] = [
    Metric::TimeToNotReady,
    Metric::TimeToRunning,
    Metric::TimeToReady,
];

fn verdict_text(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "FAIL",
        Verdict::Unknown => "UNKNOWN",
    }
}

fn paint(v: Verdict, s: &str) -> String {
    let code = match v {
        Verdict::Pass => "32",
        Verdict::Fail => "1;31",
        Verdict::Unknown => "33",
    };
    format!("\x1b[{code}m{s}\x1b[0m")
}

fn row(run: &RunResult) -> [String; 6] {
    let metric = |m: Metric| {
        run.metrics
            .get(m.name())
            .map_or_else(|| "—".to_string(), |ms| fmt_ms(*ms))
    };
    [
        run.id.clone(),
        verdict_text(run.verdict).to_string(),
        metric(METRICS[0]),
        metric(METRICS[1]),
        metric(METRICS[2]),
        problem(run).unwrap_or_default().replace(['\r', '\n'], " "),
    ]
}

/// The report as a table for a terminal.
pub fn render(report: &Report, color: bool) -> String {
    let runs: Vec<&RunResult> = report.experiments.iter().flat_map(|e| &e.runs).collect();
    let rows: Vec<(Verdict, [String; 6])> = runs.iter().map(|r| (r.verdict, row(r))).collect();
    let mut widths = HEADER.map(|h| h.chars().count());
    for (_, cells) in &rows {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));

    let mut out = String::new();
    let mut line = String::new();
    for (i, h) in HEADER.iter().enumerate() {
        line.push_str(&pad(h, widths[i]));
        line.push_str("  ");
    }
    out.push_str(line.trim_end());
    out.push('\n');
    for (verdict, cells) in &rows {
        let mut line = String::new();
        for (i, c) in cells.iter().enumerate() {
            let padded = pad(c, widths[i]);
            if i == 1 && color {
                // Color the word only, so the padding keeps the columns aligned.
                let word = paint(*verdict, c);
                line.push_str(&padded.replacen(c.as_str(), &word, 1));
            } else {
                line.push_str(&padded);
            }
            line.push_str("  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }

    let count = |v: Verdict| runs.iter().filter(|r| r.verdict == v).count();
    let (pass, fail, unknown) = (
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Unknown),
    );
    let tally = |n: usize, word: &str, v: Verdict| {
        let s = format!("{n} {word}");
        if color && n > 0 {
            paint(v, &s)
        } else {
            s
        }
    };
    out.push_str(&format!(
        "\n{} {}: {}, {}, {}\n",
        runs.len(),
        if runs.len() == 1 { "run" } else { "runs" },
        tally(pass, "passed", Verdict::Pass),
        tally(fail, "failed", Verdict::Fail),
        tally(unknown, "unknown", Verdict::Unknown),
    ));
    for n in &report.not_run {
        out.push_str(&format!(
            "not run: {}/{}: {}\n",
            n.experiment, n.variant, n.reason
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{check_golden, golden_report};

    #[test]
    fn golden() {
        check_golden("report.txt", &render(&golden_report(), false));
    }

    #[test]
    fn color_only_wraps_words_and_keeps_alignment() {
        let report = golden_report();
        let plain = render(&report, false);
        let colored = render(&report, true);
        assert!(!plain.contains('\x1b'));
        assert!(colored.contains("\x1b[32mpass\x1b[0m"));
        assert!(colored.contains("\x1b[1;31mFAIL\x1b[0m"));
        assert!(colored.contains("\x1b[33mUNKNOWN\x1b[0m"));
        // Without the escapes it is the plain table.
        let stripped = colored
            .replace("\x1b[32m", "")
            .replace("\x1b[1;31m", "")
            .replace("\x1b[33m", "")
            .replace("\x1b[0m", "");
        assert_eq!(stripped, plain);
    }

    #[test]
    fn every_row_is_a_run() {
        let out = render(&golden_report(), false);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("RUN"));
        assert_eq!(lines.len(), 1 + 8 + 2);
        assert_eq!(lines[10], "8 runs: 3 passed, 3 failed, 2 unknown");
        assert!(lines.iter().all(|l| l == &l.trim_end()));
    }
}
