//! The compact terminal table: one row per run, then a one-line tally.
//!
//! ```text
//! RUN                            VERDICT  NOT-READY  READY          WRITES-DOWN             DATA                     DETAIL
//! network-partition/unfenced/1   pass     16.8s      27.7s          28.9s                   split brain (2 writers)  as expected: split brain
//! node-shutdown/none/1           pass     16.9s      never (1m30s)  ≥ 1m30s (not restored)  intact                   as expected: not recovered
//! ```
//! Times are from the fault. The verdict says whether the run met its expectations; the
//! columns after it say what happened (`report::outcome`): READY is `never (W)` when no
//! replacement was Ready in the W the failover was watched (`7/10 by W` for a fleet), DATA is
//! the ledger's (`—` without one). DETAIL names the failed expectations (or why the run is
//! unknown), and for a run that passed what it did that a green `pass` would hide. With
//! `color`, the verdict is colored with ANSI escapes (the caller decides: a terminal, and
//! `NO_COLOR` unset). The tally ends with the invocation's outcome banner.

use super::text::problem;
use super::{Report, RunResult, Verdict};
use crate::timeline::Metric;
use crate::units::fmt_ms;

const HEADER: [&str; 7] = [
    "RUN",
    "VERDICT",
    "NOT-READY",
    "READY",
    "WRITES-DOWN",
    "DATA",
    "DETAIL",
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

fn row(run: &RunResult) -> [String; 7] {
    let (ready, data) = super::outcome::cells(run);
    let detail = problem(run).or_else(|| super::outcome::pass_note(run));
    [
        run.id.clone(),
        verdict_text(run.verdict).to_string(),
        run.metrics
            .get(&Metric::TimeToNotReady)
            .map_or_else(|| "—".to_string(), |ms| fmt_ms(*ms)),
        ready,
        run.write_outage
            .as_ref()
            .map_or_else(|| "—".to_string(), super::text::outage_text),
        data,
        detail.unwrap_or_default().replace(['\r', '\n'], " "),
    ]
}

/// The report as a table for a terminal.
pub fn render(report: &Report, color: bool) -> String {
    let runs: Vec<&RunResult> = report.experiments.iter().flat_map(|e| &e.runs).collect();
    let rows: Vec<(Verdict, [String; 7])> = runs.iter().map(|r| (r.verdict, row(r))).collect();
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
        "\n{} {}: {}, {}, {} · {}\n",
        runs.len(),
        if runs.len() == 1 { "run" } else { "runs" },
        tally(pass, "passed", Verdict::Pass),
        tally(fail, "failed", Verdict::Fail),
        tally(unknown, "unknown", Verdict::Unknown),
        super::outcome::banner(&runs),
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
        assert_eq!(
            lines[10],
            "8 runs: 3 passed, 3 failed, 2 unknown · 5 recovered, 3 not recovered"
        );
        assert!(lines.iter().all(|l| l == &l.trim_end()));
    }
}
