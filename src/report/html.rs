//! `report.html`: one self-contained page (no external assets, no scripts) fit to attach to a
//! qualification report — the summary, per experiment its timeline picture and a table of its
//! runs, and per run the expectations with their evidence and the integrity findings.

use super::text::{verdict_word, xml_escape};
use super::{Report, RunResult, Verdict};
use crate::timeline::Metric;
use crate::units::fmt_ms;
use std::fmt::Write;

fn badge(v: Verdict) -> String {
    format!(r#"<span class="verdict {0}">{0}</span>"#, verdict_word(v))
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}\
th{background:#f4f4f4}.verdict{font-weight:bold;padding:1px 6px;border-radius:3px}\
.pass{background:#d4edda}.fail{background:#f8d7da}.unknown{background:#fff3cd}\
td.evidence{white-space:pre-wrap;font-size:13px}pre{white-space:pre-wrap;background:#f8f8f8;padding:8px;font-size:12px}\
section.run{border-top:1px solid #ddd;margin-top:1.5em}\
td.outcome{min-width:20em}div.scroll{overflow-x:auto;max-width:100%}svg{max-width:100%;height:auto}\
p.banner{font-size:1.1em}\
div.failures{border-left:6px solid #c0392b;background:#fdecea;padding:8px 12px;margin:1em 0}\
div.failures p{margin:4px 0}div.passed{border-left:6px solid #2e7d32;background:#e8f5e9;padding:8px 12px;margin:1em 0}\
.expected{background:#e2dcf5}.harm{background:#f8d7da}.intact{background:#d4edda}\
p.next{font-weight:bold}p.context{color:#444}details{margin:4px 0}";

/// Evidence for a page: long runs of lines alike (`interleaved writers: …` twenty times) show
/// their first line, the rest folded under a count.
fn folded(text: &str) -> String {
    super::text::fold_lines(text)
        .into_iter()
        .map(|(shown, rest)| {
            let mut s = xml_escape(&shown);
            if !rest.is_empty() {
                s.push_str(&format!(
                    "\n<details><summary>{} more like it</summary>{}</details>",
                    rest.len(),
                    xml_escape(&rest.join("\n"))
                ));
            }
            s
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_section(out: &mut String, r: &RunResult, file: &str, dir: Option<&str>) {
    let _ = writeln!(
        out,
        r#"<section class="run" id="{}"><h3>{} {}</h3>"#,
        xml_escape(&r.id),
        xml_escape(&r.id),
        badge(r.verdict)
    );
    if let Some(next) = super::text::next_step(r, file, dir) {
        let _ = writeln!(out, "<p class=\"next\">next: {}</p>", xml_escape(&next));
    }
    if let Some(d) = &r.variant_description {
        let _ = writeln!(out, "<p class=\"context\">{}</p>", xml_escape(d));
    }
    let _ = writeln!(
        out,
        "<p>fault {} · remediation {} · target {} · replacement {}{}</p>",
        xml_escape(r.fault.as_str()),
        xml_escape(r.remediation.as_str()),
        xml_escape(r.target_node.as_deref().unwrap_or("—")),
        xml_escape(r.replacement_node.as_deref().unwrap_or("—")),
        r.error
            .as_ref()
            .map(|e| format!(" · <b>harness error:</b> {}", xml_escape(e)))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "<table><tr><th>expectation</th><th>expected</th><th>actual</th><th>verdict</th><th>evidence</th></tr>"
    );
    for e in &r.expectations {
        // The checker's findings are shown once, below the phases.
        let evidence = if e.name == "integrity" && r.integrity.is_some() {
            format!(
                r##"<a href="#{}-integrity">the integrity findings below</a>"##,
                xml_escape(&r.id)
            )
        } else {
            folded(&e.evidence)
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"evidence\">{evidence}</td></tr>",
            xml_escape(&super::text::measure(&e.name)),
            xml_escape(&super::outcome::expected_text(e)),
            xml_escape(&e.actual),
            badge(e.verdict),
        );
    }
    let _ = writeln!(out, "</table>");
    let lane = r
        .lane
        .map(|l| format!(" · lane {l} ({})", r.lane_nodes.join(", ")))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<p>outcome: {} · started {}{}</p>",
        xml_escape(&super::outcome::of(r).summary),
        xml_escape(r.started.as_deref().unwrap_or("—")),
        xml_escape(&lane)
    );
    // kube-controller-manager's counters that moved between the fault and the recovery: which
    // path detached the volume.
    if let Some(counters) = r.controller_counters.as_ref().filter(|c| !c.is_empty()) {
        let _ = writeln!(
            out,
            "<table><tr><th>controller-manager counter</th><th>before</th><th>after</th><th>shared with</th></tr>"
        );
        for c in counters {
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                xml_escape(&c.series),
                c.before.map_or("—".into(), |b| b.to_string()),
                c.after,
                xml_escape(
                    &c.shared_with
                        .iter()
                        .map(String::as_str)
                        .chain(
                            c.beyond_invocation
                                .then_some("invocations on the cluster's other nodes (--nodes)")
                        )
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            );
        }
        let _ = writeln!(out, "</table>");
    }
    if let Some(svg) = super::svg::instances(r) {
        instances(out, r, &svg);
    }
    let _ = writeln!(
        out,
        "<table><tr><th>phase{}</th><th>from the fault</th><th>wall clock (UTC)</th></tr>",
        r.fleet
            .as_ref()
            .and_then(|f| f.slowest_instance.as_deref())
            .map(|s| format!(" (the run's: {})", xml_escape(s)))
            .unwrap_or_default()
    );
    for p in &r.phases {
        let at = match p.since_ms {
            Some(s) => format!("{}–{} (watch gap)", fmt_ms(s), fmt_ms(p.at_ms)),
            None => fmt_ms(p.at_ms),
        };
        let wall = super::text::wall_at(r, p.at_ms).unwrap_or_else(|| "—".into());
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{at}</td><td>{wall}</td></tr>",
            p.name
        );
    }
    let _ = writeln!(out, "</table>");
    if let Some(i) = &r.integrity {
        // The evidence begins with the summary: shown once, above it.
        let rest = i
            .evidence
            .strip_prefix(i.summary.as_str())
            .unwrap_or(&i.evidence)
            .trim_start_matches('\n');
        let _ = writeln!(
            out,
            r#"<p id="{}-integrity">integrity {}: {}</p>"#,
            xml_escape(&r.id),
            badge(i.verdict),
            xml_escape(&i.summary),
        );
        // Who wrote what, as a table; the same lines are left out of the evidence below it.
        let rest = if i.incarnations.is_empty() {
            rest.to_string()
        } else {
            let _ = writeln!(
                out,
                "<table><tr><th>writer</th><th>pod (uid)</th><th>node</th><th>started</th><th>records</th><th>seqs (first…last)</th><th>acked up to</th></tr>"
            );
            for (n, w) in i.incarnations.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{} ({}…)</td><td>{}</td><td>{}</td><td>{}</td><td>{}…{}</td><td>{}</td></tr>",
                    n + 1,
                    xml_escape(&w.pod),
                    xml_escape(&w.pod_uid.chars().take(8).collect::<String>()),
                    xml_escape(&w.node),
                    xml_escape(&w.started),
                    w.records,
                    w.first_seq,
                    w.last_seq,
                    w.acked_up_to.map_or("—".into(), |s| s.to_string())
                );
            }
            let _ = writeln!(out, "</table>");
            rest.lines()
                .filter(|l| !l.starts_with("  writer "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let _ = writeln!(out, "<pre>{}</pre>", folded(&rest));
    }
    let _ = writeln!(out, "</section>");
}

/// A fleet run's instances (or replicas): a swimlane each on one shared axis, and a row each
/// with where it started and went, when it was Ready, its integrity and its verdict.
fn instances(out: &mut String, r: &RunResult, svg: &str) {
    let _ = writeln!(
        out,
        "<h4>{} instances</h4>{svg}<table><tr><th>instance</th><th>verdict</th><th>started on</th><th>back on</th><th>time-to-ready</th><th>write outage</th><th>integrity</th></tr>",
        r.instances.len()
    );
    for i in &r.instances {
        let back = match (i.unaffected, i.replacement_node.as_deref()) {
            (true, _) => "not faulted".to_string(),
            (false, Some(n)) => xml_escape(n),
            (false, None) => "—".to_string(),
        };
        let _ = writeln!(
            out,
            "<tr class=\"instance\"><td>{}</td><td>{}</td><td>{}</td><td>{back}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            xml_escape(&i.name),
            badge(i.verdict),
            xml_escape(i.start_node.as_deref().unwrap_or("—")),
            i.metrics
                .get(&Metric::TimeToReady)
                .map_or("—".into(), |ms| fmt_ms(*ms)),
            i.write_outage
                .as_ref()
                .map_or("—".into(), super::text::outage_text),
            i.integrity
                .as_ref()
                .map_or("—".to_string(), |x| badge(x.verdict)),
        );
    }
    let _ = writeln!(out, "</table>");
}

/// The data column: every harm, coloured by what was expected of it — an expected harm in its
/// own colour (never a red failure beside a green pass), an unexpected one red, intact green.
fn data_cell(r: &RunResult) -> String {
    let Some(i) = &r.integrity else {
        return "—".into();
    };
    let text = super::outcome::cells(r).1;
    let integrity = r.expectations.iter().find(|e| e.name == "integrity");
    let class = match (i.verdict, integrity.map(|e| e.verdict)) {
        (Verdict::Pass, _) => "intact",
        (_, Some(Verdict::Pass)) => "expected",
        (Verdict::Unknown, _) => "unknown",
        _ => "harm",
    };
    let label = if class == "expected" {
        format!("{text} (expected)")
    } else {
        text
    };
    format!(
        r#"<span class="verdict {class}">{}</span>"#,
        xml_escape(&label)
    )
}

/// The whole report as one HTML page.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let runs: Vec<&RunResult> = report.experiments.iter().flat_map(|e| &e.runs).collect();
    let count = |v: Verdict| runs.iter().filter(|r| r.verdict == v).count();
    let title = xml_escape(&super::text::title(report));
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title><style>{STYLE}</style></head><body>"
    );
    let _ = writeln!(out, "<h1>{title}</h1>");
    // What failed, first: each run and what it missed, and what to do about it.
    let banner = super::text::verdict_banner(&runs);
    match banner.is_empty() {
        false => {
            let _ = write!(out, "<div class=\"failures\">");
            for (v, l) in &banner {
                match v {
                    Verdict::Pass => write!(out, "<p>{}</p>", xml_escape(l)),
                    _ => write!(out, "<p><b>{}</b></p>", xml_escape(l)),
                }
                .expect("writing to a String");
            }
            let _ = writeln!(out, "</div>");
        }
        true if !runs.is_empty() => {
            let _ = write!(
                out,
                "<div class=\"passed\"><p><b>every run met its expectations</b></p>"
            );
            for n in super::text::pass_notes(&runs) {
                let _ = write!(out, "<p>{}</p>", xml_escape(&n));
            }
            let _ = writeln!(out, "</div>");
        }
        true => {}
    }
    if let Some(o) = &report.origin {
        let _ = writeln!(
            out,
            "<p class=\"context\">{}</p>",
            xml_escape(&super::text::origin_line(o))
        );
    }
    let _ = writeln!(
        out,
        "<p class=\"banner\">{} · {} {}: {} passed, {} failed, {} unknown · {}</p>",
        xml_escape(&report.tool),
        runs.len(),
        if runs.len() == 1 { "run" } else { "runs" },
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Unknown),
        xml_escape(&super::outcome::banner(&runs))
    );
    // What summary.md says besides the tables: when, the invocation's wall time and lanes.
    if let Some(first) = runs.iter().filter_map(|r| r.started.as_deref()).min() {
        let _ = writeln!(out, "<p>Started {}</p>", xml_escape(first));
    }
    if let Some(inv) = &report.invocation {
        let _ = writeln!(
            out,
            "<p>{}</p>",
            xml_escape(&super::markdown::invocation_line(inv))
        );
    }
    for exp in &report.experiments {
        let _ = writeln!(
            out,
            "<h2>{}</h2><p><code>{}</code></p>",
            xml_escape(&exp.name),
            xml_escape(&exp.file)
        );
        if let Some(d) = &exp.description {
            let _ = writeln!(out, "<p class=\"context\">{}</p>", xml_escape(d));
        }
        if let Some(env) = exp.runs.iter().find_map(|r| r.environment.as_ref()) {
            let _ = writeln!(
                out,
                "<p>{}</p>",
                xml_escape(&super::markdown::environment_line(env))
            );
        }
        if let Some(line) = super::markdown::wall_time(&exp.runs) {
            let _ = writeln!(out, "<p>{}</p>", xml_escape(&line));
        }
        out.push_str(&super::svg::experiment(exp));
        if let Some(svg) = super::svg::experiment_breakdown(exp) {
            let _ = writeln!(out, "<h4>where the time went</h4>");
            out.push_str(&svg);
        }
        // The run table leads with what a reader decides on; every phase time is one click
        // further, in the table below it.
        let _ = writeln!(
            out,
            "<div class=\"scroll\"><table><tr><th>run</th><th>verdict</th><th>what happened</th><th>time-to-ready</th><th>write-outage</th><th>data</th></tr>"
        );
        for r in &exp.runs {
            let outcome = super::outcome::of(r).summary;
            // The outcome already says what was expected; what no expectation checked is said
            // again, in italics.
            let note = super::outcome::pass_note(r)
                .filter(|n| r.verdict == Verdict::Pass && n.contains("unchecked"))
                .map(|n| format!("<br><em>{}</em>", xml_escape(&n)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                r##"<tr><td><a href="#{0}">{0}</a><br><small>{1}</small></td><td>{2}</td><td class="outcome">{3}{note}</td><td>{4}</td><td>{5}</td><td>{6}</td></tr>"##,
                xml_escape(&r.id),
                xml_escape(r.remediation.as_str()),
                badge(r.verdict),
                xml_escape(&outcome),
                r.metrics
                    .get(&Metric::TimeToReady)
                    .map_or("—".into(), |ms| fmt_ms(*ms)),
                r.write_outage
                    .as_ref()
                    .map_or("—".into(), super::text::outage_text),
                data_cell(r)
            );
        }
        let _ = writeln!(out, "</table></div>");
        let mut header = "<tr><th>run</th>".to_string();
        for m in Metric::ALL {
            let _ = write!(header, "<th>{}</th>", m.name());
        }
        let _ = writeln!(
            out,
            "<details><summary>every phase time</summary><div class=\"scroll\"><table>{header}</tr>"
        );
        for r in &exp.runs {
            let mut row = format!("<tr><td>{}</td>", xml_escape(&r.id));
            for m in Metric::ALL {
                let _ = write!(
                    row,
                    "<td>{}</td>",
                    r.metrics.get(&m).map_or("—".into(), |ms| fmt_ms(*ms))
                );
            }
            let _ = writeln!(out, "{row}</tr>");
        }
        let _ = writeln!(out, "</table></div></details>");
        for r in &exp.runs {
            run_section(&mut out, r, &exp.file, report.dir.as_deref());
        }
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_of_a_recording_is_self_contained() {
        let path = format!(
            "{}/tests/fixtures/runs/network-partition/results.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let rep = crate::report::json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let html = render(&rep);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(!html.contains("<script"), "no scripts");
        assert!(!html.contains(" src="), "no external assets");
        assert!(html.contains(r#"class="phase""#));
        assert!(html.contains("split brain"));
        assert_eq!(html.matches("<section class=\"run\"").count(), 2);
        assert!(!html.contains(r#"<g class="instance""#), "no fleet here");
    }

    /// A fleet run (the recorded ten ledgers): a swimlane per instance on one axis and a table
    /// row per instance; the replicated recording marks the replicas no fault took.
    #[test]
    fn a_fleet_gets_a_swimlane_per_instance() {
        let load = |name: &str| {
            let path = format!(
                "{}/tests/fixtures/runs/{name}/results.json",
                env!("CARGO_MANIFEST_DIR")
            );
            crate::report::json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
        };
        let rep = load("fleet");
        let fleet_runs: usize = rep.experiments[0]
            .runs
            .iter()
            .map(|r| r.instances.len())
            .sum();
        assert_eq!(fleet_runs, 20, "two runs of ten instances");
        let html = render(&rep);
        assert_eq!(html.matches(r#"<g class="instance""#).count(), 20);
        assert_eq!(html.matches(r#"<tr class="instance">"#).count(), 20);
        assert!(html.contains(r#"data-id="ledger-i9""#));
        let rep = load("replicated");
        let html = render(&rep);
        assert_eq!(
            html.matches("not faulted").count(),
            2 * 2 * 3,
            "2 runs × 2 replicas × (lane, its tooltip, table)"
        );
    }
}
