//! The compact terminal table: the runs grouped under their experiment, one row each, then a
//! one-line tally and, for every run that did not pass, what failed and what to do next.
//!
//! ```text
//! node-shutdown  experiments/node-shutdown.yaml
//!   VARIANT               VERDICT  NOT-READY  READY          WRITE-OUTAGE            DATA    DETAIL
//!   none                  pass     16.3s      never (1m30s)  ≥ 1m30s (not restored)  intact  as expected: not recovered
//!   out-of-service-taint  FAIL     16.8s      25.7s          26.7s                   intact  time-to-ready 25.7s > 20s; wr…
//!
//! 2 runs: 1 passed, 1 failed, 0 unknown · 1 recovered, 1 not recovered · data: 2 nothing lost
//! FAIL node-shutdown/out-of-service-taint/1: time-to-ready 25.7s > 20s; write-outage 26.7s > 15s
//!   next: a bound was missed once: rerun `nodedown run …`
//! ```
//! Times are from the fault. The verdict says whether the run met its expectations; the
//! columns after it say what happened (`report::outcome`): READY is `never (W)` when no
//! replacement was Ready in the W the failover was watched (`7/10 by W` for a fleet), DATA is
//! the ledger's, every harm it found (`n/a` without a ledger: a writer workload's data is not
//! checked). DETAIL names the failed expectations (or why the run is unknown), and for a run
//! that passed what it did that a green `pass` would hide; it is cut with `…` to fit the
//! screen's width, and every run that did not pass is written out whole below the tally. With
//! `color`, the verdict is colored with ANSI escapes (the caller decides: a terminal, and
//! `NO_COLOR` unset).

use super::text::problem;
use super::{Report, RunResult, Verdict};
use crate::timeline::Metric;
use crate::units::fmt_ms;

const HEADER: [&str; 7] = [
    "VARIANT",
    "VERDICT",
    "NOT-READY",
    "READY",
    "WRITE-OUTAGE",
    "DATA",
    "DETAIL",
];

/// The rows' indent under their experiment's line.
const INDENT: &str = "  ";
/// A grid's last column is never cut to fewer characters than this (the line overflows).
const GRID_MIN: usize = 10;
/// With less room than this DETAIL goes on a line of its own under its row.
const DETAIL_MIN: usize = 24;

/// How the table is laid out.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// ANSI colours on the verdicts.
    pub color: bool,
    /// The screen's width in characters (`None`: no limit, nothing cut).
    pub width: Option<usize>,
    /// The directory the runs are in, as the user named it (for `next:` lines).
    pub dir: Option<String>,
}

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

fn row(run: &RunResult, numbered: bool) -> [String; 7] {
    let (ready, data) = super::outcome::cells(run);
    let detail = problem(run).or_else(|| super::outcome::pass_note(run));
    let ledger = run.integrity.is_some() || run.write_outage.is_some();
    let na = |s: String| if ledger { s } else { "n/a".to_string() };
    [
        if numbered {
            format!("{} #{}", run.variant, run.repetition)
        } else {
            run.variant.clone()
        },
        verdict_text(run.verdict).to_string(),
        run.metrics
            .get(&Metric::TimeToNotReady)
            .map_or_else(|| "—".to_string(), |ms| fmt_ms(*ms)),
        ready,
        // `≥ D`: still down when the watch ended (the legend under the table says so).
        na(run.write_outage.as_ref().map_or_else(
            || "—".to_string(),
            |o| {
                if o.restored {
                    fmt_ms(o.duration_ms)
                } else {
                    crate::units::fmt_at_least(o.duration_ms)
                }
            },
        )),
        na(data),
        detail.unwrap_or_default().replace(['\r', '\n'], " "),
    ]
}

/// A plain terminal grid for the other tables (a qualification sheet, a simulated curve): the
/// header, then a row each, columns two spaces apart; the last column is cut with `…` to fit
/// `width` (never below [`GRID_MIN`]). No colour.
pub fn grid(header: &[&str], rows: &[Vec<String>], width: Option<usize>) -> String {
    let n = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    if let Some(width) = width {
        let before: usize = widths[..n - 1].iter().sum::<usize>() + 2 * (n - 1);
        widths[n - 1] = widths[n - 1].min(width.saturating_sub(before).max(GRID_MIN));
    }
    let line = |cells: Vec<String>| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            let c = if i == n - 1 {
                cut(c, widths[i])
            } else {
                c.clone()
            };
            l.push_str(&c);
            l.push_str(&" ".repeat(widths[i].saturating_sub(c.chars().count()) + 2));
        }
        l.trim_end().to_string()
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.clone()));
        out.push('\n');
    }
    out
}

/// An experiment's rows: each run's verdict and cells.
type Rows = Vec<(Verdict, [String; 7])>;

/// `s` cut to `n` characters, the last one `…` when anything was cut.
pub(crate) fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `text` broken into lines of at most `width` characters at spaces, every line after the
/// first indented by `indent` (a word longer than a line stays whole).
pub(crate) fn wrap(text: &str, width: Option<usize>, indent: &str) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut empty = true;
    for word in text.split(' ') {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
            line.push_str(indent);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(line);
    lines
        .iter()
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The report as a table for a terminal.
pub fn render(report: &Report, layout: &Layout) -> String {
    let runs: Vec<&RunResult> = report.experiments.iter().flat_map(|e| &e.runs).collect();
    // Rows per experiment; one set of widths, so the groups line up.
    let groups: Vec<(&super::ExperimentResult, Rows)> = report
        .experiments
        .iter()
        .map(|e| {
            let numbered = e.runs.iter().any(|r| r.repetition > 1);
            let rows = e
                .runs
                .iter()
                .map(|r| (r.verdict, row(r, numbered)))
                .collect();
            (e, rows)
        })
        .collect();
    let mut widths = HEADER.map(|h| h.chars().count());
    for (_, rows) in &groups {
        for (_, cells) in rows {
            for (w, c) in widths.iter_mut().zip(cells) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    // DETAIL gets what the screen leaves of it; with too little, a line of its own under its
    // row, cut to the width.
    let before_detail: usize =
        INDENT.len() + widths[..6].iter().sum::<usize>() + 2 * (HEADER.len() - 1);
    let room = layout.width.map(|w| w.saturating_sub(before_detail));
    let below = room.is_some_and(|r| r < DETAIL_MIN);
    if let Some(room) = room {
        widths[6] = widths[6].min(room);
    }
    let columns = if below { 6 } else { 7 };
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
    let line_of = |cells: &[String], verdict: Option<Verdict>| {
        let mut line = INDENT.to_string();
        for (i, c) in cells.iter().take(columns).enumerate() {
            let c = if i == 6 { cut(c, widths[6]) } else { c.clone() };
            let padded = pad(&c, widths[i]);
            match verdict {
                // Color the word only, so the padding keeps the columns aligned.
                Some(v) if i == 1 && layout.color => {
                    line.push_str(&padded.replacen(c.as_str(), &paint(v, &c), 1))
                }
                _ => line.push_str(&padded),
            }
            line.push_str("  ");
        }
        line.trim_end().to_string()
    };

    let mut out = String::new();
    for (i, (exp, rows)) in groups.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{}  {}\n", exp.name, exp.file));
        out.push_str(&line_of(&HEADER.map(String::from), None));
        out.push('\n');
        for (verdict, cells) in rows {
            out.push_str(&line_of(cells, Some(*verdict)));
            out.push('\n');
            if below && !cells[6].is_empty() {
                let w = layout.width.unwrap_or(usize::MAX);
                out.push_str(&cut(&format!("{INDENT}{INDENT}{}", cells[6]), w));
                out.push('\n');
            }
        }
    }

    let count = |v: Verdict| runs.iter().filter(|r| r.verdict == v).count();
    let (pass, fail, unknown) = (
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Unknown),
    );
    let tally = |n: usize, word: &str, v: Verdict| {
        let s = format!("{n} {word}");
        if layout.color && n > 0 {
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
    let open = runs
        .iter()
        .any(|r| r.write_outage.as_ref().is_some_and(|o| !o.restored));
    if open {
        out.push_str("≥ D: the writes were still down when the watch ended (D is a lower bound)\n");
    }
    // Every run that did not pass, whole, and what to do about it.
    for exp in &report.experiments {
        for r in exp.runs.iter().filter(|r| r.verdict != Verdict::Pass) {
            let word = verdict_text(r.verdict);
            let word = if layout.color {
                paint(r.verdict, word)
            } else {
                word.to_string()
            };
            let what = problem(r).unwrap_or_default().replace(['\r', '\n'], " ");
            out.push_str(&wrap(
                &format!("{word} {}: {what}", r.id),
                layout.width,
                INDENT,
            ));
            out.push('\n');
            if let Some(next) = super::text::next_step(r, &exp.file, layout.dir.as_deref()) {
                out.push_str(&wrap(
                    &format!("{INDENT}next: {next}"),
                    layout.width,
                    "        ",
                ));
                out.push('\n');
            }
        }
    }
    for n in &report.not_run {
        out.push_str(&wrap(
            &format!("not run: {}/{}: {}", n.experiment, n.variant, n.reason),
            layout.width,
            INDENT,
        ));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{check_golden, golden_report};

    fn plain() -> Layout {
        Layout::default()
    }

    #[test]
    fn golden() {
        check_golden("report.txt", &render(&golden_report(), &plain()));
    }

    #[test]
    fn color_only_wraps_words_and_keeps_alignment() {
        let report = golden_report();
        let plain_text = render(&report, &plain());
        let colored = render(
            &report,
            &Layout {
                color: true,
                ..plain()
            },
        );
        assert!(!plain_text.contains('\x1b'));
        assert!(colored.contains("\x1b[32mpass\x1b[0m"));
        assert!(colored.contains("\x1b[1;31mFAIL\x1b[0m"));
        assert!(colored.contains("\x1b[33mUNKNOWN\x1b[0m"));
        // Without the escapes it is the plain table.
        let stripped = colored
            .replace("\x1b[32m", "")
            .replace("\x1b[1;31m", "")
            .replace("\x1b[33m", "")
            .replace("\x1b[0m", "");
        assert_eq!(stripped, plain_text);
    }

    #[test]
    fn every_row_is_a_run_under_its_experiment() {
        let out = render(&golden_report(), &plain());
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("node-shutdown  "));
        assert!(lines[1].starts_with("  VARIANT"));
        let rows = lines.iter().filter(|l| {
            l.starts_with("  ") && !l.starts_with("  VARIANT") && !l.starts_with("  next:")
        });
        assert_eq!(rows.count(), 8);
        assert!(
            lines.contains(&"8 runs: 3 passed, 3 failed, 2 unknown · 5 recovered, 3 not recovered")
        );
        assert!(lines.iter().all(|l| l == &l.trim_end()));
        // Each run that did not pass is written out whole below, with what to do next.
        let below = lines
            .iter()
            .filter(|l| l.starts_with("FAIL ") || l.starts_with("UNKNOWN "))
            .count();
        assert_eq!(below, 5);
        assert!(out.contains("  next: "));
    }

    /// The width a terminal gives is kept: DETAIL is cut with `…` (on a line of its own under
    /// its row when the columns leave it too little room), and every run that failed is still
    /// named in full below the tally.
    #[test]
    fn the_table_fits_the_width_it_is_given() {
        let report = golden_report();
        for width in [80, 100, 120] {
            let out = render(
                &report,
                &Layout {
                    width: Some(width),
                    ..plain()
                },
            );
            for l in out.lines() {
                assert!(
                    l.chars().count() <= width,
                    "{} chars at {width}: {l}",
                    l.chars().count()
                );
            }
            assert!(out.contains('…'), "{out}");
            assert!(
                out.contains(
                    "FAIL strict-recovery/baseline/1: not recovered (expected recovered);"
                ),
                "{out}"
            );
        }
        // In a column at 120, under the row at 80.
        let at = |w| {
            render(
                &report,
                &Layout {
                    width: Some(w),
                    ..plain()
                },
            )
        };
        assert!(at(120)
            .lines()
            .any(|l| l.contains("pass") && l.contains("as expected: no")));
        assert!(at(80)
            .lines()
            .any(|l| l.starts_with("    as expected: not recovered")));
    }
}
