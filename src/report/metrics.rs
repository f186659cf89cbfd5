//! The results as Prometheus metrics (pure): the text exposition format (version 0.0.4) that
//! node-exporter's textfile collector reads and a Pushgateway accepts. Every series is a gauge
//! named by Prometheus's conventions (`nodedown_` prefix, base units: seconds, `_info`-style
//! state sets with one series per state, 1 for the run's), labelled with what the run was.
//!
//! One meaning per number: every value is read from the result model that results.json
//! carries — the runs' metrics, phases, outcome, write outage and integrity — and a number
//! nobody observed has no series (never a 0 standing in for "unknown").

use super::outcome::{self, Data, Recovery};
use super::{Report, RunResult, Verdict};
use crate::timeline::Metric;
use std::fmt::Write;

/// The labels every series of a run carries, in this order.
const RUN_LABELS: [&str; 7] = [
    "experiment",
    "variant",
    "repetition",
    "fault",
    "remediation",
    "storage_class",
    "kubernetes_version",
];

/// One metric family: its name, help, and samples (label pairs beyond the run's, value).
struct Family {
    name: String,
    help: String,
    samples: Vec<(String, f64)>,
}

impl Family {
    fn new(name: impl Into<String>, help: impl Into<String>) -> Family {
        Family {
            name: name.into(),
            help: help.into(),
            samples: Vec::new(),
        }
    }
}

/// The index of family `name` in `fams`, added (with `help`) when not there yet.
fn family(fams: &mut Vec<Family>, name: &str, help: &str) -> usize {
    match fams.iter().position(|f| f.name == name) {
        Some(i) => i,
        None => {
            fams.push(Family::new(name, help));
            fams.len() - 1
        }
    }
}

/// `report` as Prometheus text: every run's series (labelled by [`RUN_LABELS`]), then the
/// invocation's. Families with no sample are left out.
pub fn render(report: &Report) -> String {
    let mut fams: Vec<Family> = Vec::new();
    // Declared up front so the families come out in this order whatever the runs hold.
    let verdict = family(
        &mut fams,
        "nodedown_run_verdict",
        "The run's verdict against its experiment's expectations: 1 for the run's, 0 for the others.",
    );
    let errored = family(
        &mut fams,
        "nodedown_run_error",
        "1 when the run could not be carried out to its end (a harness error; its verdict is unknown).",
    );
    let recovery = family(
        &mut fams,
        "nodedown_run_recovery",
        "Whether the workload came back: 1 for the run's state, 0 for the others.",
    );
    let data = family(
        &mut fams,
        "nodedown_run_data",
        "What became of the ledger's acknowledged writes (integrity): 1 for each harm the run had (lost-writes and split-brain together when both), 0 for the others. Absent without ledger evidence.",
    );
    let fault_at = family(
        &mut fams,
        "nodedown_run_fault_timestamp_seconds",
        "When the fault took effect (time zero, Unix seconds): where to look on a dashboard. Absent when its wall clock was not recorded.",
    );
    let metric_fams: Vec<(Metric, usize)> = Metric::ALL
        .iter()
        .map(|m| {
            (
                *m,
                family(
        &mut fams,
                    &format!("nodedown_run_{}_seconds", m.name().replace('-', "_")),
                    &format!(
                        "Seconds from the fault to {} (nodedown's {} metric). Absent when not observed.",
                        m.name().trim_start_matches("time-to-"),
                        m.name()
                    ),
                ),
            )
        })
        .collect();
    let phase = family(
        &mut fams,
        "nodedown_run_phase_seconds",
        "Seconds from the fault (time zero) to the first observation of each failover phase.",
    );
    let outage = family(
        &mut fams,
        "nodedown_run_write_outage_seconds",
        "The write outage: from the last write acknowledged before the fault to the first acknowledged after it (a lower bound when nodedown_run_write_outage_restored is 0).",
    );
    let restored = family(
        &mut fams,
        "nodedown_run_write_outage_restored",
        "1 when writes were acknowledged again before the failover window closed, 0 when the outage was still open.",
    );
    let lost = family(
        &mut fams,
        "nodedown_run_lost_acknowledged_writes",
        "Acknowledged writes missing from the ledger after the failover (integrity checker).",
    );
    let writers = family(
        &mut fams,
        "nodedown_run_ledger_writers",
        "Writer incarnations found in the ledger: one after the other is a failover, two writing at once a split brain (nodedown_run_data).",
    );
    let all_ready = family(
        &mut fams,
        "nodedown_run_fleet_all_ready_seconds",
        "Seconds from the fault until every affected instance of a fleet was Ready again.",
    );
    let duration = family(
        &mut fams,
        "nodedown_run_duration_seconds",
        "The run's wall time, setup to heal.",
    );
    for (experiment, run) in report
        .experiments
        .iter()
        .flat_map(|e| e.runs.iter().map(move |r| (e.name.as_str(), r)))
    {
        let base = run_labels(experiment, run);
        let with = |extra: &str| {
            if extra.is_empty() {
                base.clone()
            } else {
                format!("{base},{extra}")
            }
        };
        for v in [Verdict::Pass, Verdict::Fail, Verdict::Unknown] {
            fams[verdict]
                .samples
                .push((with(&pair("verdict", v.as_str())), flag(run.verdict == v)));
        }
        fams[errored]
            .samples
            .push((with(""), flag(run.error.is_some())));
        let out = run.outcome.clone().unwrap_or_else(|| outcome::of(run));
        for r in [
            Recovery::Recovered,
            Recovery::PartlyRecovered,
            Recovery::NotRecovered,
            Recovery::NotFaulted,
        ] {
            fams[recovery]
                .samples
                .push((with(&pair("recovery", &kebab(&r))), flag(out.recovery == r)));
        }
        // Every harm is its own series: a split brain that lost writes sets both.
        if !out.data.is_empty() {
            for s in Data::WORST_FIRST {
                fams[data]
                    .samples
                    .push((with(&pair("data", &kebab(&s))), flag(out.data.contains(&s))));
            }
        }
        if let Some(t) = run
            .time_zero_at()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        {
            fams[fault_at]
                .samples
                .push((with(""), (t.as_millis() as f64) / 1000.0));
        }
        for (m, i) in &metric_fams {
            if let Some(ms) = run.metrics.get(m) {
                fams[*i].samples.push((with(""), secs(*ms)));
            }
        }
        for p in &run.phases {
            fams[phase]
                .samples
                .push((with(&pair("phase", p.name.name())), secs(p.at_ms)));
        }
        if let Some(w) = &run.write_outage {
            fams[outage].samples.push((with(""), secs(w.duration_ms)));
            fams[restored].samples.push((with(""), flag(w.restored)));
        }
        if let Some(i) = &run.integrity {
            fams[lost]
                .samples
                .push((with(""), i.lost_acknowledged as f64));
            fams[writers].samples.push((with(""), i.writers as f64));
        }
        if let Some(ms) = run.fleet.as_ref().and_then(|f| f.time_to_all_ready_ms) {
            fams[all_ready].samples.push((with(""), secs(ms)));
        }
        fams[duration]
            .samples
            .push((with(""), secs(run.duration_ms)));
    }
    if let Some(inv) = &report.invocation {
        let i = family(
            &mut fams,
            "nodedown_invocation_duration_seconds",
            "The invocation's wall time, by part (prepare, runs, finish) and in total.",
        );
        for (part, ms) in [
            ("prepare", inv.prepare_ms),
            ("runs", inv.runs_ms),
            ("finish", inv.finish_ms),
            ("total", inv.total_ms),
        ] {
            fams[i].samples.push((pair("part", part), secs(ms)));
        }
        let l = family(
            &mut fams,
            "nodedown_invocation_lanes",
            "How many lanes the invocation's runs went in (1: one after the other).",
        );
        fams[l].samples.push((String::new(), inv.lanes as f64));
    }
    let runs: Vec<&RunResult> = report.experiments.iter().flat_map(|e| &e.runs).collect();
    let r = family(
        &mut fams,
        "nodedown_invocation_runs",
        "The invocation's runs by verdict.",
    );
    for v in [Verdict::Pass, Verdict::Fail, Verdict::Unknown] {
        let n = runs.iter().filter(|run| run.verdict == v).count();
        fams[r]
            .samples
            .push((pair("verdict", v.as_str()), n as f64));
    }
    let n = family(
        &mut fams,
        "nodedown_invocation_not_run",
        "Runs of the invocation's experiments refused before anything was touched.",
    );
    fams[n]
        .samples
        .push((String::new(), report.not_run.len() as f64));

    write(&fams)
}

/// The text of `fams`: HELP and TYPE once per family, then its samples; families with no
/// sample left out.
fn write(fams: &[Family]) -> String {
    let mut out = String::new();
    for f in fams.iter().filter(|f| !f.samples.is_empty()) {
        let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(&f.help));
        let _ = writeln!(out, "# TYPE {} gauge", f.name);
        for (labels, value) in &f.samples {
            if labels.is_empty() {
                let _ = writeln!(out, "{} {}", f.name, value);
            } else {
                let _ = writeln!(out, "{}{{{labels}}} {}", f.name, value);
            }
        }
    }
    out
}

/// A qualification sheet as Prometheus text: each row's verdict (a state set), its runs and
/// passes, its time to Ready (p50, p90, max of its runs, where observed); the rows by verdict.
/// Labelled by the storage class, the driver and the Kubernetes version.
pub fn render_sheet(sheet: &super::sheet::Sheet) -> String {
    use super::sheet::RowVerdict;
    let env = &sheet.environment;
    let base = [
        pair("storage_class", &env.storage_class),
        pair("driver", env.driver.as_deref().unwrap_or_default()),
        pair(
            "kubernetes_version",
            env.kubernetes.as_deref().unwrap_or_default(),
        ),
    ]
    .join(",");
    let with = |extra: &str| format!("{base},{extra}");
    let mut fams: Vec<Family> = Vec::new();
    let verdict = family(
        &mut fams,
        "nodedown_qualify_row_verdict",
        "A qualification row's verdict: 1 for the row's, 0 for the others.",
    );
    let runs = family(
        &mut fams,
        "nodedown_qualify_row_runs",
        "The runs of a qualification row.",
    );
    let passed = family(
        &mut fams,
        "nodedown_qualify_row_passed_runs",
        "The runs of a qualification row that met its expectation.",
    );
    let ready = family(
        &mut fams,
        "nodedown_qualify_row_time_to_ready_seconds",
        "A qualification row's time from the fault to Ready over its runs (stat: p50, p90, max; nearest rank). Absent when no run became Ready.",
    );
    let rows = family(
        &mut fams,
        "nodedown_qualify_rows",
        "The qualification's rows by verdict.",
    );
    const VERDICTS: [RowVerdict; 4] = [
        RowVerdict::Pass,
        RowVerdict::Fail,
        RowVerdict::Unknown,
        RowVerdict::NotApplicable,
    ];
    for row in &sheet.rows {
        let at = pair("row", &row.id);
        for v in VERDICTS {
            fams[verdict].samples.push((
                with(&format!("{at},{}", pair("verdict", &kebab(&v)))),
                flag(row.verdict == v),
            ));
        }
        if row.verdict == RowVerdict::NotApplicable {
            continue;
        }
        fams[runs].samples.push((with(&at), row.runs as f64));
        fams[passed].samples.push((with(&at), row.passed as f64));
        if let Some(s) = &row.time_to_ready {
            let stats = [
                ("p50", Some(s.p50_ms)),
                ("p90", s.p90_ms),
                ("max", Some(s.max_ms)),
            ];
            for (stat, ms) in stats {
                if let Some(ms) = ms {
                    fams[ready]
                        .samples
                        .push((with(&format!("{at},{}", pair("stat", stat))), secs(ms)));
                }
            }
        }
    }
    for v in VERDICTS {
        let n = sheet.rows.iter().filter(|r| r.verdict == v).count();
        fams[rows]
            .samples
            .push((with(&pair("verdict", &kebab(&v))), n as f64));
    }
    write(&fams)
}

/// The run's labels: `experiment="…",variant="…",…` in [`RUN_LABELS`] order.
fn run_labels(experiment: &str, run: &RunResult) -> String {
    let env = run.environment.as_ref();
    let values = [
        experiment.to_string(),
        run.variant.clone(),
        run.repetition.to_string(),
        run.fault.as_str().to_string(),
        run.remediation.as_str().to_string(),
        env.and_then(|e| e.storage_class.clone())
            .unwrap_or_default(),
        env.and_then(|e| e.kubernetes.clone()).unwrap_or_default(),
    ];
    RUN_LABELS
        .iter()
        .zip(values)
        .map(|(k, v)| pair(k, &v))
        .collect::<Vec<_>>()
        .join(",")
}

/// `name="value"`, the value escaped as the format says (backslash, quote, newline).
fn pair(name: &str, value: &str) -> String {
    let escaped = value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("{name}=\"{escaped}\"")
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

fn flag(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// The kebab-case word results.json writes for a state.
fn kebab<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}
