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

/// What a phase mark is about: its colour is its family's (seven, with the fault window and the
/// write outage nine colours in all), and the label under the run says which phase it is.
/// Exhaustive: a new phase gets its family here or does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// The fault and the end of the window: injected, healed, the watch given up.
    Fault,
    /// The node going away: NotReady, tainted unreachable, deleted.
    Node,
    /// What the operator or remediator did: fences, the out-of-service taint, unfencing.
    Remediation,
    /// The old pod: Terminating, shut down, deleted.
    OldPod,
    /// The volume: detached, attached.
    Volume,
    /// The workload back: the replacement created … Ready, a container restarted.
    Replacement,
    /// What must not happen: two pods running, a Multi-Attach error.
    Alarm,
}

impl Family {
    const ALL: [Family; 7] = [
        Family::Fault,
        Family::Node,
        Family::Remediation,
        Family::OldPod,
        Family::Volume,
        Family::Replacement,
        Family::Alarm,
    ];

    fn of(phase: Phase) -> Family {
        match phase {
            Phase::FaultInjected | Phase::FaultHealed | Phase::RecoveryTimeout => Family::Fault,
            Phase::NodeNotReady | Phase::UnreachableTaint | Phase::NodeDeleted => Family::Node,
            Phase::FenceRequested
            | Phase::FenceSucceeded
            | Phase::WriteRefused
            | Phase::OutOfServiceTaint
            | Phase::RemediationApplied
            | Phase::Unfenced => Family::Remediation,
            Phase::PodTerminating | Phase::PodShutDownByKubelet | Phase::OldPodDeleted => {
                Family::OldPod
            }
            Phase::VolumeDetached | Phase::VolumeAttached => Family::Volume,
            Phase::ReplacementCreated
            | Phase::ReplacementScheduled
            | Phase::ReplacementRunning
            | Phase::ReplacementReady
            | Phase::ContainerRestarted => Family::Replacement,
            Phase::TwoPodsRunning | Phase::MultiAttachError => Family::Alarm,
        }
    }

    fn color(self) -> &'static str {
        match self {
            Family::Fault => "#4d4d4d",
            Family::Node => "#d35400",
            Family::Remediation => "#7d3c98",
            Family::OldPod => "#a93226",
            Family::Volume => "#1f618d",
            Family::Replacement => "#1e8449",
            Family::Alarm => "#e4007c",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Family::Fault => "fault",
            Family::Node => "node",
            Family::Remediation => "remediation",
            Family::OldPod => "old pod",
            Family::Volume => "volume",
            Family::Replacement => "replacement",
            Family::Alarm => "must not happen",
        }
    }
}

/// The colour of a phase mark: its family's.
fn color(phase: Phase) -> &'static str {
    Family::of(phase).color()
}

/// The write outage's bar (a light red, apart from the old pod's dark red).
const OUTAGE: &str = "#f1948a";

/// The milestones named in the picture itself (the rest are marks named in the legend and
/// their tooltips), with the word written beside them.
fn milestone(phase: Phase) -> Option<&'static str> {
    Some(match phase {
        Phase::NodeNotReady => "NotReady",
        Phase::FenceSucceeded => "fenced",
        Phase::WriteRefused => "write refused",
        Phase::OutOfServiceTaint => "out-of-service",
        Phase::RemediationApplied => "remediation",
        Phase::NodeDeleted => "node deleted",
        Phase::PodShutDownByKubelet => "shut down by kubelet",
        Phase::OldPodDeleted => "old pod deleted",
        Phase::VolumeDetached => "detached",
        Phase::MultiAttachError => "Multi-Attach error",
        Phase::VolumeAttached => "attached",
        Phase::ContainerRestarted => "restarted",
        Phase::ReplacementReady => "Ready",
        Phase::TwoPodsRunning => "TWO PODS RUNNING",
        Phase::RecoveryTimeout => "gave up",
        Phase::FaultHealed => "healed",
        Phase::Unfenced => "unfenced",
        _ => return None,
    })
}

/// A label under a row: where it starts, its line, its text and colour.
struct Label {
    x: f64,
    line: u32,
    text: String,
    color: &'static str,
}

/// About 5.6 px per character at font size 10.
fn text_width(s: &str) -> f64 {
    5.6 * s.chars().count() as f64
}

/// The labels of a run row, staggered: each on the first line where it does not run into the
/// label before it. The write outage's length is one of them.
fn labels(r: &Row<'_>, axis: u64) -> Vec<Label> {
    let mut items: Vec<(f64, String, &'static str)> = Vec::new();
    // Where a run-off label would end past the plot, it ends at the plot's edge instead.
    let right = (LEFT + PLOT + RIGHT) as f64 - 4.0;
    let mut seen_remediation = false;
    for p in r.phases {
        let Some(word) = milestone(p.name) else {
            continue;
        };
        // The taint is a remediation: one label for the two.
        if matches!(p.name, Phase::OutOfServiceTaint | Phase::RemediationApplied) {
            if seen_remediation {
                continue;
            }
            seen_remediation = true;
        }
        items.push((
            x(p.at_ms as i64, axis),
            format!("{word} {}", fmt_ms(p.at_ms)),
            color(p.name),
        ));
    }
    if let Some(o) = r.outage {
        items.push((
            x(o.from_ms, axis),
            format!("write outage {}", super::text::outage_text(o)),
            "#b03a2e",
        ));
    }
    items.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut ends: Vec<f64> = Vec::new();
    let mut out = Vec::new();
    for (x0, text, color) in items {
        let w = text_width(&text);
        let x0 = x0.min(right - w).max(LEFT as f64);
        let line = match ends.iter().position(|end| *end + 6.0 <= x0) {
            Some(i) => i,
            None => {
                ends.push(0.0);
                ends.len() - 1
            }
        };
        ends[line] = x0 + w;
        out.push(Label {
            x: x0,
            line: line as u32,
            text,
            color,
        });
    }
    out
}

/// A note too long for the label column, cut at its end with an ellipsis.
fn fit_end(s: &str, chars: usize) -> String {
    if s.chars().count() <= chars {
        return s.to_string();
    }
    let mut t: String = s.chars().take(chars - 1).collect();
    t.push('…');
    t
}

/// A label too long for the label column, cut in the middle with an ellipsis so that its end
/// (where a replacement went) stays (the whole in its tooltip).
fn fit(s: &str, chars: usize) -> String {
    let n = s.chars().count();
    if n <= chars {
        return s.to_string();
    }
    let head = (chars - 1) / 2;
    let tail = chars - 1 - head;
    let mut t: String = s.chars().take(head).collect();
    t.push('…');
    t.extend(s.chars().skip(n - tail));
    t
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
    /// A third line under the label, in the verdict's colour: what a green pass would hide
    /// (`as expected: split brain`) or what failed.
    note: Option<String>,
}

impl<'a> Row<'a> {
    fn of_run(r: &'a RunResult, label: String) -> Row<'a> {
        Row {
            class: "run",
            id: &r.id,
            verdict: r.verdict,
            label,
            sub: r.remediation.to_string(),
            phases: &r.phases,
            outage: r.write_outage.as_ref(),
            height: ROW,
            note: super::text::problem(r).or_else(|| super::outcome::pass_note(r)),
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
            note: None,
        }
    }
}

/// The height of a row with its labels: the marks' band, then a line per label line.
fn row_height(r: &Row<'_>, labels: &[Label]) -> u32 {
    let lines = labels.iter().map(|l| l.line + 1).max().unwrap_or(0);
    if r.class == "run" {
        let note = if r.note.is_some() { 50 } else { 0 };
        (BAND + 8 + LABEL_LINE * lines + 6).max(r.height).max(note)
    } else {
        r.height
    }
}

/// The marks' band of a row: the fault window, the outage, the phase marks.
const BAND: u32 = 36;
const LABEL_LINE: u32 = 12;

fn row(out: &mut String, r: &Row<'_>, y: u32, h: u32, axis: u64, labels: &[Label]) {
    let phases = r.phases;
    // Instance rows are one band high; a run's band is at its top, its labels under it.
    let band = if r.class == "run" { BAND } else { h };
    let mid = y + band / 2;
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
    // The label column: the name, then the verdict and what it was (cut to fit, whole in the
    // tooltip).
    let sub = format!("{verdict} · {}", r.sub);
    let _ = writeln!(
        out,
        r##"<text x="8" y="{}" font-size="13"><title>{}</title>{}</text><text x="8" y="{}" font-size="11" fill="#666"><title>{}</title>{}</text>"##,
        y + 15,
        xml_escape(&r.label),
        xml_escape(&fit(&r.label, 30)),
        y + 29,
        xml_escape(&sub),
        xml_escape(&fit(&sub, 36)),
    );
    if let Some(note) = &r.note {
        let fill = if r.verdict == Verdict::Pass {
            "#b9770e"
        } else {
            "#c0392b"
        };
        let _ = writeln!(
            out,
            r##"<text class="note" x="8" y="{}" font-size="11" fill="{fill}"><title>{}</title>{}</text>"##,
            y + 43,
            xml_escape(note),
            xml_escape(&fit_end(note, 36)),
        );
    }
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
        y + 4,
        (x(healed as i64, axis) - x(0, axis)).max(1.0),
        band - 8,
        fmt_ms(healed)
    );
    if let Some(o) = r.outage {
        // An outage still open when the watch ended is drawn to there with an arrow head: it
        // went on.
        let (x0, x1) = (x(o.from_ms, axis), x(o.until_ms, axis));
        let text = super::text::outage_text(o);
        let class = if o.restored {
            "write-outage"
        } else {
            "write-outage open"
        };
        let _ = writeln!(
            out,
            r##"<rect class="{class}" x="{:.1}" y="{}" width="{:.1}" height="8" fill="{OUTAGE}"><title>write outage {} ({}–{} ms from the fault)</title></rect>"##,
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
                r##"<path class="outage-open" d="M{:.1},{} l8,8 l-8,8 z" fill="{OUTAGE}"/>"##,
                x1,
                mid - 8
            );
        }
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
            y + 4,
            y + band - 4,
            color(p.name),
            if p.since_ms.is_some() {
                r#" stroke-dasharray="3,2""#
            } else {
                ""
            },
            xml_escape(&title)
        );
    }
    for l in labels {
        let ly = y + BAND + 8 + LABEL_LINE * l.line;
        let _ = writeln!(
            out,
            r##"<text class="milestone" x="{:.1}" y="{ly}" font-size="10" fill="{}">{}</text>"##,
            l.x,
            l.color,
            xml_escape(&l.text)
        );
    }
    let _ = writeln!(out, "</g>");
}

fn picture(title: &str, rows: &[Row<'_>]) -> String {
    let axis = axis_ms(rows);
    let laid: Vec<(Vec<Label>, u32)> = rows
        .iter()
        .map(|r| {
            let labels = if r.class == "run" {
                labels(r, axis)
            } else {
                vec![]
            };
            let h = row_height(r, &labels);
            (labels, h)
        })
        .collect();
    let rows_height: u32 = laid.iter().map(|(_, h)| h).sum();
    // The phases any row has, in the order of Phase::ALL: the legend names those only.
    let present: Vec<Phase> = Phase::ALL
        .into_iter()
        .filter(|p| rows.iter().any(|r| r.phases.iter().any(|x| x.name == *p)))
        .collect();
    let outage = rows.iter().any(|r| r.outage.is_some());
    let legend_height = legend_items(&present, outage)
        .len()
        .div_ceil(LEGEND_COLUMNS) as u32
        * LEGEND_LINE
        + 4;
    let height = TOP + rows_height + 50 + legend_height;
    let width = LEFT + PLOT + RIGHT;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" style="max-width:100%;height:auto" font-family="sans-serif" role="img" aria-label="{}">"#,
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
    for (r, (labels, h)) in rows.iter().zip(&laid) {
        row(&mut out, r, y, *h, axis, labels);
        y += h;
    }
    let _ = writeln!(
        out,
        r##"<text x="8" y="{}" font-size="11" fill="#666">time from the fault · key milestones named under each run · every mark's colour below</text>"##,
        bottom + 36
    );
    legend(&mut out, bottom + 50, &present, outage);
    out.push_str("</svg>\n");
    out
}

const LEGEND_COLUMNS: usize = 2;

/// The legend's entries: the fault window, the write outage when there is one, and each family
/// of the phases present with the phases of it that are.
fn legend_items(present: &[Phase], outage: bool) -> Vec<(&'static str, String)> {
    let mut items: Vec<(&str, String)> = vec![("#f5e6d3", "fault window".into())];
    if outage {
        items.push((OUTAGE, "write outage (▶: not restored)".into()));
    }
    for f in Family::ALL {
        // The family's word is not repeated: `replacement: created, scheduled, …`.
        let prefix = format!("{}-", f.name());
        let of: Vec<&str> = present
            .iter()
            .filter(|p| Family::of(**p) == f)
            .map(|p| p.name().strip_prefix(prefix.as_str()).unwrap_or(p.name()))
            .collect();
        if !of.is_empty() {
            items.push((f.color(), format!("{}: {}", f.name(), of.join(", "))));
        }
    }
    items
}

/// The colours in the picture, named in it (a PNG, a PDF or a file viewer shows no hover
/// titles): the fault window, the write outage when there is one, and each family of phases
/// present, naming its phases.
fn legend(out: &mut String, top: u32, present: &[Phase], outage: bool) {
    let items = legend_items(present, outage);
    let col_width = (LEFT + PLOT + RIGHT - 16) / LEGEND_COLUMNS as u32;
    for (i, (c, name)) in items.iter().enumerate() {
        let (col, line) = ((i % LEGEND_COLUMNS) as u32, (i / LEGEND_COLUMNS) as u32);
        let lx = 8 + col * col_width;
        let ly = top + line * LEGEND_LINE;
        let _ = writeln!(
            out,
            r##"<g class="legend"><rect x="{lx}" y="{}" width="10" height="10" fill="{c}"/><text x="{}" y="{ly}" font-size="10" fill="#333">{}</text></g>"##,
            ly - 9,
            lx + 14,
            xml_escape(&fit(name, (col_width as usize - 20) * 10 / 56))
        );
    }
}

const LEGEND_LINE: u32 = 15;

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
    // A run that did not recover has no segments: it is drawn as what it was — not Ready
    // within the window it was watched — so a variant never drops out of the picture.
    let bars: Vec<(&str, Vec<Part>, Option<u64>)> = runs
        .iter()
        .map(|(r, label)| {
            let parts = crate::timeline::breakdown(&r.metrics);
            let never = parts
                .is_empty()
                .then(|| super::outcome::of(r))
                .filter(|o| o.recovery != super::outcome::Recovery::NotFaulted)
                .map(|o| o.after_ms.unwrap_or(r.duration_ms));
            (label.as_str(), parts, never)
        })
        .filter(|(_, parts, never)| !parts.is_empty() || never.is_some())
        .collect();
    if !bars.iter().any(|(_, parts, _)| !parts.is_empty()) {
        return None;
    }
    let last = bars
        .iter()
        .filter_map(|(_, p, never)| p.last().map(|p| p.until_ms).or(*never))
        .max()?;
    let axis = last.max(10_000).div_ceil(10_000) * 10_000;
    const BAR: u32 = 34;
    let bottom = TOP + BAR * bars.len() as u32;
    let height = bottom + 40 + 2 * LEGEND_LINE + 10;
    let width = LEFT + PLOT + RIGHT;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" style="max-width:100%;height:auto" font-family="sans-serif" role="img" aria-label="{}">"#,
        xml_escape(title)
    );
    let _ = writeln!(
        out,
        r##"<defs><pattern id="never" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#eeeeee"/><line x1="0" y1="0" x2="0" y2="8" stroke="#bbbbbb" stroke-width="3"/></pattern></defs>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="8" y="22" font-size="15" font-weight="bold">{}</text>"#,
        xml_escape(title)
    );
    for (i, (label, parts, never)) in bars.iter().enumerate() {
        let y = TOP + BAR * i as u32;
        let _ = writeln!(
            out,
            r#"<g class="breakdown" data-id="{}"><text x="8" y="{}" font-size="13">{}</text>"#,
            xml_escape(label),
            y + BAR / 2 + 4,
            xml_escape(label)
        );
        if let Some(watched) = never {
            let x1 = x(*watched as i64, axis);
            let text = format!("not Ready within {}", fmt_ms(*watched));
            let _ = writeln!(
                out,
                r##"<rect class="not-recovered" x="{:.1}" y="{}" width="{:.1}" height="{}" fill="url(#never)"><title>{text}</title></rect><text x="{:.1}" y="{}" font-size="11" fill="#333">{text}</text></g>"##,
                x(0, axis),
                y + 5,
                (x1 - x(0, axis)).max(1.0),
                BAR - 10,
                x(0, axis) + 6.0,
                y + BAR / 2 + 4,
            );
            continue;
        }
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
        r##"<text x="8" y="{}" font-size="11" fill="#666">time from the fault until Ready, cut at each milestone observed; hatched: not Ready while watched</text>"##,
        bottom + 20
    );
    // The legend names the segments drawn.
    let present: Vec<Segment> = Segment::ALL
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| {
            bars.iter()
                .any(|(_, parts, _)| parts.iter().any(|p| p.segment == *s))
        })
        .collect();
    for (i, segment) in present.iter().enumerate() {
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

    /// The milestones are named in the picture, no two labels of a line overlap, the legend
    /// names only the phases present, and an outage never restored is drawn open.
    #[test]
    fn milestones_are_named_staggered_and_the_legend_is_what_is_there() {
        let rep = recorded("attach-detach");
        let exp = &rep.experiments[0];
        let axis = axis_ms(
            &exp.runs
                .iter()
                .map(|r| Row::of_run(r, r.id.clone()))
                .collect::<Vec<_>>(),
        );
        for r in &exp.runs {
            let row = Row::of_run(r, r.id.clone());
            let labels = labels(&row, axis);
            assert!(
                labels.iter().any(|l| l.text.starts_with("NotReady ")),
                "{}",
                r.id
            );
            for a in &labels {
                for b in &labels {
                    if std::ptr::eq(a, b) || a.line != b.line {
                        continue;
                    }
                    let (a0, a1) = (a.x, a.x + text_width(&a.text));
                    let (b0, b1) = (b.x, b.x + text_width(&b.text));
                    assert!(
                        a1 <= b0 || b1 <= a0,
                        "{}: {} and {} overlap",
                        r.id,
                        a.text,
                        b.text
                    );
                }
            }
        }
        let svg = experiment(exp);
        assert!(svg.contains(">Ready 31.9s</text>"), "{svg}");
        assert!(svg.contains(">write outage ≥ 1m30s (not restored)</text>"));
        assert!(svg.contains(r#"class="outage-open""#));
        // The legend names the families present, each with its phases that are.
        assert!(
            svg.contains(">must not happen: multi-attach-error</text>"),
            "present: in the legend"
        );
        assert!(
            !svg.contains("two-pods-running"),
            "absent: not in the legend"
        );
        assert!(!svg.contains("node-deleted"));
        assert!(svg.contains(">replacement: created, scheduled, running, ready</text>"));
        // The breakdown keeps the variants that did not recover, hatched.
        let b = experiment_breakdown(exp).unwrap();
        assert_eq!(b.matches(r#"class="not-recovered""#).count(), 2, "{b}");
        assert!(b.contains(">not Ready within 1m30s</text>"));
    }

    #[test]
    fn long_labels_are_cut_keeping_their_ends() {
        assert_eq!(fit("short", 10), "short");
        let cut = fit("pass · nodedown-worker → nodedown-worker3", 20);
        assert_eq!(cut.chars().count(), 20);
        assert!(cut.ends_with("worker3") && cut.contains('…'), "{cut}");
        assert_eq!(
            fit_end("unchecked: split brain (no integrity)", 12),
            "unchecked: …"
        );
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(xml_escape(r#"a<b>&"c""#), "a&lt;b&gt;&amp;&quot;c&quot;");
    }
}
