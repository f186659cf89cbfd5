//! Trends across invocations (`nodedown history DIR…`): per variant, each run's verdict,
//! time-to-ready, write outage and data over the invocations given, the latest first. Pure:
//! built from the invocations' reports, each named by its directory; rendered for a terminal,
//! as Markdown, as one HTML page with a small chart per variant, or as JSON.

use super::outcome::Data;
use super::text::xml_escape;
use super::{Report, Verdict};
use crate::units::fmt_ms;
use serde::Serialize;
use std::fmt::Write;

/// One run of a variant in one invocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    /// The invocation's directory, as given.
    pub invocation: String,
    /// When the run started (RFC 3339), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    pub repetition: u32,
    pub verdict: Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_to_ready_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_outage_ms: Option<u64>,
    /// The write outage was still open when the watch ended (`writeOutageMs` a lower bound).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub write_outage_open: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub data: Vec<Data>,
    /// The run's resolved spec: a change between points means the variant itself changed.
    pub spec_hash: String,
}

/// A variant across the invocations: its points, the latest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantHistory {
    pub experiment: String,
    pub variant: String,
    pub points: Vec<Point>,
}

impl VariantHistory {
    /// The latest point that passed, when one did.
    pub fn last_passed(&self) -> Option<&Point> {
        self.points.iter().find(|p| p.verdict == Verdict::Pass)
    }

    /// How many distinct specs its points ran (1: the variant never changed).
    pub fn specs(&self) -> usize {
        let mut seen: Vec<&str> = Vec::new();
        for p in &self.points {
            if !seen.contains(&p.spec_hash.as_str()) {
                seen.push(&p.spec_hash);
            }
        }
        seen.len()
    }
}

/// The history of every variant of the invocations `reports` (each with its directory), in
/// the order variants are first seen; points the latest first (by start time, then by the
/// order given, later given = later).
pub fn of(reports: &[(String, Report)]) -> Vec<VariantHistory> {
    let mut out: Vec<VariantHistory> = Vec::new();
    // (sort key, order given) of each point, to order them afterwards.
    let mut keys: Vec<Vec<(Option<String>, usize)>> = Vec::new();
    for (i, (dir, report)) in reports.iter().enumerate() {
        for exp in &report.experiments {
            for r in &exp.runs {
                let point = Point {
                    invocation: dir.clone(),
                    started: r.started.clone(),
                    repetition: r.repetition,
                    verdict: r.verdict,
                    time_to_ready_ms: r
                        .metrics
                        .get(&crate::timeline::Metric::TimeToReady)
                        .copied(),
                    write_outage_ms: r.write_outage.as_ref().map(|o| o.duration_ms),
                    write_outage_open: r.write_outage.as_ref().is_some_and(|o| !o.restored),
                    data: r
                        .outcome
                        .clone()
                        .unwrap_or_else(|| super::outcome::of(r))
                        .data,
                    spec_hash: r.spec_hash.clone(),
                };
                let at = out
                    .iter()
                    .position(|v| v.experiment == exp.name && v.variant == r.variant);
                let at = match at {
                    Some(at) => at,
                    None => {
                        out.push(VariantHistory {
                            experiment: exp.name.clone(),
                            variant: r.variant.clone(),
                            points: Vec::new(),
                        });
                        keys.push(Vec::new());
                        out.len() - 1
                    }
                };
                keys[at].push((r.started.clone(), i));
                out[at].points.push(point);
            }
        }
    }
    for (v, k) in out.iter_mut().zip(keys) {
        let mut both: Vec<((Option<String>, usize), Point)> =
            k.into_iter().zip(std::mem::take(&mut v.points)).collect();
        // RFC 3339 in UTC sorts as text; a point without a time sorts by the order given.
        both.sort_by(|(a, _), (b, _)| b.cmp(a));
        v.points = both.into_iter().map(|(_, p)| p).collect();
    }
    out
}

fn verdict_mark(v: Verdict) -> char {
    match v {
        Verdict::Pass => '✓',
        Verdict::Fail => '✗',
        Verdict::Unknown => '?',
    }
}

/// The verdicts the latest first, one mark each: `✓✓✗?✓`.
fn marks(v: &VariantHistory) -> String {
    v.points.iter().map(|p| verdict_mark(p.verdict)).collect()
}

/// A point's write outage: `21.1s`, `≥ 1m30s` (still open when the watch ended), `—`.
fn outage(p: &Point) -> String {
    match (p.write_outage_ms, p.write_outage_open) {
        (Some(ms), true) => crate::units::fmt_at_least(ms),
        (Some(ms), false) => fmt_ms(ms),
        (None, _) => "—".into(),
    }
}

fn ready(p: &Point) -> String {
    p.time_to_ready_ms.map_or("—".into(), fmt_ms)
}

/// The time-to-ready values the latest first: `25.7s 24.1s — 26.0s`.
fn readies(v: &VariantHistory, n: usize) -> String {
    let mut s: Vec<String> = v.points.iter().take(n).map(ready).collect();
    if v.points.len() > n {
        s.push("…".into());
    }
    s.join(" ")
}

fn pass_rate(v: &VariantHistory) -> String {
    let passed = v
        .points
        .iter()
        .filter(|p| p.verdict == Verdict::Pass)
        .count();
    format!("{passed}/{}", v.points.len())
}

fn last_passed(v: &VariantHistory) -> String {
    match v.last_passed() {
        Some(p) if std::ptr::eq(p, &v.points[0]) => "latest".into(),
        // To the minute: `2026-12-04 07:21` (UTC).
        Some(p) => p.started.as_deref().map_or_else(
            || p.invocation.clone(),
            |t| t.chars().take(16).collect::<String>().replace('T', " "),
        ),
        None => "never".into(),
    }
}

/// `same` when every point ran one spec, else how many.
fn spec_cell(v: &VariantHistory) -> String {
    match v.specs() {
        1 => "same".into(),
        n => format!("{n} specs"),
    }
}

/// For a terminal: a row per variant — its verdicts the latest first (✓ ✗ ?), pass count,
/// when it last passed, its time-to-ready over the latest runs — cut to `width`.
pub fn table(history: &[VariantHistory], invocations: usize, width: Option<usize>) -> String {
    let rows: Vec<Vec<String>> = history
        .iter()
        .map(|v| {
            vec![
                format!("{}/{}", v.experiment, v.variant),
                marks(v),
                pass_rate(v),
                last_passed(v),
                spec_cell(v),
                readies(v, 8),
            ]
        })
        .collect();
    let mut out = format!(
        "{} variant{} over {invocations} invocation{} (latest first: ✓ pass, ✗ fail, ? unknown)\n",
        history.len(),
        if history.len() == 1 { "" } else { "s" },
        if invocations == 1 { "" } else { "s" }
    );
    out.push_str(&super::table::grid(
        &[
            "VARIANT",
            "VERDICTS",
            "PASSED",
            "LAST-PASSED",
            "SPEC",
            "TIME-TO-READY",
        ],
        &rows,
        width,
    ));
    out
}

/// As Markdown (a job summary).
pub fn markdown(history: &[VariantHistory], invocations: usize) -> String {
    let mut out = format!(
        "## nodedown history: {} variant(s) over {invocations} invocation(s)\n\nLatest first: ✅ pass, ❌ fail, ❔ unknown.\n\n| variant | verdicts | passed | last passed | spec | time-to-ready | write-outage |\n|---|---|--:|---|---|---|---|\n",
        history.len()
    );
    for v in history {
        let icons: String = v
            .points
            .iter()
            .map(|p| match p.verdict {
                Verdict::Pass => "✅",
                Verdict::Fail => "❌",
                Verdict::Unknown => "❔",
            })
            .collect();
        let outages: Vec<String> = v.points.iter().take(8).map(outage).collect();
        let _ = writeln!(
            out,
            "| `{}/{}` | {icons} | {} | {} | {} | {} | {} |",
            v.experiment,
            v.variant,
            pass_rate(v),
            last_passed(v),
            spec_cell(v),
            readies(v, 8),
            outages.join(" ")
        );
    }
    out
}

/// One page: per variant a small chart of its time-to-ready across invocations (oldest on the
/// left, the latest on the right; each point coloured by its verdict, a run that never got
/// Ready drawn at the top as ✕, a change of spec as a dashed line), and a table of its points.
pub fn html(history: &[VariantHistory], invocations: usize) -> String {
    let mut out = String::new();
    let title = format!(
        "nodedown history: {} variant{} over {invocations} invocation{}",
        history.len(),
        if history.len() == 1 { "" } else { "s" },
        if invocations == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse;margin:.5em 0 2em}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left}}th{{background:#f4f4f4}}.pass{{background:#d4edda}}.fail{{background:#f8d7da}}.unknown{{background:#fff3cd}}</style></head><body><h1>{t}</h1><p>Latest first in the tables; each chart runs from the oldest (left) to the latest (right).</p>",
        t = xml_escape(&title)
    );
    for v in history {
        let _ = writeln!(
            out,
            "<h2>{}/{}</h2><p>passed {} · last passed {}{}</p>",
            xml_escape(&v.experiment),
            xml_escape(&v.variant),
            pass_rate(v),
            xml_escape(&last_passed(v)),
            if v.specs() > 1 {
                format!(" · the variant's spec changed ({} specs)", v.specs())
            } else {
                String::new()
            }
        );
        out.push_str(&chart(v));
        let _ = writeln!(
            out,
            "<table><tr><th>invocation</th><th>started</th><th>verdict</th><th>time-to-ready</th><th>write-outage</th><th>data</th><th>spec</th></tr>"
        );
        for p in &v.points {
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td class=\"{v}\">{v}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                xml_escape(&p.invocation),
                xml_escape(p.started.as_deref().unwrap_or("—")),
                ready(p),
                outage(p),
                p.data
                    .iter()
                    .map(|d| d.word())
                    .collect::<Vec<_>>()
                    .join(" + "),
                xml_escape(&p.spec_hash),
                v = p.verdict.as_str(),
            );
        }
        let _ = writeln!(out, "</table>");
    }
    out.push_str("</body></html>\n");
    out
}

/// A variant's time-to-ready across its points as a small SVG, oldest left.
fn chart(v: &VariantHistory) -> String {
    let (w, h, left, top, plot_h) = (520.0, 130.0, 56.0, 18.0, 80.0);
    let pts: Vec<&Point> = v.points.iter().rev().collect();
    let max = pts
        .iter()
        .filter_map(|p| p.time_to_ready_ms)
        .max()
        .unwrap_or(1_000)
        .max(1_000);
    let step = if pts.len() > 1 {
        (w - left - 20.0) / (pts.len() - 1) as f64
    } else {
        0.0
    };
    let x = |i: usize| left + 10.0 + step * i as f64;
    let y = |ms: u64| top + plot_h - ms as f64 / max as f64 * plot_h;
    let mut svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" role="img" aria-label="time-to-ready across invocations"><line x1="{left}" x2="{left}" y1="{top}" y2="{}" stroke="#999"/><line x1="{left}" x2="{}" y1="{}" y2="{}" stroke="#999"/><text x="{}" y="{}" font-size="10" text-anchor="end">{}</text><text x="{}" y="{}" font-size="10" text-anchor="end">0s</text><text x="{left}" y="{}" font-size="10" fill="#666">time-to-ready, oldest → latest ({} runs)</text>"##,
        top + plot_h,
        w - 10.0,
        top + plot_h,
        top + plot_h,
        left - 4.0,
        top + 4.0,
        fmt_ms(max),
        left - 4.0,
        top + plot_h + 4.0,
        top + plot_h + 24.0,
        pts.len()
    );
    // The line joins runs of one spec that got Ready; a run that did not breaks it.
    let mut path = String::new();
    let mut pen = false;
    for (i, p) in pts.iter().enumerate() {
        if i > 0 && pts[i - 1].spec_hash != p.spec_hash {
            let bx = x(i) - step / 2.0;
            let _ = write!(
                svg,
                r##"<line class="spec-change" x1="{bx:.1}" x2="{bx:.1}" y1="{top}" y2="{}" stroke="#888" stroke-dasharray="3,3"><title>the variant's spec changed here</title></line>"##,
                top + plot_h
            );
            pen = false;
        }
        match p.time_to_ready_ms {
            Some(ms) => {
                let _ = write!(
                    path,
                    "{}{:.1},{:.1} ",
                    if pen { "L" } else { "M" },
                    x(i),
                    y(ms)
                );
                pen = true;
            }
            None => pen = false,
        }
    }
    if !path.is_empty() {
        let _ = write!(
            svg,
            r##"<path d="{}" fill="none" stroke="#2471a3" stroke-width="1.5"/>"##,
            path.trim_end()
        );
    }
    for (i, p) in pts.iter().enumerate() {
        let color = match p.verdict {
            Verdict::Pass => "#1e8449",
            Verdict::Fail => "#c0392b",
            Verdict::Unknown => "#b9770e",
        };
        let what = format!(
            "{} {}: {} — {}",
            p.invocation,
            p.started.as_deref().unwrap_or(""),
            p.verdict.as_str(),
            ready(p)
        );
        match p.time_to_ready_ms {
            Some(ms) => {
                let _ = write!(
                    svg,
                    r##"<circle class="point {v}" cx="{:.1}" cy="{:.1}" r="4" fill="{color}"><title>{}</title></circle>"##,
                    x(i),
                    y(ms),
                    xml_escape(&what),
                    v = p.verdict.as_str()
                );
            }
            None => {
                let _ = write!(
                    svg,
                    r##"<text class="point never {v}" x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="{color}">✕<title>{}</title></text>"##,
                    x(i),
                    top - 4.0,
                    xml_escape(&what),
                    v = p.verdict.as_str()
                );
            }
        }
    }
    // The latest point's value, written.
    if let Some(last) = pts.last() {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{}" font-size="10" text-anchor="end" fill="#222">latest {}</text>"##,
            w - 10.0,
            top + plot_h + 24.0,
            ready(last)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::recorded;

    /// Three invocations of one experiment (the recorded node-shutdown run, and two copies
    /// with its taint run made later, one of them failing its bound — synthetic, derived from
    /// the recording): per variant the latest first, the failure in its place, "last passed".
    #[test]
    fn three_invocations_of_one_experiment() {
        let first = recorded("node-shutdown");
        let later = |day: &str, verdict: Verdict, ready: u64| {
            let mut r = first.clone();
            for run in &mut r.experiments[0].runs {
                run.started = run
                    .started
                    .as_ref()
                    .map(|s| s.replacen("2026-12-03", day, 1));
                if run.variant == "out-of-service-taint" {
                    run.verdict = verdict;
                    run.metrics
                        .insert(crate::timeline::Metric::TimeToReady, ready);
                }
            }
            r
        };
        let reports = vec![
            ("runs/a".to_string(), first.clone()),
            (
                "runs/c".to_string(),
                later("2026-12-05", Verdict::Fail, 31_000),
            ),
            (
                "runs/b".to_string(),
                later("2026-12-04", Verdict::Pass, 24_000),
            ),
        ];
        let h = of(&reports);
        assert_eq!(h.len(), 2, "{h:?}");
        let taint = h
            .iter()
            .find(|v| v.variant == "out-of-service-taint")
            .unwrap();
        let dirs: Vec<&str> = taint.points.iter().map(|p| p.invocation.as_str()).collect();
        assert_eq!(
            dirs,
            ["runs/c", "runs/b", "runs/a"],
            "latest first by start time"
        );
        assert_eq!(marks(taint), "✗✓✓");
        assert_eq!(taint.last_passed().unwrap().invocation, "runs/b");
        let t = table(&h, 3, Some(100));
        assert!(t.contains("node-shutdown/out-of-service-taint  ✗✓✓"), "{t}");
        assert!(t.contains("31.0s 24.0s 25.7s"), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
        let page = html(&h, 3);
        assert_eq!(page.matches("<svg").count(), 2);
        assert_eq!(page.matches(r#"class="point fail""#).count(), 1);
        // The none variant never got Ready: its points are drawn as never, not at zero.
        assert_eq!(page.matches(r#"class="point never pass""#).count(), 3);
        let md = markdown(&h, 3);
        assert!(
            md.contains("| `node-shutdown/out-of-service-taint` | ❌✅✅ | 2/3 |"),
            "{md}"
        );
    }
}
