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

    /// Sets `metric`'s own tolerance; a name compare does not know is refused, naming the
    /// closest one (a misspelt key would otherwise fall back to the default in silence).
    pub fn set(&mut self, metric: &str, tolerance: Tolerance) -> Result<(), String> {
        let known: Vec<&str> = crate::timeline::Metric::ALL
            .iter()
            .map(|m| m.name())
            .chain([WRITE_OUTAGE])
            .collect();
        if !known.contains(&metric) {
            let closest = crate::spec::closest(metric, &known)
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "`{metric}` is not a metric compare knows{closest}; the metrics: {}",
                known.join(", ")
            ));
        }
        self.per_metric.insert(metric.to_string(), tolerance);
        Ok(())
    }
}

/// The write outage's name among the metrics compare compares.
pub const WRITE_OUTAGE: &str = "write-outage";

/// One metric of one variant, baseline against candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricDelta {
    pub metric: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<Spread>,
    /// Candidate median against baseline median, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_percent: Option<f64>,
    pub tolerance: String,
    /// Worse than the tolerance, or measured in the baseline and never reached now.
    pub regression: bool,
}

/// One variant, baseline against candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantDelta {
    pub experiment: String,
    pub variant: String,
    /// `None` when the variant is missing on that side.
    pub baseline_pass_rate: Option<f64>,
    pub candidate_pass_rate: Option<f64>,
    pub metrics: Vec<MetricDelta>,
    /// Why this variant counts as worse (empty: it does not).
    pub regressions: Vec<String>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub variants: Vec<VariantDelta>,
    /// How many variants got worse.
    pub regressed: usize,
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

/// The worst integrity verdict of a variant's checker results: pass < unknown < fail.
fn worst_integrity(v: &VariantSummary) -> Option<&'static str> {
    ["fail", "unknown", "pass"]
        .into_iter()
        .find(|w| v.integrity.get(*w).is_some_and(|n| *n > 0))
}

fn rank(verdict: &str) -> u8 {
    match verdict {
        "pass" => 0,
        "unknown" => 1,
        _ => 2,
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

/// Compares `candidate` with `baseline`, matching variants by experiment and variant name.
pub fn compare(baseline: &Report, candidate: &Report, tol: &Tolerances) -> Comparison {
    let base = summaries(baseline);
    let cand = summaries(candidate);
    let mut keys: Vec<(String, String)> = Vec::new();
    for (e, v, _) in base.iter().chain(cand.iter()) {
        let k = (e.clone(), v.variant.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let find = |side: &[(String, VariantSummary, Vec<&RunResult>)], k: &(String, String)| {
        side.iter()
            .find(|(e, v, _)| *e == k.0 && v.variant == k.1)
            .map(|(_, v, _)| v.clone())
    };
    let mut variants = Vec::new();
    for k in keys {
        let (b, c) = (find(&base, &k), find(&cand, &k));
        let mut regressions = Vec::new();
        let mut metrics = Vec::new();
        match (&b, &c) {
            (Some(_), None) => regressions.push("missing from the candidate".to_string()),
            (None, Some(_)) => {}
            (None, None) => unreachable!("a key comes from one side"),
            (Some(b), Some(c)) => {
                if c.pass_rate < b.pass_rate {
                    regressions.push(format!(
                        "pass rate {:.0}% → {:.0}%",
                        b.pass_rate * 100.0,
                        c.pass_rate * 100.0
                    ));
                }
                if let (Some(wb), Some(wc)) = (worst_integrity(b), worst_integrity(c)) {
                    if rank(wc) > rank(wb) {
                        regressions.push(format!("integrity {wb} → {wc}"));
                    }
                }
                // Failover order, then any other metric by name.
                let order = |n: &str| {
                    crate::timeline::Metric::ALL
                        .iter()
                        .position(|m| m.name() == n)
                        .unwrap_or(usize::MAX)
                };
                let mut names: Vec<&String> = b.metrics.keys().chain(c.metrics.keys()).collect();
                names.sort_by_key(|n| (order(n), n.to_string()));
                names.dedup();
                let mut rows: Vec<(String, Option<Spread>, Option<Spread>)> = names
                    .into_iter()
                    .map(|n| {
                        (
                            n.clone(),
                            b.metrics.get(n).copied(),
                            c.metrics.get(n).copied(),
                        )
                    })
                    .collect();
                if b.write_outage.is_some() || c.write_outage.is_some() {
                    rows.push((WRITE_OUTAGE.into(), b.write_outage, c.write_outage));
                }
                for (name, sb, sc) in rows {
                    let t = tol.of(&name);
                    let (change, regression) = match (sb, sc) {
                        (Some(sb), Some(sc)) => (
                            (sb.median > 0).then(|| {
                                (sc.median as f64 - sb.median as f64) * 100.0 / sb.median as f64
                            }),
                            sc.median > t.limit(sb.median),
                        ),
                        (Some(_), None) => (None, true),
                        _ => (None, false),
                    };
                    if regression {
                        regressions.push(match (sb, sc) {
                            (Some(sb), Some(sc)) => format!(
                                "{name} {} → {} (tolerance {})",
                                fmt_ms(sb.median),
                                fmt_ms(sc.median),
                                t.describe()
                            ),
                            _ => format!("{name} no longer measured"),
                        });
                    }
                    metrics.push(MetricDelta {
                        metric: name,
                        baseline: sb,
                        candidate: sc,
                        change_percent: change,
                        tolerance: t.describe(),
                        regression,
                    });
                }
            }
        }
        variants.push(VariantDelta {
            experiment: k.0,
            variant: k.1,
            baseline_pass_rate: b.map(|v| v.pass_rate),
            candidate_pass_rate: c.map(|v| v.pass_rate),
            metrics,
            regressions,
        });
    }
    let regressed = variants
        .iter()
        .filter(|v| !v.regressions.is_empty())
        .count();
    Comparison {
        variants,
        regressed,
    }
}

fn cell(s: Option<Spread>) -> String {
    match s {
        Some(s) if s.count > 1 => format!(
            "{} (p90 {}, {}–{})",
            fmt_ms(s.median),
            fmt_ms(s.p90),
            fmt_ms(s.min),
            fmt_ms(s.max)
        ),
        Some(s) => fmt_ms(s.median),
        None => "—".into(),
    }
}

fn change(d: &MetricDelta) -> String {
    match d.change_percent {
        Some(p) => format!("{p:+.1}%"),
        None => "—".into(),
    }
}

fn rate(r: Option<f64>) -> String {
    r.map_or("—".into(), |r| format!("{:.0}%", r * 100.0))
}

/// For the terminal.
pub fn render_table(c: &Comparison) -> String {
    let mut out = String::new();
    for v in &c.variants {
        let mark = if v.regressions.is_empty() {
            "ok  "
        } else {
            "WORSE"
        };
        let _ = writeln!(
            out,
            "{mark} {}/{}  pass rate {} → {}",
            v.experiment,
            v.variant,
            rate(v.baseline_pass_rate),
            rate(v.candidate_pass_rate)
        );
        for d in &v.metrics {
            let _ = writeln!(
                out,
                "      {:<22} {:>32}  →  {:<32} {:>8}  tol {}{}",
                d.metric,
                cell(d.baseline),
                cell(d.candidate),
                change(d),
                d.tolerance,
                if d.regression { "  WORSE" } else { "" }
            );
        }
        for r in &v.regressions {
            let _ = writeln!(out, "      worse: {r}");
        }
    }
    let _ = writeln!(
        out,
        "\n{} variant(s) compared, {} worse",
        c.variants.len(),
        c.regressed
    );
    out
}

/// For a GitHub job summary.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let icon = if c.regressed == 0 { "✅" } else { "❌" };
    let _ = writeln!(
        out,
        "## {icon} nodedown compare\n\n{} variant(s), {} worse\n",
        c.variants.len(),
        c.regressed
    );
    let _ = writeln!(
        out,
        "| variant | metric | baseline | candidate | change | tolerance |\n|---|---|--:|--:|--:|--:|"
    );
    for v in &c.variants {
        let name = format!("{}/{}", v.experiment, v.variant).replace('|', "\\|");
        let _ = writeln!(
            out,
            "| {name} | pass rate | {} | {} | | |",
            rate(v.baseline_pass_rate),
            rate(v.candidate_pass_rate)
        );
        for d in &v.metrics {
            let flag = if d.regression { " ❌" } else { "" };
            let _ = writeln!(
                out,
                "| {name} | {}{flag} | {} | {} | {} | {} |",
                d.metric,
                cell(d.baseline),
                cell(d.candidate),
                change(d),
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
        let c = compare(&r, &r, &Tolerances::default());
        assert_eq!(c.regressed, 0, "{c:#?}");
        assert_eq!(c.variants.len(), 2);
        assert!(c.variants[0]
            .metrics
            .iter()
            .any(|d| d.metric == "time-to-ready" && d.change_percent == Some(0.0)));
        assert!(spec_changes(&r, &r).is_empty());
    }

    /// Synthetic change of a recorded report: slower, less often passing, a verdict worse.
    #[test]
    fn slower_failing_and_worse_integrity_are_regressions() {
        let base = recorded("network-partition");
        let mut cand = base.clone();
        for run in &mut cand.experiments[0].runs {
            if run.variant == "oos-taint-fenced" {
                *run.metrics.get_mut("time-to-ready").unwrap() *= 2;
                run.verdict = crate::verdict::Verdict::Fail;
                run.integrity.as_mut().unwrap().verdict = crate::verdict::Verdict::Fail;
            }
        }
        cand.experiments[0].variants =
            crate::report::assemble::summarize(&cand.experiments[0].runs);
        let c = compare(&base, &cand, &Tolerances::default());
        assert_eq!(c.regressed, 1);
        let v = c
            .variants
            .iter()
            .find(|v| v.variant == "oos-taint-fenced")
            .unwrap();
        let text = v.regressions.join("; ");
        assert!(text.contains("pass rate 100% → 0%"), "{text}");
        assert!(text.contains("integrity pass → fail"), "{text}");
        assert!(text.contains("time-to-ready"), "{text}");
        // A generous tolerance for that metric lets it through; the rest still fails.
        let tol = Tolerances {
            per_metric: [("time-to-ready".to_string(), Tolerance::Percent(150.0))].into(),
            ..Tolerances::default()
        };
        let c = compare(&base, &cand, &tol);
        let v = c
            .variants
            .iter()
            .find(|v| v.variant == "oos-taint-fenced")
            .unwrap();
        assert!(!v.regressions.iter().any(|r| r.contains("time-to-ready")));
        assert!(render_markdown(&c).contains("❌"));
        assert!(render_table(&c).contains("WORSE"));
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
