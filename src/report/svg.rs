//! Timelines to look at (pure SVG, no external assets): one row per run on a time axis from
//! time zero — the fault window, a mark per phase, the write outage as a band — and one picture
//! per experiment that stacks its runs on a shared axis so remediations compare at a glance.

use super::text::xml_escape;
use super::{ExperimentResult, RunResult, Verdict};
use crate::timeline::Phase;
use crate::units::fmt_ms;
use std::fmt::Write;

const LEFT: u32 = 250;
const RIGHT: u32 = 40;
const PLOT: u32 = 760;
const ROW: u32 = 64;
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

/// The time axis end: the latest thing any of the runs shows, rounded up to 10 s.
fn axis_ms(runs: &[&RunResult]) -> u64 {
    let last = runs
        .iter()
        .flat_map(|r| {
            r.phases
                .iter()
                .map(|p| p.at_ms)
                .chain(r.write_outage.iter().map(|o| o.until_ms.max(0) as u64))
        })
        .max()
        .unwrap_or(0);
    last.max(10_000).div_ceil(10_000) * 10_000
}

fn x(ms: i64, axis: u64) -> f64 {
    LEFT as f64 + (ms.max(0) as f64 / axis as f64) * PLOT as f64
}

fn row(out: &mut String, r: &RunResult, label: &str, y: u32, axis: u64) {
    let mid = y + ROW / 2;
    let verdict = match r.verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Unknown => "unknown",
    };
    let _ = writeln!(
        out,
        r#"<g class="run" data-id="{}" data-verdict="{verdict}">"#,
        xml_escape(&r.id)
    );
    let _ = writeln!(
        out,
        r##"<text x="8" y="{}" font-size="13">{}</text><text x="8" y="{}" font-size="11" fill="#666">{} · {verdict}</text>"##,
        mid - 4,
        xml_escape(label),
        mid + 12,
        xml_escape(&r.remediation)
    );
    // The fault window: from time zero until the fault was healed (or the last phase).
    let healed = r
        .phases
        .iter()
        .find(|p| p.name == Phase::FaultHealed)
        .map(|p| p.at_ms)
        .or_else(|| r.phases.iter().map(|p| p.at_ms).max())
        .unwrap_or(0);
    let _ = writeln!(
        out,
        r##"<rect class="fault-window" x="{:.1}" y="{}" width="{:.1}" height="{}" fill="#f5e6d3"><title>fault window 0.0s–{}</title></rect>"##,
        x(0, axis),
        y + 8,
        (x(healed as i64, axis) - x(0, axis)).max(1.0),
        ROW - 16,
        fmt_ms(healed)
    );
    if let Some(o) = &r.write_outage {
        let _ = writeln!(
            out,
            r##"<rect class="write-outage" x="{:.1}" y="{}" width="{:.1}" height="8" fill="#e74c3c" opacity="0.6"><title>write outage {} ({}–{} from the fault)</title></rect>"##,
            x(o.from_ms, axis),
            mid - 4,
            (x(o.until_ms, axis) - x(o.from_ms, axis)).max(1.0),
            fmt_ms(o.duration_ms),
            o.from_ms,
            o.until_ms
        );
    }
    for p in &r.phases {
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
            y + ROW - 6,
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

fn picture(title: &str, rows: &[(&RunResult, String)]) -> String {
    let runs: Vec<&RunResult> = rows.iter().map(|(r, _)| *r).collect();
    let axis = axis_ms(&runs);
    let height = TOP + ROW * rows.len() as u32 + 50;
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
    let bottom = TOP + ROW * rows.len() as u32;
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
    for (i, (r, label)) in rows.iter().enumerate() {
        row(&mut out, r, label, TOP + ROW * i as u32, axis);
    }
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="{}" font-size="11" fill="#666">time from the fault · shaded: fault window · red band: write outage · marks: phases (hover for names)</text>"##,
        bottom + 36
    );
    out.push_str("</svg>\n");
    out
}

/// The timeline of one run.
pub fn run(r: &RunResult) -> String {
    picture(&r.id, &[(r, format!("{}#{}", r.variant, r.repetition))])
}

/// Every run of an experiment on one axis, in report order.
pub fn experiment(exp: &ExperimentResult) -> String {
    let rows: Vec<(&RunResult, String)> = exp
        .runs
        .iter()
        .map(|r| (r, format!("{}#{}", r.variant, r.repetition)))
        .collect();
    picture(&exp.name, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(name: &str) -> crate::report::Report {
        let path = format!(
            "{}/tests/fixtures/runs/{name}/results.json",
            env!("CARGO_MANIFEST_DIR")
        );
        crate::report::json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

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
