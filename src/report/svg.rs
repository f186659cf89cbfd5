//! Timelines to look at (pure SVG, no external assets): one row per run on a time axis from
//! time zero — the fault window, a mark per phase, the write outage as a band — and one picture
//! per experiment that stacks its runs on a shared axis so remediations compare at a glance.

use super::text::xml_escape;
use super::{ExperimentResult, InstanceResult, PhaseResult, RunResult, Verdict, WriteOutage};
use crate::timeline::{Part, Phase, Segment};
use crate::units::fmt_ms;
use std::fmt::Write;

const LEFT: u32 = 250;
const RIGHT: u32 = 40;
const PLOT: u32 = 760;
/// A run's row height; an instance's (a fleet has up to 100) is [`INSTANCE_ROW`].
const ROW: u32 = 64;
const INSTANCE_ROW: u32 = 40;
const TOP: u32 = 40;

/// The color of a phase mark: the node going away, the remediation, the old pod, the
/// replacement, the end of the window.
/// Exhaustive: a new phase gets its colour here or does not compile.
fn color(phase: Phase) -> &'static str {
    match phase {
        Phase::FaultInjected => "#444444",
        Phase::NodeNotReady | Phase::UnreachableTaint => "#d9822b",
        Phase::OutOfServiceTaint | Phase::RemediationApplied | Phase::NodeDeleted => "#8e44ad",
        Phase::PodTerminating
        | Phase::PodShutDownByKubelet
        | Phase::OldPodDeleted
        | Phase::VolumeDetached => "#c0392b",
        Phase::ReplacementCreated | Phase::ReplacementScheduled | Phase::VolumeAttached => {
            "#2980b9"
        }
        // The same pod's container started again: the workload is back, on the old node.
        Phase::ContainerRestarted => "#16a085",
        Phase::ReplacementRunning | Phase::ReplacementReady => "#27ae60",
        Phase::TwoPodsRunning | Phase::MultiAttachError => "#e74c3c",
        // The end of the window.
        Phase::FaultHealed | Phase::RecoveryTimeout => "#7f8c8d",
    }
}

/// The time axis end: the latest thing any of the rows shows, rounded up to 10 s.
fn axis_ms(rows: &[Row<'_>]) -> u64 {
    let last = rows
        .iter()
        .flat_map(|r| {
            r.phases
                .iter()
                .map(|p| p.at_ms)
                .chain(r.outage.iter().map(|o| o.until_ms.max(0) as u64))
        })
        .max()
        .unwrap_or(0);
    last.max(10_000).div_ceil(10_000) * 10_000
}

fn x(ms: i64, axis: u64) -> f64 {
    LEFT as f64 + (ms.max(0) as f64 / axis as f64) * PLOT as f64
}

/// One row of a picture: a run, or one instance of a fleet run.
struct Row<'a> {
    /// `class` of the row's group: `run` or `instance`.
    class: &'static str,
    id: &'a str,
    verdict: Verdict,
    label: String,
    /// The second line under the label.
    sub: String,
    phases: &'a [PhaseResult],
    outage: Option<&'a WriteOutage>,
    height: u32,
}

impl<'a> Row<'a> {
    fn of_run(r: &'a RunResult, label: String) -> Row<'a> {
        Row {
            class: "run",
            id: &r.id,
            verdict: r.verdict,
            label,
            sub: r.remediation.clone(),
            phases: &r.phases,
            outage: r.write_outage.as_ref(),
            height: ROW,
        }
    }

    fn of_instance(i: &'a InstanceResult) -> Row<'a> {
        let from = i.start_node.as_deref().unwrap_or("?");
        let sub = match (i.unaffected, i.replacement_node.as_deref()) {
            (true, _) => format!("{from}, not faulted"),
            (false, Some(to)) => format!("{from} → {to}"),
            (false, None) => from.to_string(),
        };
        Row {
            class: "instance",
            id: &i.name,
            verdict: i.verdict,
            label: i.name.clone(),
            sub,
            phases: &i.phases,
            outage: i.write_outage.as_ref(),
            height: INSTANCE_ROW,
        }
    }
}

fn row(out: &mut String, r: &Row<'_>, y: u32, axis: u64) {
    let h = r.height;
    let (label, phases) = (&r.label, r.phases);
    let mid = y + h / 2;
    let verdict = match r.verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Unknown => "unknown",
    };
    let _ = writeln!(
        out,
        r#"<g class="{}" data-id="{}" data-verdict="{verdict}">"#,
        r.class,
        xml_escape(r.id)
    );
    let _ = writeln!(
        out,
        r##"<text x="8" y="{}" font-size="13">{}</text><text x="8" y="{}" font-size="11" fill="#666">{verdict} · {}</text>"##,
        mid - 4,
        xml_escape(label),
        mid + 12,
        xml_escape(&r.sub)
    );
    // The fault window: from time zero until the fault was healed (or the last phase).
    let healed = phases
        .iter()
        .find(|p| p.name == Phase::FaultHealed)
        .map(|p| p.at_ms)
        .or_else(|| phases.iter().map(|p| p.at_ms).max())
        .unwrap_or(0);
    let _ = writeln!(
        out,
        r##"<rect class="fault-window" x="{:.1}" y="{}" width="{:.1}" height="{}" fill="#f5e6d3"><title>fault window 0.0s–{}</title></rect>"##,
        x(0, axis),
        y + 8,
        (x(healed as i64, axis) - x(0, axis)).max(1.0),
        h - 16,
        fmt_ms(healed)
    );
    if let Some(o) = r.outage {
        // An outage still open when the watch ended is drawn to there with an arrow head: it
        // went on. Its length is written beside it, not only in the tooltip.
        let (x0, x1) = (x(o.from_ms, axis), x(o.until_ms, axis));
        let text = super::text::outage_text(o);
        let class = if o.restored {
            "write-outage"
        } else {
            "write-outage open"
        };
        let _ = writeln!(
            out,
            r##"<rect class="{class}" x="{:.1}" y="{}" width="{:.1}" height="8" fill="#e74c3c" opacity="0.6"><title>write outage {} ({}–{} ms from the fault)</title></rect>"##,
            x0,
            mid - 4,
            (x1 - x0).max(1.0),
            xml_escape(&text),
            o.from_ms,
            o.until_ms
        );
        if !o.restored {
            let _ = writeln!(
                out,
                r##"<path class="outage-open" d="M{:.1},{} l8,8 l-8,8 z" fill="#e74c3c"/>"##,
                x1,
                mid - 8
            );
        }
        let _ = writeln!(
            out,
            r##"<text class="outage-label" x="{:.1}" y="{}" font-size="10" fill="#c0392b">writes down {}</text>"##,
            x0 + 2.0,
            mid + 14,
            xml_escape(&text)
        );
    }
    for p in phases {
        let px = x(p.at_ms as i64, axis);
        let title = match p.since_ms {
            Some(s) => format!(
                "{} between {} and {} (watch gap)",
                p.name,
                fmt_ms(s),
                fmt_ms(p.at_ms)
            ),
            None => format!("{} at {}", p.name, fmt_ms(p.at_ms)),
        };
        let _ = writeln!(
            out,
            r#"<line class="phase" data-phase="{}" x1="{px:.1}" x2="{px:.1}" y1="{}" y2="{}" stroke="{}" stroke-width="2"{}><title>{}</title></line>"#,
            p.name,
            y + 6,
            y + h - 6,
            color(p.name),
            if p.since_ms.is_some() {
                r#" stroke-dasharray="3,2""#
            } else {
                ""
            },
            xml_escape(&title)
        );
    }
    let _ = writeln!(out, "</g>");
}

fn picture(title: &str, rows: &[Row<'_>]) -> String {
    let axis = axis_ms(rows);
    let rows_height: u32 = rows.iter().map(|r| r.height).sum();
    let height = TOP + rows_height + 50 + LEGEND_HEIGHT;
    let width = LEFT + PLOT + RIGHT;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" role="img" aria-label="{}">"#,
        xml_escape(title)
    );
    let _ = writeln!(
        out,
        r#"<text x="8" y="22" font-size="15" font-weight="bold">{}</text>"#,
        xml_escape(title)
    );
    // The axis: a tick every 10 s (every 30 s / 60 s for long runs).
    let step = match axis {
        a if a <= 120_000 => 10_000,
        a if a <= 600_000 => 30_000,
        _ => 60_000,
    };
    let bottom = TOP + rows_height;
    let mut t = 0;
    while t <= axis {
        let tx = x(t as i64, axis);
        let _ = writeln!(
            out,
            r##"<line class="tick" x1="{tx:.1}" x2="{tx:.1}" y1="{TOP}" y2="{bottom}" stroke="#dddddd"/><text x="{tx:.1}" y="{}" font-size="11" text-anchor="middle">{}</text>"##,
            bottom + 16,
            fmt_ms(t)
        );
        t += step;
    }
    let mut y = TOP;
    for r in rows {
        row(&mut out, r, y, axis);
        y += r.height;
    }
    let _ = writeln!(
        out,
        r##"<text x="8" y="{}" font-size="11" fill="#666">time from the fault · shaded: fault window · red band: write outage · marks: phases, coloured as below (hover for each mark's name and time)</text>"##,
        bottom + 36
    );
    legend(&mut out, bottom + 50);
    out.push_str("</svg>\n");
    out
}

/// The colours of the phase marks, named in the picture itself (a PNG, a PDF or a file viewer
/// shows no hover titles): every phase, grouped by colour, in the order of [`Phase::ALL`].
fn legend(out: &mut String, top: u32) {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for p in Phase::ALL {
        match groups.iter_mut().find(|(c, _)| *c == color(p)) {
            Some((_, names)) => names.push(p.name()),
            None => groups.push((color(p), vec![p.name()])),
        }
    }
    let per_line = 2;
    for (i, (c, names)) in groups.iter().enumerate() {
        let (col, line) = ((i % per_line) as u32, (i / per_line) as u32);
        let lx = 8 + col * ((LEFT + PLOT + RIGHT - 16) / per_line as u32);
        let ly = top + line * LEGEND_LINE;
        let _ = writeln!(
            out,
            r##"<g class="legend"><rect x="{lx}" y="{}" width="10" height="10" fill="{c}"/><text x="{}" y="{ly}" font-size="10" fill="#333">{}</text></g>"##,
            ly - 9,
            lx + 14,
            names.join(", ")
        );
    }
}

/// The legend's lines: the eight colour groups of [`color`], two to a line.
const LEGEND_LINE: u32 = 15;
const LEGEND_HEIGHT: u32 = 4 * LEGEND_LINE + 4;

/// The timeline of one run.
pub fn run(r: &RunResult) -> String {
    picture(
        &r.id,
        &[Row::of_run(r, format!("{}#{}", r.variant, r.repetition))],
    )
}

/// A fleet run's instances (or a StatefulSet's replicas), a swimlane each on one shared axis,
/// in order; `None` for a run of one instance.
pub fn instances(r: &RunResult) -> Option<String> {
    if r.instances.is_empty() {
        return None;
    }
    let rows: Vec<Row<'_>> = r.instances.iter().map(Row::of_instance).collect();
    Some(picture(&format!("{} — every instance", r.id), &rows))
}

/// The colour of a segment of the "where the time went" bar.
pub fn segment_color(s: Segment) -> &'static str {
    match s {
        Segment::Detection => "#d9822b",
        Segment::RemediationWait => "#8e44ad",
        Segment::PodDeletion => "#c0392b",
        Segment::Detach => "#34495e",
        Segment::Attach => "#2980b9",
        Segment::ContainerStart => "#16a085",
        Segment::Readiness => "#27ae60",
    }
}

/// Where the time went: a stacked bar per recovered run (its segments from the fault to Ready,
/// see `timeline::breakdown`) on one shared axis, each part named in the picture (its name and
/// length written in it when it is wide enough, and a legend). `None` when no run recovered.
pub fn breakdown(title: &str, runs: &[(&RunResult, String)]) -> Option<String> {
    let bars: Vec<(&str, Vec<Part>)> = runs
        .iter()
        .map(|(r, label)| (label.as_str(), crate::timeline::breakdown(&r.metrics)))
        .filter(|(_, parts)| !parts.is_empty())
        .collect();
    let last = bars
        .iter()
        .filter_map(|(_, p)| p.last().map(|p| p.until_ms))
        .max()?;
    let axis = last.max(10_000).div_ceil(10_000) * 10_000;
    const BAR: u32 = 34;
    let bottom = TOP + BAR * bars.len() as u32;
    let height = bottom + 40 + 2 * LEGEND_LINE + 10;
    let width = LEFT + PLOT + RIGHT;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" role="img" aria-label="{}">"#,
        xml_escape(title)
    );
    let _ = writeln!(
        out,
        r#"<text x="8" y="22" font-size="15" font-weight="bold">{}</text>"#,
        xml_escape(title)
    );
    for (i, (label, parts)) in bars.iter().enumerate() {
        let y = TOP + BAR * i as u32;
        let _ = writeln!(
            out,
            r#"<g class="breakdown" data-id="{}"><text x="8" y="{}" font-size="13">{}</text>"#,
            xml_escape(label),
            y + BAR / 2 + 4,
            xml_escape(label)
        );
        for p in parts {
            let (x0, x1) = (x(p.from_ms as i64, axis), x(p.until_ms as i64, axis));
            let w = (x1 - x0).max(1.0);
            let _ = writeln!(
                out,
                r##"<rect class="segment" data-segment="{}" x="{x0:.1}" y="{}" width="{w:.1}" height="{}" fill="{}"><title>{} {} ({}–{})</title></rect>"##,
                p.segment.name(),
                y + 5,
                BAR - 10,
                segment_color(p.segment),
                p.segment.name(),
                fmt_ms(p.ms()),
                fmt_ms(p.from_ms),
                fmt_ms(p.until_ms)
            );
            let text = format!("{} {}", p.segment.name(), fmt_ms(p.ms()));
            // About 6 px per character at font size 10.
            if w > 6.0 * text.len() as f64 + 6.0 {
                let _ = writeln!(
                    out,
                    r##"<text x="{:.1}" y="{}" font-size="10" fill="#ffffff">{text}</text>"##,
                    x0 + 3.0,
                    y + BAR / 2 + 4
                );
            }
        }
        let total = parts.last().map_or(0, |p| p.until_ms);
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{}" font-size="11" fill="#333">{}</text></g>"##,
            x(total as i64, axis) + 4.0,
            y + BAR / 2 + 4,
            fmt_ms(total)
        );
    }
    let _ = writeln!(
        out,
        r##"<text x="8" y="{}" font-size="11" fill="#666">time from the fault until Ready, cut at each milestone observed (runs that recovered)</text>"##,
        bottom + 20
    );
    for (i, (segment, _)) in Segment::ALL.iter().enumerate() {
        let (col, line) = ((i % 4) as u32, (i / 4) as u32);
        let lx = 8 + col * ((width - 16) / 4);
        let ly = bottom + 40 + line * LEGEND_LINE;
        let _ = writeln!(
            out,
            r##"<g class="legend"><rect x="{lx}" y="{}" width="10" height="10" fill="{}"/><text x="{}" y="{ly}" font-size="10" fill="#333">{}</text></g>"##,
            ly - 9,
            segment_color(*segment),
            lx + 14,
            segment.name()
        );
    }
    out.push_str("</svg>\n");
    Some(out)
}

/// An experiment's runs for [`breakdown`], labelled `variant#repetition`.
pub fn experiment_breakdown(exp: &ExperimentResult) -> Option<String> {
    let runs: Vec<(&RunResult, String)> = exp
        .runs
        .iter()
        .map(|r| (r, format!("{}#{}", r.variant, r.repetition)))
        .collect();
    breakdown(&format!("{} — where the time went", exp.name), &runs)
}

/// Every run of an experiment on one axis, in report order.
pub fn experiment(exp: &ExperimentResult) -> String {
    let rows: Vec<Row<'_>> = exp
        .runs
        .iter()
        .map(|r| Row::of_run(r, format!("{}#{}", r.variant, r.repetition)))
        .collect();
    picture(&exp.name, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::fixtures::recorded;

    /// Well-formed XML, one mark per phase of each run, a band per measured outage.
    #[test]
    fn experiment_picture_of_a_recording() {
        let rep = recorded("network-partition");
        let exp = &rep.experiments[0];
        let svg = experiment(exp);
        let mut reader = quick_xml::Reader::from_str(&svg);
        let (mut phases, mut outages, mut runs) = (0, 0, 0);
        loop {
            match reader.read_event().expect("well-formed SVG") {
                quick_xml::events::Event::Eof => break,
                quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => {
                    let class = e
                        .attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == b"class")
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned());
                    match class.as_deref() {
                        Some("phase") => phases += 1,
                        Some("write-outage") => outages += 1,
                        Some("run") => runs += 1,
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        assert_eq!(runs, exp.runs.len());
        assert_eq!(
            phases,
            exp.runs.iter().map(|r| r.phases.len()).sum::<usize>()
        );
        assert_eq!(
            outages,
            exp.runs.iter().filter(|r| r.write_outage.is_some()).count()
        );
        assert!(svg.contains(r#"data-phase="replacement-ready""#));
        let one = run(&exp.runs[0]);
        assert!(one.starts_with("<svg") && one.ends_with("</svg>\n"));
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(xml_escape(r#"a<b>&"c""#), "a&lt;b&gt;&amp;&quot;c&quot;");
    }
}
