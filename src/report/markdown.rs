//! Markdown summary (GitHub-flavoured; fit for `$GITHUB_STEP_SUMMARY`).
//!
//! Per experiment: one table row per variant with its verdict and the failover metrics, each
//! the median over the variant's runs, with the min–max range when the runs differ and
//! `[k/n]` when only k of n runs reached that phase; `—` when no run did. Then every run
//! that did not pass, with each failed or unknown expectation and its evidence. The output
//! depends only on the report (no clock), so it is golden-tested.

use super::text::{mismatch, problem, verdict_word};
use super::{ExperimentResult, Report, RunResult, Verdict};
use crate::timeline::Metric;
use crate::units::fmt_ms;
use std::fmt::Write;

/// The metric columns, in failover order.
pub const COLUMNS: [Metric; 7] = [
    Metric::TimeToNotReady,
    Metric::TimeToRemediation,
    Metric::TimeToDelete,
    Metric::TimeToDetach,
    Metric::TimeToAttach,
    Metric::TimeToRunning,
    Metric::TimeToReady,
];

fn icon(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "✅",
        Verdict::Fail => "❌",
        Verdict::Unknown => "❔",
    }
}

fn counts<'a>(runs: impl IntoIterator<Item = &'a RunResult>) -> (usize, usize, usize) {
    runs.into_iter()
        .fold((0, 0, 0), |(p, f, u), r| match r.verdict {
            Verdict::Pass => (p + 1, f, u),
            Verdict::Fail => (p, f + 1, u),
            Verdict::Unknown => (p, f, u + 1),
        })
}

/// GitHub's limit of a job summary is 1 MiB; stay well under it.
pub const SUMMARY_LIMIT: usize = 1024 * 1024 - 64 * 1024;
/// Evidence longer than this is cut in the summary (results.json keeps it whole).
const EVIDENCE_CHARS: usize = 1500;
const POINTER: &str = "full evidence in results.json of the run directory (the job's artifact)";

/// The report as Markdown, under [`SUMMARY_LIMIT`] bytes: evidence is cut first, then left out,
/// then the list of failed runs is cut — each time with a pointer to results.json.
pub fn render(report: &Report) -> String {
    let full = render_with(report, true);
    if full.len() <= SUMMARY_LIMIT {
        return full;
    }
    let short = render_with(report, false);
    if short.len() <= SUMMARY_LIMIT {
        return short;
    }
    let note = format!(
        "\n… summary cut at {} KiB; {POINTER}.\n",
        SUMMARY_LIMIT / 1024
    );
    let mut cut = SUMMARY_LIMIT - note.len();
    while !short.is_char_boundary(cut) {
        cut -= 1;
    }
    let end = short[..cut].rfind('\n').map_or(cut, |i| i + 1);
    format!("{}{note}", &short[..end])
}

fn render_with(report: &Report, evidence: bool) -> String {
    let mut out = String::new();
    let all = report.experiments.iter().flat_map(|e| &e.runs);
    let (pass, fail, unknown) = counts(all.clone());
    let total = pass + fail + unknown;
    let overall = if fail > 0 {
        Verdict::Fail
    } else if unknown > 0 || total == 0 {
        Verdict::Unknown
    } else {
        Verdict::Pass
    };
    let _ = writeln!(out, "## {} {}\n", icon(overall), super::text::title(report));
    // What failed, before anything else: the run and the bound it missed.
    let runs: Vec<&RunResult> = report.experiments.iter().flat_map(|e| &e.runs).collect();
    let banner = super::text::verdict_banner(&runs);
    if !banner.is_empty() {
        for (v, l) in &banner {
            let mark = if *v == Verdict::Pass {
                "☑️"
            } else {
                icon(*v)
            };
            let _ = writeln!(out, "> {mark} **{}**  ", line(l));
        }
        out.push('\n');
    } else {
        let notes = super::text::pass_notes(&runs);
        for n in &notes {
            let _ = writeln!(out, "> ☑️ {}", line(n));
        }
        if !notes.is_empty() {
            out.push('\n');
        }
    }
    if let Some(o) = &report.origin {
        let _ = writeln!(out, "{}\n", line(&super::text::origin_line(o)));
    }
    let _ = writeln!(
        out,
        "{} · {total} {}: {pass} passed, {fail} failed, {unknown} unknown{}\n",
        report.tool,
        if total == 1 { "run" } else { "runs" },
        if total > 0 {
            let runs: Vec<&RunResult> = report.experiments.iter().flat_map(|e| &e.runs).collect();
            format!(" · {}", super::outcome::banner(&runs))
        } else {
            String::new()
        }
    );
    if total > 0 {
        out.push_str(
            "Times from the fault; median (min–max) over repetitions; `[k/n]`: only k of n runs \
             got there; `—`: never happened; `≥ D (not restored)`: still open when the watch ended.\n",
        );
    }
    if let Some(inv) = &report.invocation {
        let _ = writeln!(out, "\n{}", invocation_line(inv));
    }
    for exp in &report.experiments {
        experiment(&mut out, exp, evidence, report.dir.as_deref());
    }
    not_run(&mut out, &report.not_run);
    out
}

/// The variants `--skip-unsupported` left out, each with what would have let it run.
fn not_run(out: &mut String, not_run: &[crate::report::NotRun]) {
    if not_run.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "
### Not run ({}): no backend of this invocation could carry them out
",
        not_run.len()
    );
    for n in not_run {
        let _ = writeln!(
            out,
            "- `{}` / `{}` ({}): {}",
            n.experiment,
            n.variant,
            n.file,
            line(&n.reason)
        );
    }
}

/// Evidence for the summary: one line, cut at [`EVIDENCE_CHARS`] with a pointer.
fn evidence_text(e: &str) -> String {
    let one = line(e);
    if one.chars().count() <= EVIDENCE_CHARS {
        return one;
    }
    let cut: String = one.chars().take(EVIDENCE_CHARS).collect();
    format!("{cut} … (cut; {POINTER})")
}

/// What the checker found in each run of a variant: `split brain`, `lost writes`, `pass`, ...
fn integrity_cell(runs: &[&RunResult]) -> String {
    let mut found: Vec<(String, usize)> = Vec::new();
    for r in runs {
        // Every harm, never merged; an expected one is marked so, not a red cross.
        let expected = r
            .expectations
            .iter()
            .any(|e| e.name == "integrity" && e.verdict == Verdict::Pass);
        let word = match &r.integrity {
            None => "—".to_string(),
            Some(i) if i.verdict == Verdict::Pass => format!("{} intact", icon(Verdict::Pass)),
            Some(_) => {
                let mark = if expected { "☑️ expected:" } else { "❌" };
                format!("{mark} {}", super::outcome::cells(r).1)
            }
        };
        match found.iter_mut().find(|(w, _)| *w == word) {
            Some((_, n)) => *n += 1,
            None => found.push((word, 1)),
        }
    }
    let n = runs.len();
    found
        .into_iter()
        .map(|(w, k)| if k == n { w } else { format!("{w} [{k}/{n}]") })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// One line on where the runs happened.
/// Where an invocation's wall time went, in one sentence (Markdown and HTML alike).
pub(crate) fn invocation_line(inv: &crate::report::InvocationResult) -> String {
    format!(
        "Wall time of the invocation: {} — preparing the cluster {} · runs {}{} (failover {}) · \
         finishing {}; harness share {:.0}% (all but the failovers).",
        fmt_ms(inv.total_ms),
        fmt_ms(inv.prepare_ms),
        fmt_ms(inv.runs_ms),
        if inv.lanes > 1 {
            format!(" in {} lanes", inv.lanes)
        } else {
            String::new()
        },
        fmt_ms(inv.failover_ms),
        fmt_ms(inv.finish_ms),
        inv.harness_share * 100.0
    )
}

pub(crate) fn environment_line(env: &crate::report::Environment) -> String {
    let mut parts = Vec::new();
    if let Some(k) = &env.kubernetes {
        parts.push(format!("Kubernetes {k}"));
    }
    if let Some(n) = &env.target_node_info {
        parts.push(format!(
            "{} · kernel {} · {}",
            n.container_runtime, n.kernel, n.os_image
        ));
    }
    if let Some(sc) = &env.storage_class {
        let how = match (&env.provisioner, env.attach_required) {
            (Some(p), Some(true)) => format!(" ({p}, attaches)"),
            (Some(p), Some(false)) => format!(" ({p}, no attach)"),
            (Some(p), None) => format!(" ({p})"),
            (None, _) => String::new(),
        };
        parts.push(format!("storage class {sc}{how}"));
    }
    if let Some(b) = &env.backend {
        parts.push(format!("faults via {b}"));
    }
    format!("Environment: {}", parts.join(" · "))
}

fn experiment(out: &mut String, exp: &ExperimentResult, evidence: bool, dir: Option<&str>) {
    let _ = writeln!(out, "\n### {}\n", cell(&exp.name));
    let _ = writeln!(out, "`{}`\n", exp.file.replace('`', "'"));
    if let Some(d) = &exp.description {
        let _ = writeln!(out, "{}\n", line(d));
    }
    if let Some(env) = exp.runs.iter().find_map(|r| r.environment.as_ref()) {
        let _ = writeln!(out, "{}\n", line(&environment_line(env)));
    }
    if let Some(line) = wall_time(&exp.runs) {
        let _ = writeln!(out, "{line}\n");
    }
    let mut header = "| variant | remediation | verdict | outcome |".to_string();
    let mut rule = "|---|---|---|---|".to_string();
    for m in COLUMNS {
        let _ = write!(header, " {} |", m.name());
        rule.push_str("--:|");
    }
    // Ledger experiments: the integrity verdict and the write outage too.
    let ledger = exp.runs.iter().any(|r| r.integrity.is_some());
    if ledger {
        header.push_str(" integrity | write-outage |");
        rule.push_str("---|--:|");
    }
    let _ = writeln!(out, "{header}\n{rule}");

    // Variants in first-seen order.
    let mut variants: Vec<&str> = Vec::new();
    for r in &exp.runs {
        if !variants.contains(&r.variant.as_str()) {
            variants.push(&r.variant);
        }
    }
    for v in variants {
        let runs: Vec<&RunResult> = exp.runs.iter().filter(|r| r.variant == v).collect();
        let mut row = format!(
            "| {} | {} | {} | {} |",
            cell(v),
            cell(runs[0].remediation.as_str()),
            verdicts(&runs),
            cell(&super::outcome::over(&runs))
        );
        for m in COLUMNS {
            let _ = write!(row, " {} |", aggregate(&runs, m));
        }
        if ledger {
            let _ = write!(
                row,
                " {} | {} |",
                integrity_cell(&runs),
                super::text::outage_over(&runs)
            );
        }
        let _ = writeln!(out, "{row}");
    }

    counters(out, &exp.runs);
    fleets(out, &exp.runs);
    gantt(out, exp);
    where_the_time_went(out, exp);

    let bad: Vec<&RunResult> = exp
        .runs
        .iter()
        .filter(|r| r.verdict != Verdict::Pass)
        .collect();
    if bad.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n**Failed and unknown runs**\n");
    for r in bad {
        let _ = write!(
            out,
            "- {} `{}` — {}",
            icon(r.verdict),
            r.id,
            verdict_word(r.verdict)
        );
        match (r.verdict, &r.error) {
            (_, Some(err)) => {
                let _ = write!(out, ": harness error: {}", line(err));
            }
            (Verdict::Unknown, None) if r.expectations.is_empty() => {
                let _ = write!(out, ": {}", line(&problem(r).unwrap_or_default()));
            }
            _ => {}
        }
        out.push('\n');
        for e in r.expectations.iter().filter(|e| e.verdict != Verdict::Pass) {
            let _ = write!(out, "  - {} **{}**", icon(e.verdict), line(&mismatch(e)));
            if evidence {
                let _ = write!(out, " — {}", evidence_text(&e.evidence));
            }
            out.push('\n');
        }
        if let Some(next) = super::text::next_step(r, &exp.file, dir) {
            let _ = writeln!(out, "  - ➡️ next: {}", line(&next));
        }
    }
}

/// Where the runs' wall time went: the sum of each harness stage over the runs that recorded
/// stages (`None` when none did, e.g. runs recorded before stages were).
pub(crate) fn wall_time(runs: &[RunResult]) -> Option<String> {
    let timed: Vec<&RunResult> = runs.iter().filter(|r| !r.stages_ms.is_empty()).collect();
    if timed.is_empty() {
        return None;
    }
    let mut order: Vec<crate::timeline::Stage> = Vec::new();
    let mut sums: std::collections::BTreeMap<crate::timeline::Stage, u64> = Default::default();
    for r in &timed {
        for s in &r.stages_ms {
            if !order.contains(&s.stage) {
                order.push(s.stage);
            }
            *sums.entry(s.stage).or_default() += s.ms;
        }
    }
    let total: u64 = timed.iter().map(|r| r.duration_ms).sum();
    let parts: Vec<String> = order
        .iter()
        .map(|s| format!("{} {}", s, fmt_ms(sums[s])))
        .collect();
    Some(format!(
        "Wall time: {} {}, {} in all — {}",
        timed.len(),
        if timed.len() == 1 { "run" } else { "runs" },
        fmt_ms(total),
        parts.join(" · ")
    ))
}

/// A Mermaid `gantt` of the experiment (GitHub renders it): one section per variant, drawn
/// from its first run — the fault-to-Ready bar (or fault to the end of observation, marked
/// critical, when nothing recovered), the write outage, and every phase as a milestone. Time
/// is from the fault (the axis reads minutes:seconds).
fn gantt(out: &mut String, exp: &ExperimentResult) {
    let mut variants: Vec<&RunResult> = Vec::new();
    for r in &exp.runs {
        if !variants.iter().any(|v| v.variant == r.variant) && !r.phases.is_empty() {
            variants.push(r);
        }
    }
    if variants.is_empty() {
        return;
    }
    // Mermaid names: no colon, no hash, no semicolon.
    let name = |s: &str| s.replace([':', '#', ';'], " ");
    let _ = writeln!(
        out,
        "\n```mermaid\ngantt\n    title {} — phases from the fault (first run of each variant)\n    dateFormat x\n    axisFormat %M:%S",
        name(&exp.name)
    );
    for r in variants {
        let _ = writeln!(out, "    section {}", name(&r.variant));
        // Not recovered: until the recovery timeout (else the last phase seen).
        let end = r
            .phases
            .iter()
            .find(|p| p.name == crate::timeline::Phase::RecoveryTimeout)
            .or_else(|| r.phases.iter().max_by_key(|p| p.at_ms))
            .map_or(0, |p| p.at_ms);
        match r
            .phases
            .iter()
            .find(|p| p.name == crate::timeline::Phase::ReplacementReady)
        {
            Some(p) => {
                let _ = writeln!(out, "    fault to Ready :active, 0, {}ms", p.at_ms.max(1));
            }
            None => {
                let _ = writeln!(out, "    not recovered :crit, 0, {}ms", end.max(1));
            }
        }
        if let Some(o) = &r.write_outage {
            let _ = writeln!(
                out,
                "    {} :done, {}, {}ms",
                if o.restored {
                    "write outage"
                } else {
                    "write outage (not restored)"
                },
                o.from_ms.max(0),
                o.duration_ms.max(1)
            );
        }
        for p in &r.phases {
            let _ = writeln!(out, "    {} :milestone, {}, 0ms", p.name, p.at_ms);
        }
    }
    out.push_str("```\n");
}

/// Where the time of each recovery went (`timeline::breakdown`): a table of each variant's
/// segments (the median over its runs that recovered; `—` when no run had the segment) and a
/// Mermaid gantt drawing the first recovered run of each variant as one stacked bar.
fn where_the_time_went(out: &mut String, exp: &ExperimentResult) {
    use crate::timeline::{breakdown, Segment};
    let mut variants: Vec<(&str, Vec<Vec<crate::timeline::Part>>)> = Vec::new();
    for r in &exp.runs {
        let parts = breakdown(&r.metrics);
        if parts.is_empty() {
            continue;
        }
        match variants.iter_mut().find(|(v, _)| *v == r.variant) {
            Some((_, runs)) => runs.push(parts),
            None => variants.push((&r.variant, vec![parts])),
        }
    }
    if variants.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n**Where the time went** (fault to Ready, cut at each milestone observed; median over the runs that recovered)\n"
    );
    let mut header = "| variant |".to_string();
    let mut rule = "|---|".to_string();
    for (segment, _) in Segment::ALL {
        let _ = write!(header, " {} |", segment.name());
        rule.push_str("--:|");
    }
    let _ = writeln!(out, "{header} total |\n{rule}--:|");
    for (variant, runs) in &variants {
        let mut row = format!("| {} |", cell(variant));
        for (segment, _) in Segment::ALL {
            let values: Vec<u64> = runs
                .iter()
                .filter_map(|parts| parts.iter().find(|p| p.segment == segment).map(|p| p.ms()))
                .collect();
            let _ = write!(
                row,
                " {} |",
                crate::units::median(&values).map_or("—".to_string(), crate::units::fmt_ms)
            );
        }
        let totals: Vec<u64> = runs
            .iter()
            .filter_map(|parts| parts.last().map(|p| p.until_ms))
            .collect();
        let _ = writeln!(
            out,
            "{row} {} |",
            crate::units::median(&totals).map_or("—".to_string(), crate::units::fmt_ms)
        );
    }
    let name = |s: &str| s.replace([':', '#', ';'], " ");
    let _ = writeln!(
        out,
        "\n```mermaid\ngantt\n    title {} — where the time went (first recovered run of each variant)\n    dateFormat x\n    axisFormat %M:%S",
        name(&exp.name)
    );
    for (variant, runs) in &variants {
        let _ = writeln!(out, "    section {}", name(variant));
        for p in &runs[0] {
            let _ = writeln!(
                out,
                "    {} {} :{}, {}ms",
                p.segment.name(),
                crate::units::fmt_ms(p.ms()),
                p.from_ms,
                p.ms().max(1)
            );
        }
    }
    out.push_str("```\n");
}

/// Which path freed the volume and the pod, per run: the kube-controller-manager counters
/// that changed (only runs where they could be read before and after).
fn counters(out: &mut String, runs: &[RunResult]) {
    let read: Vec<&RunResult> = runs
        .iter()
        .filter(|r| r.controller_counters.is_some())
        .collect();
    if read.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n**What the controllers did** (kube-controller-manager counters that changed during the run)\n"
    );
    for r in read {
        let changes = r.controller_counters.as_deref().unwrap_or_default();
        let text = if changes.is_empty() {
            "no forced detach, no PodGC force delete".to_string()
        } else {
            changes
                .iter()
                .map(|c| {
                    let mut shared = if c.shared_with.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " (cluster-wide, shared with {}: they were in their fault windows too)",
                            c.shared_with.join(", ")
                        )
                    };
                    if c.beyond_invocation {
                        shared.push_str(
                            " (cluster-wide: invocations on the cluster's other nodes may have counted in it too)",
                        );
                    }
                    format!(
                        "`{}` +{}{shared}",
                        c.series.replace('`', "'"),
                        c.after.saturating_sub(c.before.unwrap_or(0))
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(out, "- `{}`: {}", r.id, line(&text));
    }
}

/// Fleet runs: how many instances came back, when the last did, the spread of time-to-ready
/// and the worst instances (those that failed an expectation or did not recover, else the
/// slowest three), so a run of 30 instances stays a few lines.
fn fleets(out: &mut String, runs: &[RunResult]) {
    let fleets: Vec<(&RunResult, &crate::report::FleetResult)> = runs
        .iter()
        .filter_map(|r| r.fleet.as_ref().map(|f| (r, f)))
        .collect();
    if fleets.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n**Fleets and replicas** (every instance its own StatefulSet, every member — instance or replica — its own claim and ledger)\n"
    );
    for (r, f) in fleets {
        if !f.unaffected.is_empty() {
            replicas(out, r, f);
            continue;
        }
        let all = match f.time_to_all_ready_ms {
            Some(ms) => format!("all Ready after {}", crate::units::fmt_ms(ms)),
            None => "not all Ready".to_string(),
        };
        let spread = f
            .metrics
            .iter()
            .find(|m| m.metric == Metric::TimeToReady.name())
            .map(|m| {
                format!(
                    "; time-to-ready p50 {} · p90 {} · max {} ({})",
                    crate::units::fmt_ms(m.spread.p50_ms),
                    crate::units::fmt_opt_ms(m.spread.p90_ms),
                    crate::units::fmt_ms(m.spread.max_ms),
                    m.max_instance
                )
            })
            .unwrap_or_default();
        let mut worst: Vec<&crate::report::InstanceResult> = r
            .instances
            .iter()
            .filter(|i| i.verdict != Verdict::Pass)
            .collect();
        let label = if worst.is_empty() {
            let mut by_ready: Vec<&crate::report::InstanceResult> = r.instances.iter().collect();
            by_ready.sort_by_key(|i| std::cmp::Reverse(i.metrics.get(&Metric::TimeToReady)));
            worst = by_ready.into_iter().take(3).collect();
            "slowest"
        } else {
            "not passed"
        };
        let named: Vec<String> = worst
            .iter()
            .take(10)
            .map(|i| {
                let ready = i
                    .metrics
                    .get(&Metric::TimeToReady)
                    .map_or("not Ready".to_string(), |ms| crate::units::fmt_ms(*ms));
                let integrity = i
                    .integrity
                    .as_ref()
                    .map(|x| format!(", integrity {}", x.verdict.as_str()))
                    .unwrap_or_default();
                format!("{} {} ({ready}{integrity})", icon(i.verdict), i.name)
            })
            .collect();
        let windows: Vec<String> = f
            .windows
            .iter()
            .map(|w| {
                let rate = w
                    .per_second
                    .map(|r| format!(", {r:.1}/s"))
                    .unwrap_or_default();
                format!(
                    "{} ×{} {}–{}{rate}",
                    w.phase.name(),
                    w.count,
                    crate::units::fmt_ms(w.first_ms),
                    crate::units::fmt_ms(w.last_ms)
                )
            })
            .collect();
        let windows = if windows.is_empty() {
            String::new()
        } else {
            format!("\n  - across instances: {}", windows.join(" · "))
        };
        let more = worst.len().saturating_sub(10);
        let _ = writeln!(
            out,
            "- `{}`: {} instances, {} recovered, {all}{spread}; {label}: {}{}{windows}",
            r.id,
            f.instances,
            f.recovered,
            named.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
    }
}

/// A StatefulSet's replicas, some on nodes no fault took: a line for each (there are at most
/// ten) — the ones the fault took with their recovery, the others left undisturbed or not.
fn replicas(out: &mut String, r: &RunResult, f: &crate::report::FleetResult) {
    let _ = writeln!(
        out,
        "- `{}`: {} replicas, {} on faulted nodes ({} recovered), {} elsewhere",
        r.id,
        f.instances,
        f.instances - f.unaffected.len(),
        f.recovered,
        f.unaffected.len()
    );
    for i in &r.instances {
        let on = i.start_node.as_deref().unwrap_or("?");
        let what = if i.unaffected {
            let served = i
                .expectations
                .iter()
                .find(|x| x.name == "undisturbed")
                .map_or("not judged", |x| {
                    if x.verdict == Verdict::Pass {
                        "served on undisturbed"
                    } else {
                        "disturbed"
                    }
                });
            format!("on {on} (not faulted): {served}")
        } else {
            match (
                i.metrics.get(&Metric::TimeToReady),
                i.replacement_node.as_deref(),
            ) {
                (Some(ms), Some(to)) => format!(
                    "on {on} (faulted): Ready again on {to} after {}",
                    crate::units::fmt_ms(*ms)
                ),
                (Some(ms), None) => format!(
                    "on {on} (faulted): Ready again after {}",
                    crate::units::fmt_ms(*ms)
                ),
                _ => format!("on {on} (faulted): not Ready again"),
            }
        };
        let outage = i
            .write_outage
            .as_ref()
            .map(|o| format!(", write outage {}", crate::units::fmt_ms(o.duration_ms)))
            .unwrap_or_default();
        let integrity = i
            .integrity
            .as_ref()
            .map(|x| format!(", integrity {}", x.verdict.as_str()))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  - {} {} {what}{outage}{integrity}",
            icon(i.verdict),
            i.name
        );
    }
}

/// The verdicts of a variant's runs: `✅ pass`, `✅ 3 pass`, `❌ 1 fail · 2 pass`.
fn verdicts(runs: &[&RunResult]) -> String {
    let (pass, fail, unknown) = counts(runs.iter().copied());
    let worst = if fail > 0 {
        Verdict::Fail
    } else if unknown > 0 {
        Verdict::Unknown
    } else {
        Verdict::Pass
    };
    if runs.len() == 1 {
        return format!("{} {}", icon(worst), verdict_word(worst));
    }
    let parts: Vec<String> = [(fail, "fail"), (unknown, "unknown"), (pass, "pass")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect();
    format!("{} {}", icon(worst), parts.join(" · "))
}

/// The median (and min–max, and how many runs got there) of a metric over runs.
fn aggregate(runs: &[&RunResult], metric: Metric) -> String {
    let values: Vec<u64> = runs
        .iter()
        .filter_map(|r| r.metrics.get(&metric).copied())
        .collect();
    let Some(spread) = crate::units::spread(&values) else {
        return "—".to_string();
    };
    let mut s = fmt_ms(spread.p50_ms);
    let max = fmt_ms(spread.max_ms);
    let min = crate::units::fmt_opt_ms(spread.min_ms);
    if min != max {
        let _ = write!(s, " ({min}–{max})");
    }
    if spread.count < runs.len() {
        let _ = write!(s, " [{}/{}]", spread.count, runs.len());
    }
    s
}

/// Text for a table cell: no pipes, no line breaks.
fn cell(s: &str) -> String {
    line(s).replace('|', "\\|")
}

/// Text on one line.
fn line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{check_golden, golden_report};

    #[test]
    fn golden() {
        check_golden("report.md", &render(&golden_report()));
    }

    #[test]
    fn deterministic() {
        let r = golden_report();
        assert_eq!(render(&r), render(&r));
    }

    #[test]
    fn aggregates_medians_ranges_and_missing_runs() {
        let report = golden_report();
        let md = render(&report);
        // Two force-delete runs: Ready at 7m03s and 7m08s; the median is the lower, observed one.
        assert!(
            md.contains("| force-delete | force-delete-pod | ❌ 1 fail · 1 pass |"),
            "{md}"
        );
        assert!(md.contains("| 7m03s (7m03s–7m08s) |"), "{md}");
        // The baseline never got past NotReady.
        assert!(
            md.contains(
                "| baseline | none | ✅ pass | not recovered within 2m00s (as expected) | 20.6s | — | — | — | — | — | — |"
            ),
            "{md}"
        );
        // Two oos-taint runs, one cut off before the replacement: only one got there.
        assert!(md.contains("| 39.7s [1/2] |"), "{md}");
        assert!(md.contains("| 20.9s | 21.3s | 27.9s [1/2] |"), "{md}");
    }

    #[test]
    fn gantt_has_one_section_per_variant_and_a_milestone_per_phase() {
        let report = crate::report::fixtures::golden_report();
        let md = render(&report);
        let start = md.find("```mermaid\ngantt\n").expect("a gantt");
        let block = &md[start..start + md[start..].find("\n```\n").unwrap()];
        let exp = &report.experiments[0];
        let mut variants: Vec<&str> = exp.runs.iter().map(|r| r.variant.as_str()).collect();
        variants.dedup();
        let first = exp.runs.iter().find(|r| r.variant == variants[0]).unwrap();
        assert!(block.contains("dateFormat x"), "{block}");
        for v in &variants {
            assert!(
                block.contains(&format!("    section {v}\n")),
                "{v}: {block}"
            );
        }
        for p in &first.phases {
            assert!(
                block.contains(&format!("    {} :milestone, {}, 0ms", p.name, p.at_ms)),
                "{}: {block}",
                p.name
            );
        }
        // A variant that never recovered is drawn as a critical bar, not as a recovery.
        assert!(block.contains("not recovered :crit, 0, "), "{block}");
    }

    #[test]
    fn empty_report() {
        let r = Report {
            schema_version: 1,
            tool: "nodedown test".into(),
            invocation: None,
            origin: None,
            experiments: vec![],
            not_run: vec![],
            dir: None,
        };
        assert_eq!(
            render(&r),
            "## ❔ nodedown: results — no runs\n\nnodedown test · 0 runs: 0 passed, 0 failed, 0 unknown\n\n"
        );
    }

    #[test]
    fn aggregate_even_count_median() {
        let run = |ms: Option<u64>| {
            let mut r = golden_report().experiments[0].runs[0].clone();
            r.metrics.clear();
            if let Some(ms) = ms {
                r.metrics.insert(Metric::TimeToReady, ms);
            }
            r
        };
        let runs = [run(Some(10_000)), run(Some(20_000)), run(None)];
        let refs: Vec<&RunResult> = runs.iter().collect();
        assert_eq!(
            aggregate(&refs, Metric::TimeToReady),
            "10.0s (10.0s–20.0s) [2/3]"
        );
        assert_eq!(aggregate(&refs[..1], Metric::TimeToReady), "10.0s");
        assert_eq!(aggregate(&refs[2..], Metric::TimeToReady), "—");
    }

    /// 3 experiments × 4 variants × 5 repetitions of a recorded run whose every expectation
    /// fails with a long evidence text (synthetic scale-up): the summary stays under GitHub's
    /// 1 MiB and says where the rest is.
    #[test]
    fn a_large_matrix_stays_under_the_job_summary_limit() {
        let path = format!(
            "{}/tests/fixtures/runs/network-partition/results.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let rec = crate::report::json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut run = rec.experiments[0].runs[0].clone();
        run.verdict = Verdict::Fail;
        for e in &mut run.expectations {
            e.verdict = Verdict::Fail;
            e.evidence = e.evidence.repeat(40);
        }
        let mut report = rec.clone();
        report.experiments.clear();
        for x in 0..3 {
            let mut exp = rec.experiments[0].clone();
            exp.name = format!("exp-{x}");
            exp.runs.clear();
            for v in 0..4 {
                for rep in 1..=5 {
                    let mut r = run.clone();
                    r.variant = format!("variant-{v}");
                    r.repetition = rep;
                    r.id = format!("exp-{x}/variant-{v}/{rep}");
                    exp.runs.push(r);
                }
            }
            report.experiments.push(exp);
        }
        let md = render(&report);
        assert!(md.len() <= SUMMARY_LIMIT, "{} bytes", md.len());
        assert!(
            md.contains("results.json of the run directory"),
            "points to the rest"
        );
        assert_eq!(
            md.matches("| variant-").count(),
            2 * 12,
            "every variant row kept, in the results table and in where the time went"
        );
        let raw: usize = report
            .experiments
            .iter()
            .flat_map(|e| &e.runs)
            .flat_map(|r| &r.expectations)
            .map(|e| e.evidence.len())
            .sum();
        assert!(
            raw > 1024 * 1024,
            "the evidence alone is over the limit: {raw}"
        );
        assert!(md.contains("(cut; "), "long evidence is cut");
    }

    /// So many failed runs that even without evidence the list is too long (synthetic): the
    /// summary is cut at a line with a pointer.
    #[test]
    fn an_overlong_failure_list_is_cut_with_a_pointer() {
        let path = format!(
            "{}/tests/fixtures/runs/network-partition/results.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut report =
            crate::report::json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut run = report.experiments[0].runs[0].clone();
        run.verdict = Verdict::Fail;
        run.expectations[0].verdict = Verdict::Fail;
        let exp = &mut report.experiments[0];
        exp.runs = (0..12_000)
            .map(|i| {
                let mut r = run.clone();
                r.id = format!("network-partition/v/{i}");
                r
            })
            .collect();
        let md = render(&report);
        assert!(md.len() <= SUMMARY_LIMIT, "{} bytes", md.len());
        assert!(
            md.ends_with("(the job's artifact).\n"),
            "{}",
            &md[md.len() - 200..]
        );
        assert!(md.contains("summary cut at"));
    }
}
