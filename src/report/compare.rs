//! `nodedown compare` (pure): a candidate's results against a baseline's, variant by variant —
//! each metric's median, p90 and range, the change, and whether it got worse than its
//! tolerance; pass rates; the integrity checker's verdicts. Renderers for the terminal,
//! Markdown (the job summary) and JSON.

use crate::report::{Report, RunResult, VariantSummary};
use crate::units::{fmt_ms, Spread};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// How much worse a metric may get: a share of the baseline's median, or a fixed time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Tolerance {
    Percent(f64),
    Millis(u64),
}

impl Tolerance {
    /// `+20%`, `20%`, `+5s`, `1m30s`, `250ms` (the sign is optional: only "worse" is checked).
    pub fn parse(text: &str) -> Result<Tolerance, String> {
        let t = text.trim().trim_start_matches('+');
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p
                .trim()
                .parse()
                .map_err(|_| format!("`{text}` is not a tolerance; write e.g. +20% or +5s"))?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("`{text}`: a tolerance is 0% or more"));
            }
            return Ok(Tolerance::Percent(v));
        }
        crate::spec::duration::parse(t)
            .map(|d| Tolerance::Millis(crate::units::millis(d)))
            .map_err(|_| format!("`{text}` is not a tolerance; write e.g. +20% or +5s"))
    }

    /// The largest candidate median still within tolerance of `baseline`.
    pub fn limit(self, baseline: u64) -> u64 {
        match self {
            Tolerance::Percent(p) => baseline + (baseline as f64 * p / 100.0).floor() as u64,
            Tolerance::Millis(ms) => baseline.saturating_add(ms),
        }
    }

    pub fn describe(self) -> String {
        match self {
            Tolerance::Percent(p) => format!("+{p}%"),
            Tolerance::Millis(ms) => format!("+{}", fmt_ms(ms)),
        }
    }
}

/// The tolerance of every metric: a default and overrides by metric name (`write-outage`
/// included).
#[derive(Debug, Clone, PartialEq)]
pub struct Tolerances {
    pub default: Tolerance,
    pub per_metric: BTreeMap<String, Tolerance>,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            default: Tolerance::Percent(20.0),
            per_metric: BTreeMap::new(),
        }
    }
}

impl Tolerances {
    pub fn of(&self, metric: &str) -> Tolerance {
        self.per_metric.get(metric).copied().unwrap_or(self.default)
    }

    /// Sets `metric`'s own tolerance, and returns the measure's one name: another spelling of
    /// a measure (`writeOutage`, `WRITES-DOWN`, `ready`) is taken as it (the caller says so); a
    /// name compare does not know is refused, naming the closest one (a misspelt key would
    /// otherwise fall back to the default in silence).
    pub fn set(&mut self, metric: &str, tolerance: Tolerance) -> Result<&'static str, String> {
        let Some(name) = measure_name(metric) else {
            let known = measure_names();
            let closest = crate::spec::closest(metric, &known)
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "`{metric}` is not a metric compare knows{closest}; the metrics: {}",
                known.join(", ")
            ));
        };
        self.per_metric.insert(name.to_string(), tolerance);
        Ok(name)
    }
}

/// Every measure compare compares, by its one name.
pub fn measure_names() -> Vec<&'static str> {
    crate::timeline::Metric::ALL
        .iter()
        .map(|m| m.name())
        .chain([WRITE_OUTAGE])
        .collect()
}

/// The one name of the measure `given` names in any of the spellings nodedown has used: its
/// own (`time-to-ready`), the experiment's key (`timeToReady`), a table's column (`READY`,
/// `NOT-READY`, `WRITES-DOWN`, `WRITE-OUTAGE`) or words (`writes-down`, `outage`).
pub fn measure_name(given: &str) -> Option<&'static str> {
    let given = given.trim();
    // A column's name (`WRITES-DOWN`) is all capitals; an experiment's key is camelCase.
    let kebab = if given.chars().any(|c| c.is_ascii_lowercase()) {
        crate::report::text::measure(given)
    } else {
        given.to_ascii_lowercase()
    };
    let kebab = kebab.trim_start_matches('-');
    let known = measure_names();
    if let Some(k) = known.iter().find(|k| **k == kebab) {
        return Some(k);
    }
    match kebab {
        "writes-down" | "outage" | "write-outage-ms" => Some(WRITE_OUTAGE),
        "ready" => Some("time-to-ready"),
        "not-ready" => Some("time-to-not-ready"),
        "running" => Some("time-to-running"),
        _ => None,
    }
}

/// The write outage's name among the metrics compare compares.
pub const WRITE_OUTAGE: &str = "write-outage";

/// What a comparison of two samples says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Significantly worse, and beyond the tolerance.
    Worse,
    /// Significantly better.
    Better,
    /// No difference the samples can show (or worse within the tolerance).
    Same,
    /// Too few runs on a side for any result to be significant at the level asked for.
    CannotTell,
    /// Measured on one side only (or the variant is on one side only).
    NotCompared,
}

impl Change {
    pub fn word(self) -> &'static str {
        match self {
            Change::Worse => "WORSE",
            Change::Better => "better",
            Change::Same => "~",
            Change::CannotTell => "cannot tell",
            Change::NotCompared => "not compared",
        }
    }
}

/// How compare decides: the tolerances, the significance level, whether too few runs fail.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub tolerances: Tolerances,
    /// The significance level of the Mann–Whitney U test (two-sided).
    pub alpha: f64,
    /// Count a change beyond the tolerance as worse even when the runs are too few to tell it
    /// from noise (the median alone decides, as before 2026-12-06).
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tolerances: Tolerances::default(),
            alpha: 0.05,
            strict: false,
        }
    }
}

/// The repetitions that give a comparison a chance: 5 a side reach p = 0.008.
pub const ENOUGH_RUNS: usize = 5;

/// One measure of one variant, baseline against candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricDelta {
    pub metric: String,
    /// Over the runs that measured it (`count` is n).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<Spread>,
    /// Candidate median against baseline median, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_percent: Option<f64>,
    pub tolerance: String,
    /// The two-sided p-value of the Mann–Whitney U test of the two samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    pub change: Change,
    /// The candidate's median is past the tolerance, on the worse side.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beyond_tolerance: bool,
    /// Counts against the candidate: `Worse`, or with `--strict` a median beyond the tolerance
    /// that the runs cannot tell from noise.
    pub regression: bool,
}

/// One variant, baseline against candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantDelta {
    pub experiment: String,
    pub variant: String,
    /// Runs of the variant on each side (0: missing there).
    pub baseline_runs: usize,
    pub candidate_runs: usize,
    /// `None` when the variant is missing on that side.
    pub baseline_pass_rate: Option<f64>,
    pub candidate_pass_rate: Option<f64>,
    /// The pass rate and the integrity verdicts, as samples of one value per run.
    pub verdicts: Vec<MetricDelta>,
    pub metrics: Vec<MetricDelta>,
    /// Why this variant counts as worse (empty: it does not).
    pub regressions: Vec<String>,
    /// Medians past their tolerance that the runs are too few to tell from noise: a regression
    /// may hide there.
    pub cannot_tell: Vec<String>,
    /// Why the variant was not compared (on one side only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_compared: Option<String>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub alpha: f64,
    pub strict: bool,
    /// Where the two sides ran differently (Kubernetes, nodes, storage, backend, lanes…): a
    /// change may be theirs.
    pub environment: Vec<String>,
    pub variants: Vec<VariantDelta>,
    /// How many variants got worse.
    pub regressed: usize,
    /// How many variants have a change the runs cannot tell from noise.
    pub undecided: usize,
}

fn summaries(report: &Report) -> Vec<(String, VariantSummary, Vec<&RunResult>)> {
    let mut out = Vec::new();
    for exp in &report.experiments {
        let variants = if exp.variants.is_empty() {
            crate::report::assemble::summarize(&exp.runs)
        } else {
            exp.variants.clone()
        };
        for v in variants {
            let runs = exp.runs.iter().filter(|r| r.variant == v.variant).collect();
            out.push((exp.name.clone(), v, runs));
        }
    }
    out
}

fn rank(verdict: crate::verdict::Verdict) -> u64 {
    match verdict {
        crate::verdict::Verdict::Pass => 0,
        crate::verdict::Verdict::Unknown => 1,
        crate::verdict::Verdict::Fail => 2,
    }
}

/// Variants whose resolved specs differ between the two reports (their `specHash` sets), as
/// `experiment/variant`.
pub fn spec_changes(baseline: &Report, candidate: &Report) -> Vec<String> {
    let hashes = |r: &Report| -> BTreeMap<(String, String), Vec<String>> {
        let mut m: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for e in &r.experiments {
            for run in &e.runs {
                let h = m.entry((e.name.clone(), run.variant.clone())).or_default();
                if !h.contains(&run.spec_hash) {
                    h.push(run.spec_hash.clone());
                }
            }
        }
        m
    };
    let (b, c) = (hashes(baseline), hashes(candidate));
    b.iter()
        .filter_map(|(k, hb)| {
            let hc = c.get(k)?;
            (hb != hc).then(|| format!("{}/{}", k.0, k.1))
        })
        .collect()
}

/// Where the two reports' runs happened differently: each property whose set of values differs,
/// `nodes 4 → 7`.
pub fn environment_differences(baseline: &Report, candidate: &Report) -> Vec<String> {
    type Prop = (&'static str, fn(&RunResult) -> Option<String>);
    let props: [Prop; 8] = [
        ("provider", |r| r.provider.map(|p| p.as_str().to_string())),
        ("Kubernetes", |r| {
            r.environment.as_ref().and_then(|e| e.kubernetes.clone())
        }),
        ("nodes", |r| {
            r.environment
                .as_ref()
                .and_then(|e| e.node_count.map(|n| n.to_string()))
        }),
        ("storage class", |r| {
            r.environment.as_ref().and_then(|e| e.storage_class.clone())
        }),
        ("provisioner", |r| {
            r.environment.as_ref().and_then(|e| e.provisioner.clone())
        }),
        ("faults via", |r| {
            r.environment
                .as_ref()
                .and_then(|e| e.backend.map(|b| b.to_string()))
        }),
        ("kernel", |r| {
            r.environment
                .as_ref()
                .and_then(|e| e.target_node_info.as_ref().map(|n| n.kernel.clone()))
        }),
        ("runs", |r| {
            Some(r.lane.map_or("one at a time".into(), |_| "in lanes".into()))
        }),
    ];
    fn runs(r: &Report) -> Vec<&RunResult> {
        r.experiments.iter().flat_map(|e| &e.runs).collect()
    }
    let (b, c) = (runs(baseline), runs(candidate));
    let mut out = Vec::new();
    for (name, get) in props {
        let values = |runs: &[&RunResult]| {
            let mut v: Vec<String> = runs.iter().filter_map(|r| get(r)).collect();
            v.sort();
            v.dedup();
            v
        };
        let (vb, vc) = (values(&b), values(&c));
        if vb != vc && !(vb.is_empty() || vc.is_empty()) {
            out.push(format!("{name} {} → {}", vb.join(", "), vc.join(", ")));
        }
    }
    let lanes = |r: &Report| r.invocation.as_ref().map(|i| i.lanes);
    if let (Some(lb), Some(lc)) = (lanes(baseline), lanes(candidate)) {
        if lb != lc {
            out.retain(|d| !d.starts_with("runs "));
            out.push(format!("lanes {lb} → {lc}"));
        }
    }
    out
}

/// One measure, two samples: its spreads, the change of the medians, the test and the decision.
/// Times and ranks alike get worse upwards.
fn delta(name: &str, vb: &[u64], vc: &[u64], t: Tolerance, opts: &Options) -> MetricDelta {
    let (sb, sc) = (crate::units::spread(vb), crate::units::spread(vc));
    let (change_percent, p_value, change, beyond) = match (sb, sc) {
        (Some(sb), Some(sc)) => {
            let pct = (sb.p50_ms > 0)
                .then(|| (sc.p50_ms as f64 - sb.p50_ms as f64) * 100.0 / sb.p50_ms as f64);
            let beyond = sc.p50_ms > t.limit(sb.p50_ms);
            let p = super::stats::mann_whitney_p(vb, vc);
            let change = if super::stats::min_p_value(vb.len(), vc.len()) > opts.alpha {
                if sc.p50_ms == sb.p50_ms {
                    Change::Same
                } else {
                    Change::CannotTell
                }
            } else {
                match p {
                    Some(p) if p < opts.alpha && beyond => Change::Worse,
                    Some(p) if p < opts.alpha && sc.p50_ms < sb.p50_ms => Change::Better,
                    _ => Change::Same,
                }
            };
            (pct, p, change, beyond)
        }
        _ => (None, None, Change::NotCompared, false),
    };
    MetricDelta {
        metric: name.to_string(),
        baseline: sb,
        candidate: sc,
        change_percent,
        tolerance: t.describe(),
        p_value,
        change,
        beyond_tolerance: beyond,
        regression: change == Change::Worse
            || (opts.strict && change == Change::CannotTell && beyond),
    }
}

/// Compares `candidate` with `baseline`, matching variants by experiment and variant name.
///
/// Every measure is a sample of one value per run: each metric over the runs that measured
/// it, a phase reached or not (1/0) over all runs, the verdict and the integrity verdict as
/// ranks. A change counts only when the Mann–Whitney U test finds it at `alpha` **and** the
/// candidate's median is beyond the tolerance; with too few runs on a side to reach `alpha` at
/// all, the change is `cannot tell` and counts only with `strict`. A variant on one side only
/// is not compared.
pub fn compare(baseline: &Report, candidate: &Report, opts: &Options) -> Comparison {
    let base = summaries(baseline);
    let cand = summaries(candidate);
    let mut keys: Vec<(String, String)> = Vec::new();
    for (e, v, _) in base.iter().chain(cand.iter()) {
        let k = (e.clone(), v.variant.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    type Side<'a> = (String, VariantSummary, Vec<&'a RunResult>);
    fn find<'s, 'r>(
        side: &'s [Side<'r>],
        k: &(String, String),
    ) -> Option<(&'s VariantSummary, &'s [&'r RunResult])> {
        side.iter()
            .find(|(e, v, _)| *e == k.0 && v.variant == k.1)
            .map(|(_, v, runs)| (v, runs.as_slice()))
    }
    let mut variants = Vec::new();
    for k in keys {
        let (b, c) = (find(&base, &k), find(&cand, &k));
        let mut regressions = Vec::new();
        let mut cannot_tell = Vec::new();
        let mut metrics = Vec::new();
        let mut verdicts = Vec::new();
        let mut not_compared = None;
        match (&b, &c) {
            (Some(_), None) => not_compared = Some("only in the baseline".to_string()),
            (None, Some(_)) => not_compared = Some("only in the candidate".to_string()),
            (None, None) => unreachable!("a key comes from one side"),
            (Some((b, rb)), Some((c, rc))) => {
                let n = (rb.len(), rc.len());
                // Verdicts as ranks per run: pass 0, unknown 1, fail 2 — the pass rate's test.
                let ranks = |runs: &[&RunResult]| -> Vec<u64> {
                    runs.iter().map(|r| rank(r.verdict)).collect()
                };
                let mut d = delta(
                    "verdict",
                    &ranks(rb),
                    &ranks(rc),
                    Tolerance::Millis(0),
                    opts,
                );
                d.tolerance = "any".into();
                verdicts.push(d);
                let integrity = |runs: &[&RunResult]| -> Vec<u64> {
                    runs.iter()
                        .filter_map(|r| r.integrity.as_ref().map(|i| rank(i.verdict)))
                        .collect()
                };
                let (ib, ic) = (integrity(rb), integrity(rc));
                if !ib.is_empty() || !ic.is_empty() {
                    let mut d = delta("integrity", &ib, &ic, Tolerance::Millis(0), opts);
                    d.tolerance = "any".into();
                    verdicts.push(d);
                }
                // Failover order (the metrics' own).
                let mut names: Vec<crate::timeline::Metric> =
                    b.metrics.keys().chain(c.metrics.keys()).copied().collect();
                names.sort();
                names.dedup();
                for name in names {
                    let values = |runs: &[&RunResult]| -> Vec<u64> {
                        runs.iter()
                            .filter_map(|r| r.metrics.get(&name).copied())
                            .collect()
                    };
                    let (vb, vc) = (values(rb), values(rc));
                    // Reached or not, per run: a phase the candidate stopped reaching.
                    let reached = |runs: &[&RunResult]| -> Vec<u64> {
                        runs.iter()
                            .map(|r| u64::from(!r.metrics.contains_key(&name)))
                            .collect()
                    };
                    if vb.len() * rc.len() > vc.len() * rb.len() {
                        let mut d = delta(
                            &format!("{name} missed"),
                            &reached(rb),
                            &reached(rc),
                            Tolerance::Millis(0),
                            opts,
                        );
                        d.tolerance = "any".into();
                        if d.change != Change::Same {
                            verdicts.push(d);
                        }
                    }
                    metrics.push(delta(
                        name.name(),
                        &vb,
                        &vc,
                        opts.tolerances.of(name.name()),
                        opts,
                    ));
                }
                let outages = |runs: &[&RunResult]| -> Vec<u64> {
                    runs.iter()
                        .filter_map(|r| r.write_outage.as_ref())
                        .filter(|o| o.restored)
                        .map(|o| o.duration_ms)
                        .collect()
                };
                let (ob, oc) = (outages(rb), outages(rc));
                if !ob.is_empty() || !oc.is_empty() {
                    metrics.push(delta(
                        WRITE_OUTAGE,
                        &ob,
                        &oc,
                        opts.tolerances.of(WRITE_OUTAGE),
                        opts,
                    ));
                }
                for d in verdicts.iter().chain(&metrics) {
                    let text = describe(d, n);
                    if d.regression {
                        regressions.push(text);
                    } else if d.change == Change::CannotTell && d.beyond_tolerance {
                        cannot_tell.push(text);
                    }
                }
            }
        }
        variants.push(VariantDelta {
            experiment: k.0,
            variant: k.1,
            baseline_runs: b.as_ref().map_or(0, |(_, r)| r.len()),
            candidate_runs: c.as_ref().map_or(0, |(_, r)| r.len()),
            baseline_pass_rate: b.as_ref().map(|(v, _)| v.pass_rate),
            candidate_pass_rate: c.as_ref().map(|(v, _)| v.pass_rate),
            verdicts,
            metrics,
            regressions,
            cannot_tell,
            not_compared,
        });
    }
    let regressed = variants
        .iter()
        .filter(|v| !v.regressions.is_empty())
        .count();
    let undecided = variants
        .iter()
        .filter(|v| v.regressions.is_empty() && !v.cannot_tell.is_empty())
        .count();
    Comparison {
        alpha: opts.alpha,
        strict: opts.strict,
        environment: environment_differences(baseline, candidate),
        variants,
        regressed,
        undecided,
    }
}

/// `time-to-ready 27.7s → 35.2s (+27.1%, p=0.008, tolerance +20%)`.
fn describe(d: &MetricDelta, runs: (usize, usize)) -> String {
    let values = match (d.baseline, d.candidate) {
        (Some(b), Some(c)) if d.tolerance == "any" => {
            format!(
                "{} → {}",
                value_word(&d.metric, b.p50_ms),
                value_word(&d.metric, c.p50_ms)
            )
        }
        (Some(b), Some(c)) => format!("{} → {}", fmt_ms(b.p50_ms), fmt_ms(c.p50_ms)),
        _ => String::new(),
    };
    let why = match d.change {
        Change::CannotTell if d.regression => format!(
            "--strict: beyond the tolerance {}, though n={} vs {} cannot tell it from noise",
            d.tolerance, runs.0, runs.1
        ),
        Change::CannotTell => format!(
            "n={} vs {}: cannot tell from noise; rerun each with --repeat {ENOUGH_RUNS}",
            runs.0, runs.1
        ),
        _ => match d.p_value {
            Some(p) => format!("p={p:.3}, tolerance {}", d.tolerance),
            None => format!("tolerance {}", d.tolerance),
        },
    };
    format!("{} {values} ({why})", d.metric)
}

/// A rank's median as a word: the verdict (`pass`, `unknown`, `fail`) or reached (`yes`/`no`).
fn value_word(metric: &str, v: u64) -> &'static str {
    if metric.ends_with(" missed") {
        if v == 0 {
            "reached"
        } else {
            "missed"
        }
    } else {
        match v {
            0 => "pass",
            1 => "unknown",
            _ => "fail",
        }
    }
}

fn cell(s: Option<Spread>) -> String {
    match s {
        Some(s) if s.count > 1 => format!(
            "{} (n={}, {}–{})",
            fmt_ms(s.p50_ms),
            s.count,
            crate::units::fmt_opt_ms(s.min_ms),
            fmt_ms(s.max_ms)
        ),
        Some(s) => format!("{} (n=1)", fmt_ms(s.p50_ms)),
        None => "—".into(),
    }
}

fn change(d: &MetricDelta) -> String {
    match d.change_percent {
        Some(p) => format!("{p:+.1}%"),
        None => "—".into(),
    }
}

fn significance(d: &MetricDelta, alpha: f64) -> String {
    match (d.change, d.p_value) {
        (Change::CannotTell, _) => "cannot tell".into(),
        (Change::NotCompared, _) => "not compared".into(),
        // Significantly worse, but by less than the tolerance allows.
        (Change::Same, Some(p)) if p < alpha => format!("within tol p={p:.3}"),
        (c, Some(p)) => format!("{} p={p:.3}", c.word()),
        (c, None) => c.word().into(),
    }
}

fn rate(r: Option<f64>) -> String {
    r.map_or("—".into(), |r| format!("{:.0}%", r * 100.0))
}

fn mark(v: &VariantDelta) -> &'static str {
    if v.not_compared.is_some() {
        "not compared"
    } else if !v.regressions.is_empty() {
        "WORSE"
    } else if !v.cannot_tell.is_empty() {
        "cannot tell"
    } else {
        "ok"
    }
}

/// The closing lines: counts, and what to do about `cannot tell`.
fn tally(c: &Comparison) -> String {
    let compared = c
        .variants
        .iter()
        .filter(|v| v.not_compared.is_none())
        .count();
    let not = c.variants.len() - compared;
    let mut s = format!(
        "{compared} variant(s) compared: {} worse, {} cannot tell (past the tolerance on too few runs), {} no significant change",
        c.regressed,
        c.undecided,
        compared - c.regressed - c.undecided
    );
    if not > 0 {
        s.push_str(&format!("; {not} not compared (on one side only)"));
    }
    if c.undecided > 0 {
        s.push_str(&format!(
            "\ncannot tell: too few runs for any difference to be significant at α={}; rerun each side with --repeat {ENOUGH_RUNS}{}",
            c.alpha,
            if c.strict {
                " (--strict: a median beyond its tolerance counts as worse anyway)"
            } else {
                " (or give --strict to fail on the medians alone)"
            }
        ));
    }
    s
}

/// For the terminal.
pub fn render_table(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Mann–Whitney U, two-sided, α={}; a change counts when significant and beyond its tolerance{}",
        c.alpha,
        if c.strict { "; --strict" } else { "" }
    );
    if !c.environment.is_empty() {
        let _ = writeln!(out, "environment differs: {}", c.environment.join("; "));
    }
    for v in &c.variants {
        let _ = writeln!(
            out,
            "\n{:<12} {}/{}  runs {} → {}  pass rate {} → {}{}",
            mark(v),
            v.experiment,
            v.variant,
            v.baseline_runs,
            v.candidate_runs,
            rate(v.baseline_pass_rate),
            rate(v.candidate_pass_rate),
            v.not_compared
                .as_ref()
                .map(|w| format!("  ({w})"))
                .unwrap_or_default()
        );
        for d in v.verdicts.iter().filter(|d| d.change != Change::Same) {
            let _ = writeln!(
                out,
                "      {}",
                describe(d, (v.baseline_runs, v.candidate_runs))
            );
        }
        for d in &v.metrics {
            let _ = writeln!(
                out,
                "      {:<22} {:>26}  →  {:<26} {:>8}  {:<19} tol {}{}",
                d.metric,
                cell(d.baseline),
                cell(d.candidate),
                change(d),
                significance(d, c.alpha),
                d.tolerance,
                if d.regression { "  WORSE" } else { "" }
            );
        }
        for r in &v.regressions {
            let _ = writeln!(out, "      worse: {r}");
        }
        for r in &v.cannot_tell {
            let _ = writeln!(out, "      cannot tell: {r}");
        }
    }
    let _ = writeln!(out, "\n{}", tally(c));
    out
}

/// For a GitHub job summary.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let icon = if c.regressed > 0 {
        "❌"
    } else if c.undecided > 0 {
        "❔"
    } else {
        "✅"
    };
    let _ = writeln!(out, "## {icon} nodedown compare\n");
    let _ = writeln!(out, "{}\n", tally(c).replace('\n', "\n\n"));
    let _ = writeln!(
        out,
        "Mann–Whitney U, two-sided, α={}; a change counts when significant and beyond its tolerance. Cells: median (n, min–max).\n",
        c.alpha
    );
    if !c.environment.is_empty() {
        let _ = writeln!(
            out,
            "**Environment differs:** {}\n",
            c.environment.join("; ").replace('|', "\\|")
        );
    }
    let _ = writeln!(
        out,
        "| variant | metric | baseline | candidate | change | significance | tolerance |\n|---|---|--:|--:|--:|---|--:|"
    );
    for v in &c.variants {
        let name = format!("{}/{}", v.experiment, v.variant).replace('|', "\\|");
        if let Some(why) = &v.not_compared {
            let _ = writeln!(out, "| {name} | not compared: {why} | | | | | |");
            continue;
        }
        let _ = writeln!(
            out,
            "| {name} | pass rate | {} (n={}) | {} (n={}) | | {} | |",
            rate(v.baseline_pass_rate),
            v.baseline_runs,
            rate(v.candidate_pass_rate),
            v.candidate_runs,
            v.verdicts
                .first()
                .map(|d| significance(d, c.alpha))
                .unwrap_or_default()
        );
        for d in &v.metrics {
            let flag = if d.regression { " ❌" } else { "" };
            let _ = writeln!(
                out,
                "| {name} | {}{flag} | {} | {} | {} | {} | {} |",
                d.metric,
                cell(d.baseline),
                cell(d.candidate),
                change(d),
                significance(d, c.alpha),
                d.tolerance
            );
        }
    }
    let worse: Vec<String> = c
        .variants
        .iter()
        .flat_map(|v| {
            v.regressions
                .iter()
                .map(move |r| format!("- **{}/{}**: {r}", v.experiment, v.variant))
        })
        .collect();
    if !worse.is_empty() {
        let _ = writeln!(out, "\n### Worse\n\n{}", worse.join("\n"));
    }
    let undecided: Vec<String> = c
        .variants
        .iter()
        .flat_map(|v| {
            v.cannot_tell
                .iter()
                .map(move |r| format!("- **{}/{}**: {r}", v.experiment, v.variant))
        })
        .collect();
    if !undecided.is_empty() {
        let _ = writeln!(out, "\n### Cannot tell\n\n{}", undecided.join("\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::fixtures::recorded;

    #[test]
    fn a_misspelt_tolerance_key_is_refused_naming_the_closest_metric() {
        let mut t = Tolerances::default();
        let e = t
            .set("time-to-runing", Tolerance::Percent(10.0))
            .unwrap_err();
        assert!(e.contains("did you mean `time-to-running`?"), "{e}");
        assert!(t
            .set("bogus-key-entirely", Tolerance::Percent(10.0))
            .unwrap_err()
            .contains("the metrics: time-to-not-ready"));
        t.set("write-outage", Tolerance::Percent(5.0)).unwrap();
        t.set("time-to-running", Tolerance::Percent(10.0)).unwrap();
        // Every other spelling of a measure is that measure.
        let mut other = Tolerances::default();
        for (given, name) in [
            ("writes-down", "write-outage"),
            ("WRITES-DOWN", "write-outage"),
            ("writeOutage", "write-outage"),
            ("timeToReady", "time-to-ready"),
            ("READY", "time-to-ready"),
            ("NOT-READY", "time-to-not-ready"),
        ] {
            assert_eq!(
                other.set(given, Tolerance::Percent(7.0)),
                Ok(name),
                "{given}"
            );
            assert_eq!(other.of(name), Tolerance::Percent(7.0));
        }
        assert_eq!(t.of("time-to-running"), Tolerance::Percent(10.0));
        assert_eq!(t.of("time-to-ready"), Tolerance::Percent(20.0));
    }

    #[test]
    fn tolerances_parse_and_bound() {
        assert_eq!(Tolerance::parse("+20%").unwrap(), Tolerance::Percent(20.0));
        assert_eq!(Tolerance::parse("5s").unwrap(), Tolerance::Millis(5_000));
        assert_eq!(
            Tolerance::parse("+1m30s").unwrap(),
            Tolerance::Millis(90_000)
        );
        assert!(Tolerance::parse("fast").unwrap_err().contains("+20%"));
        assert!(Tolerance::parse("-5%").is_err());
        assert_eq!(Tolerance::Percent(20.0).limit(10_000), 12_000);
        assert_eq!(Tolerance::Millis(500).limit(10_000), 10_500);
    }

    #[test]
    fn a_recording_against_itself_is_unchanged() {
        let r = recorded("network-partition");
        let c = compare(&r, &r, &Options::default());
        assert_eq!((c.regressed, c.undecided), (0, 0), "{c:#?}");
        assert_eq!(c.variants.len(), 2);
        assert!(c.variants[0]
            .metrics
            .iter()
            .any(|d| d.metric == "time-to-ready"
                && d.change_percent == Some(0.0)
                && d.change == Change::Same));
        assert!(c.environment.is_empty());
        assert!(spec_changes(&r, &r).is_empty());
    }

    /// The recorded fenced partition run, repeated `n` times with its time-to-ready scaled by
    /// each factor in turn (a synthetic spread around a real run).
    fn repeated(factors: &[f64], fail: bool) -> Report {
        let mut r = recorded("network-partition");
        let exp = &mut r.experiments[0];
        let one = exp
            .runs
            .iter()
            .find(|x| x.variant == "oos-taint-fenced")
            .unwrap()
            .clone();
        exp.runs = factors
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut run = one.clone();
                run.repetition = i as u32 + 1;
                let ready = run
                    .metrics
                    .get_mut(&crate::timeline::Metric::TimeToReady)
                    .unwrap();
                *ready = (*ready as f64 * f) as u64;
                if fail {
                    run.verdict = crate::verdict::Verdict::Fail;
                    run.integrity.as_mut().unwrap().verdict = crate::verdict::Verdict::Fail;
                }
                run
            })
            .collect();
        exp.variants = crate::report::assemble::summarize(&exp.runs);
        r
    }

    fn the_variant(c: &Comparison) -> &VariantDelta {
        c.variants
            .iter()
            .find(|v| v.variant == "oos-taint-fenced")
            .unwrap()
    }

    #[test]
    fn one_run_a_side_cannot_tell_a_change_from_noise_unless_strict() {
        let (base, cand) = (repeated(&[1.0], false), repeated(&[1.5], false));
        let c = compare(&base, &cand, &Options::default());
        assert_eq!((c.regressed, c.undecided), (0, 1), "{c:#?}");
        let v = the_variant(&c);
        let d = v
            .metrics
            .iter()
            .find(|d| d.metric == "time-to-ready")
            .unwrap();
        assert_eq!(d.change, Change::CannotTell);
        assert!(!d.regression);
        assert!(v
            .cannot_tell
            .iter()
            .any(|t| t.contains("rerun each with --repeat 5")));
        let table = render_table(&c);
        assert!(table.contains("cannot tell"), "{table}");
        assert!(table.contains("(n=1)"), "{table}");
        assert!(!table.contains("WORSE"), "{table}");
        let strict = Options {
            strict: true,
            ..Options::default()
        };
        let c = compare(&base, &cand, &strict);
        assert_eq!(c.regressed, 1);
        assert!(render_table(&c).contains("--strict: beyond the tolerance +20%"));
        // A candidate that failed where the baseline passed, once each: not told either.
        let c = compare(&base, &repeated(&[1.0], true), &Options::default());
        assert_eq!(c.regressed, 0, "{c:#?}");
    }

    #[test]
    fn five_runs_a_side_show_a_real_change_and_pass_noise() {
        let base = repeated(&[0.95, 1.0, 1.02, 0.98, 1.05], false);
        // Every candidate slower by about half: significant (p = 2/252) and beyond +20%.
        let slow = repeated(&[1.45, 1.5, 1.6, 1.48, 1.55], false);
        let c = compare(&base, &slow, &Options::default());
        assert_eq!(c.regressed, 1, "{c:#?}");
        let v = the_variant(&c);
        let d = v
            .metrics
            .iter()
            .find(|d| d.metric == "time-to-ready")
            .unwrap();
        assert_eq!(d.change, Change::Worse);
        assert!(d.p_value.unwrap() < 0.01, "{d:?}");
        assert!(v.regressions[0].starts_with("time-to-ready"), "{v:?}");
        assert!(render_markdown(&c).contains("❌"));
        // Slower but within the tolerance: significant, not worse.
        let tol = Options {
            tolerances: Tolerances {
                per_metric: [("time-to-ready".to_string(), Tolerance::Percent(80.0))].into(),
                ..Tolerances::default()
            },
            ..Options::default()
        };
        assert_eq!(compare(&base, &slow, &tol).regressed, 0);
        // The same spread drawn again: interleaved, no change.
        let noise = repeated(&[1.03, 0.97, 1.0, 1.04, 0.96], false);
        let c = compare(&base, &noise, &Options::default());
        assert_eq!((c.regressed, c.undecided), (0, 0), "{c:#?}");
        // Faster: better, not worse.
        let fast = repeated(&[0.5, 0.55, 0.6, 0.52, 0.58], false);
        let c = compare(&base, &fast, &Options::default());
        let d = the_variant(&c)
            .metrics
            .iter()
            .find(|d| d.metric == "time-to-ready")
            .unwrap()
            .clone();
        assert_eq!(d.change, Change::Better);
        // Five failures against five passes: the verdict and the integrity are worse.
        let failing = repeated(&[1.0; 5], true);
        let c = compare(&base, &failing, &Options::default());
        let text = the_variant(&c).regressions.join("; ");
        assert!(text.contains("verdict pass → fail"), "{text}");
        assert!(text.contains("integrity pass → fail"), "{text}");
    }

    #[test]
    fn a_variant_on_one_side_only_is_not_compared() {
        let base = recorded("network-partition");
        let mut cand = base.clone();
        cand.experiments[0]
            .runs
            .retain(|r| r.variant != "oos-taint-fenced");
        cand.experiments[0].variants =
            crate::report::assemble::summarize(&cand.experiments[0].runs);
        let c = compare(&base, &cand, &Options::default());
        assert_eq!(c.regressed, 0);
        let v = the_variant(&c);
        assert_eq!(v.not_compared.as_deref(), Some("only in the baseline"));
        assert!(render_table(&c).contains("1 not compared (on one side only)"));
    }

    #[test]
    fn environment_differences_are_named() {
        let base = recorded("attach-detach");
        let cand = recorded("attach-detach-lanes");
        let d = environment_differences(&base, &cand);
        assert!(d.iter().any(|x| x == "nodes 4 → 7"), "{d:?}");
        assert!(
            d.iter()
                .any(|x| x == "runs one at a time → in lanes" || x.starts_with("lanes ")),
            "{d:?}"
        );
    }

    #[test]
    fn changed_specs_are_named() {
        let base = recorded("node-shutdown");
        let mut cand = base.clone();
        cand.experiments[0].runs[0].spec_hash = "0000".into();
        assert_eq!(
            spec_changes(&base, &cand),
            vec!["node-shutdown/none".to_string()]
        );
    }
}
