//! The qualification sheet (pure): one row per row of the qualification matrix
//! (`plan::qualify`), decided from the runs of that row's experiment — pass / fail / unknown,
//! or not applicable with the reason — with its timing spread and where the time went, the
//! environment, and a digest of the sheet's content.

use super::{Report, RunResult, Verdict};
use crate::timeline::{breakdown, Metric, Segment};
use crate::units::fmt_ms;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// A row's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RowVerdict {
    Pass,
    Fail,
    Unknown,
    NotApplicable,
}

impl RowVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            RowVerdict::Pass => "pass",
            RowVerdict::Fail => "fail",
            RowVerdict::Unknown => "unknown",
            RowVerdict::NotApplicable => "not applicable",
        }
    }
}

/// A row's time-to-ready over its runs: the one distribution type.
pub use crate::units::Spread;

/// One segment of where the time went, the median over the row's recovered runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SegmentMedian {
    pub segment: String,
    pub median_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SheetRow {
    pub id: String,
    pub title: String,
    /// What the Kubernetes sources predict, and where.
    pub source: String,
    pub verdict: RowVerdict,
    /// Why it does not apply, or what decided a fail / unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The row's experiment file, relative to the sheet (absent when not applicable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<String>,
    pub runs: usize,
    pub passed: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_ready: Option<Spread>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub where_the_time_went: Vec<SegmentMedian>,
}

/// Where the qualification ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SheetEnvironment {
    pub storage_class: String,
    /// The testdriver file's `DriverInfo.Name`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// The class's provisioner and its CSIDriver's attachRequired, as the cluster said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach_required: Option<bool>,
    /// The CSIDriver's `app.kubernetes.io/version` label (absent when it publishes none: the
    /// driver's GetPluginInfo version is not visible through the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// How many nodes' CSINode objects list the driver (its node plugin registered there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_nodes: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<usize>,
}

/// The qualification sheet (`sheet.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sheet {
    /// `nodedown <version>`.
    pub tool: String,
    pub environment: SheetEnvironment,
    /// `--quick`: the rows that wait for the 6-minute forced detach are not applicable.
    pub quick: bool,
    pub repeat: u32,
    pub rows: Vec<SheetRow>,
    /// When, where and how it was made (absent in sheets before 2026-12-06).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// SHA-256 of this sheet's JSON with `digest` empty: equal sheets have equal digests.
    pub digest: String,
}

/// When, where and by which command a sheet was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// RFC 3339, UTC: when the sheet was written.
    pub made: String,
    /// The kubeconfig context (or kind cluster) it qualified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// The command line, as given.
    pub command: String,
}

/// One row of the matrix as the sheet needs it.
pub struct PlannedRow<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub source: &'a str,
    pub applies: Applies,
}

/// Whether a row runs here: its experiment file, or why it is not applicable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applies {
    Run { experiment: String },
    NotApplicable { reason: String },
}

/// The sheet of `rows`, decided from `report` (the runs of the rows' experiments,
/// `qualify-<id>`).
pub fn sheet(
    tool: &str,
    mut environment: SheetEnvironment,
    quick: bool,
    repeat: u32,
    rows: &[PlannedRow<'_>],
    report: &Report,
    provenance: Option<Provenance>,
) -> Sheet {
    let all: Vec<&RunResult> = report.experiments.iter().flat_map(|e| &e.runs).collect();
    if let Some(env) = all.iter().find_map(|r| r.environment.as_ref()) {
        environment.kubernetes = environment.kubernetes.or(env.kubernetes.clone());
        environment.nodes = environment.nodes.or(env.node_count);
        environment.provisioner = environment.provisioner.or(env.provisioner.clone());
        environment.attach_required = environment.attach_required.or(env.attach_required);
    }
    let rows = rows
        .iter()
        .map(|row| {
            let base = SheetRow {
                id: row.id.to_string(),
                title: row.title.to_string(),
                source: row.source.to_string(),
                verdict: RowVerdict::NotApplicable,
                reason: None,
                experiment: None,
                runs: 0,
                passed: 0,
                time_to_ready: None,
                where_the_time_went: vec![],
            };
            match &row.applies {
                Applies::NotApplicable { reason } => SheetRow {
                    reason: Some(reason.clone()),
                    ..base
                },
                Applies::Run { experiment: file } => {
                    let experiment = format!("qualify-{}", row.id);
                    let runs: Vec<&RunResult> = report
                        .experiments
                        .iter()
                        .filter(|e| e.name == experiment)
                        .flat_map(|e| &e.runs)
                        .collect();
                    decide(
                        SheetRow {
                            experiment: Some(file.clone()),
                            ..base
                        },
                        &runs,
                    )
                }
            }
        })
        .collect();
    let mut sheet = Sheet {
        tool: tool.to_string(),
        environment,
        quick,
        repeat,
        rows,
        provenance,
        digest: String::new(),
    };
    sheet.digest = digest(&sheet);
    sheet
}

fn decide(mut row: SheetRow, runs: &[&RunResult]) -> SheetRow {
    row.runs = runs.len();
    row.passed = runs.iter().filter(|r| r.verdict == Verdict::Pass).count();
    let failed: Vec<String> = runs
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .flat_map(|r| {
            r.expectations
                .iter()
                .filter(|x| x.verdict == Verdict::Fail)
                .map(move |x| {
                    format!(
                        "{}: {} expected {}, got {}",
                        r.id, x.name, x.expected, x.actual
                    )
                })
        })
        .collect();
    let unknown: Vec<String> = runs
        .iter()
        .filter(|r| r.verdict == Verdict::Unknown)
        .map(|r| match &r.error {
            Some(e) => format!("{}: {e}", r.id),
            None => format!("{}: undecided", r.id),
        })
        .collect();
    (row.verdict, row.reason) = if runs.is_empty() {
        (
            RowVerdict::Unknown,
            Some("no run of this row in the results (not run, or --only left it out)".into()),
        )
    } else if !failed.is_empty() {
        (RowVerdict::Fail, Some(failed.join("; ")))
    } else if !unknown.is_empty() {
        (RowVerdict::Unknown, Some(unknown.join("; ")))
    } else {
        (RowVerdict::Pass, None)
    };
    let ready: Vec<u64> = runs
        .iter()
        .filter_map(|r| r.metrics.get(&Metric::TimeToReady).copied())
        .collect();
    row.time_to_ready = crate::units::spread(&ready);
    let parts: Vec<Vec<crate::timeline::Part>> =
        runs.iter().map(|r| breakdown(&r.metrics)).collect();
    row.where_the_time_went = Segment::ALL
        .iter()
        .filter_map(|(segment, _)| {
            let values: Vec<u64> = parts
                .iter()
                .filter_map(|p| p.iter().find(|x| x.segment == *segment).map(|x| x.ms()))
                .collect();
            crate::units::median(&values).map(|m| SegmentMedian {
                segment: segment.name().to_string(),
                median_ms: m,
            })
        })
        .collect();
    row
}

/// A row's time-to-ready as `p50 / p90 / max`, or `—`.
fn ready_cell(r: &SheetRow) -> String {
    r.time_to_ready
        .as_ref()
        .map(|s| {
            format!(
                "{} / {} / {}",
                fmt_ms(s.p50_ms),
                crate::units::fmt_opt_ms(s.p90_ms),
                fmt_ms(s.max_ms)
            )
        })
        .unwrap_or_else(|| "—".into())
}

/// SHA-256 (hex) of the sheet's JSON with an empty digest.
pub fn digest(sheet: &Sheet) -> String {
    let text = serde_json::to_string(sheet).expect("a sheet serializes");
    digest_of_text(&text)
        .expect("a serialized sheet has one digest")
        .1
}

/// The digest a sheet's JSON text records and the one its content has: SHA-256 (hex) of the
/// text without the whitespace between tokens and with the digest's value emptied — so a
/// sheet is checked by its own bytes, whatever nodedown's model reads from it (a sheet made
/// before a field was added verifies as it was made). `None` when the text has no single
/// top-level `"digest"` string.
pub fn digest_of_text(text: &str) -> Option<(String, String)> {
    use sha2::{Digest, Sha256};
    // Without insignificant whitespace: `serde_json::to_string`'s form of the same value.
    let mut compact = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    // Where each top-level key starts (depth 1), to find `"digest"` among them only.
    let (mut depth, mut key_starts) = (0usize, Vec::new());
    let mut expect_key = false;
    for c in text.chars() {
        if in_string {
            compact.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            ' ' | '\n' | '\r' | '\t' => continue,
            '"' => {
                if depth == 1 && expect_key {
                    key_starts.push(compact.len());
                }
                in_string = true;
                expect_key = false;
            }
            // Depth 1 is inside the sheet's own object: a key follows its `{` or a `,` there.
            '{' | '[' => {
                depth += 1;
                expect_key = depth == 1 && c == '{';
            }
            '}' | ']' => depth = depth.saturating_sub(1),
            ',' => expect_key = depth == 1,
            _ => {}
        }
        compact.push(c);
    }
    const KEY: &str = "\"digest\":\"";
    let mut found = key_starts
        .iter()
        .filter(|&&at| compact[at..].starts_with(KEY));
    let (at, None) = (*found.next()?, found.next()) else {
        return None;
    };
    let value_start = at + KEY.len();
    let value_len = compact[value_start..].find('"')?;
    let recorded = compact[value_start..value_start + value_len].to_string();
    compact.replace_range(value_start..value_start + value_len, "");
    let computed = Sha256::digest(compact.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some((recorded, computed))
}

/// The sheet as one Markdown page.
pub fn markdown(sheet: &Sheet) -> String {
    let mut out = String::new();
    let e = &sheet.environment;
    let _ = writeln!(
        out,
        "## Failover qualification of storage class `{}`\n",
        e.storage_class
    );
    let count = |v: RowVerdict| sheet.rows.iter().filter(|r| r.verdict == v).count();
    let _ = writeln!(
        out,
        "{} · {} rows: {} pass, {} fail, {} unknown, {} not applicable · {}{} run(s) per row\n",
        sheet.tool,
        sheet.rows.len(),
        count(RowVerdict::Pass),
        count(RowVerdict::Fail),
        count(RowVerdict::Unknown),
        count(RowVerdict::NotApplicable),
        if sheet.quick { "--quick · " } else { "" },
        sheet.repeat
    );
    let mut env = Vec::new();
    if let Some(d) = &e.driver {
        env.push(format!("driver {d}"));
    }
    if let Some(p) = &e.provisioner {
        env.push(format!("provisioner {p}"));
    }
    // A CSI driver (its CSIDriver object gave attachRequired); not kubernetes.io/no-provisioner.
    if e.attach_required.is_some() {
        env.push(match &e.driver_version {
            Some(v) => format!("driver version {v}"),
            None => {
                "driver version not published (no app.kubernetes.io/version label on its CSIDriver)"
                    .into()
            }
        });
    }
    if let Some(n) = e.driver_nodes.filter(|_| e.attach_required.is_some()) {
        env.push(format!("registered on {n} node(s) (CSINode)"));
    }
    match e.attach_required {
        Some(true) => env.push("attaches (VolumeAttachments)".into()),
        Some(false) => env.push("does not attach".into()),
        None => {}
    }
    if let Some(k) = &e.kubernetes {
        env.push(format!("Kubernetes {k}"));
    }
    if let Some(n) = e.nodes {
        env.push(format!("{n} nodes"));
    }
    if !env.is_empty() {
        let _ = writeln!(out, "Environment: {}\n", env.join(" · "));
    }
    if let Some(p) = &sheet.provenance {
        let _ = writeln!(
            out,
            "Made {} on {} by `{}`\n",
            p.made,
            p.cluster.as_deref().unwrap_or("an unnamed cluster"),
            p.command.replace('`', "'")
        );
    }
    let _ = writeln!(
        out,
        "| row | verdict | runs | time-to-ready p50 / p90 / max | where the time went (medians) | expectation's source |\n|---|---|--:|---|---|---|"
    );
    for r in &sheet.rows {
        let icon = match r.verdict {
            RowVerdict::Pass => "✅ pass",
            RowVerdict::Fail => "❌ fail",
            RowVerdict::Unknown => "❔ unknown",
            RowVerdict::NotApplicable => "➖ not applicable",
        };
        let verdict = match &r.reason {
            Some(why) => format!("{icon}: {}", why.replace('|', "\\|")),
            None => icon.to_string(),
        };
        let ready = ready_cell(r);
        let went = if r.where_the_time_went.is_empty() {
            "—".to_string()
        } else {
            r.where_the_time_went
                .iter()
                .map(|s| format!("{} {}", s.segment, fmt_ms(s.median_ms)))
                .collect::<Vec<_>>()
                .join(" · ")
        };
        let _ = writeln!(
            out,
            "| **{}**: {} | {verdict} | {} | {ready} | {went} | {} |",
            r.id,
            r.title,
            if r.runs > 0 {
                format!("{}/{}", r.passed, r.runs)
            } else {
                "—".into()
            },
            r.source.replace('|', "\\|")
        );
    }
    let _ = writeln!(out, "\nSheet digest: `{}`", sheet.digest);
    out
}

/// The sheet for a terminal (`nodedown report QUAL`, `nodedown qualify`): a row each with its
/// verdict and time-to-ready, cut to `width`; each row that failed or is unknown written out
/// whole below, with what decided it. The full sheet is `--format markdown` or `html`.
pub fn table(sheet: &Sheet, width: Option<usize>) -> String {
    let mut out = format!(
        "qualification of storage class {}{}\n",
        sheet.environment.storage_class,
        sheet
            .environment
            .driver
            .as_deref()
            .map(|d| format!(" (driver {d})"))
            .unwrap_or_default()
    );
    let rows: Vec<Vec<String>> = sheet
        .rows
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                match r.verdict {
                    RowVerdict::Pass => "pass".to_string(),
                    RowVerdict::Fail => "FAIL".to_string(),
                    RowVerdict::Unknown => "UNKNOWN".to_string(),
                    RowVerdict::NotApplicable => "n/a".to_string(),
                },
                if r.runs > 0 {
                    format!("{}/{}", r.passed, r.runs)
                } else {
                    "—".into()
                },
                r.time_to_ready
                    .as_ref()
                    .map_or("—".into(), |t| fmt_ms(t.p50_ms)),
                r.title.clone(),
            ]
        })
        .collect();
    out.push_str(&super::table::grid(
        &["ROW", "VERDICT", "PASSED", "READY-P50", "TITLE"],
        &rows,
        width,
    ));
    let count = |v: RowVerdict| sheet.rows.iter().filter(|r| r.verdict == v).count();
    out.push_str(&format!(
        "\n{} rows: {} pass, {} fail, {} unknown, {} not applicable · digest {}\n",
        sheet.rows.len(),
        count(RowVerdict::Pass),
        count(RowVerdict::Fail),
        count(RowVerdict::Unknown),
        count(RowVerdict::NotApplicable),
        sheet.digest
    ));
    for r in sheet
        .rows
        .iter()
        .filter(|r| matches!(r.verdict, RowVerdict::Fail | RowVerdict::Unknown))
    {
        let word = if r.verdict == RowVerdict::Fail {
            "FAIL"
        } else {
            "UNKNOWN"
        };
        let why = r
            .reason
            .as_deref()
            .unwrap_or("no reason recorded")
            .replace(['\r', '\n'], " ");
        out.push_str(&super::table::wrap(
            &format!("{word} {}: {why}", r.id),
            width,
            "  ",
        ));
        out.push('\n');
    }
    out
}

/// The sheet as JUnit XML: one test suite, a test case per row — a failure for a failed row,
/// an error for an unknown one, skipped with the reason when not applicable — with the row's
/// figures as properties.
pub fn junit(sheet: &Sheet) -> String {
    use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};
    let mut report = quick_junit::Report::new("nodedown qualify");
    let mut suite = TestSuite::new(format!("qualify {}", sheet.environment.storage_class));
    suite.add_property(Property::new("digest", sheet.digest.as_str()));
    for r in &sheet.rows {
        let status = match r.verdict {
            RowVerdict::Pass => TestCaseStatus::success(),
            RowVerdict::Fail | RowVerdict::Unknown => {
                let kind = if r.verdict == RowVerdict::Fail {
                    NonSuccessKind::Failure
                } else {
                    NonSuccessKind::Error
                };
                let mut s = TestCaseStatus::non_success(kind);
                s.set_message(r.reason.clone().unwrap_or_default());
                s
            }
            RowVerdict::NotApplicable => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!(
                    "not applicable: {}",
                    r.reason.clone().unwrap_or_default()
                ));
                s
            }
        };
        let mut case = TestCase::new(r.id.as_str(), status);
        case.set_classname(format!("qualify.{}", sheet.environment.storage_class));
        let mut props = vec![
            ("title".to_string(), r.title.clone()),
            ("source".to_string(), r.source.clone()),
            ("runs".to_string(), r.runs.to_string()),
            ("passed".to_string(), r.passed.to_string()),
        ];
        if let Some(t) = &r.time_to_ready {
            props.push(("time-to-ready.p50".into(), t.p50_ms.to_string()));
            if let Some(p90) = t.p90_ms {
                props.push(("time-to-ready.p90".into(), p90.to_string()));
            }
            props.push(("time-to-ready.max".into(), t.max_ms.to_string()));
        }
        for s in &r.where_the_time_went {
            props.push((format!("breakdown.{}", s.segment), s.median_ms.to_string()));
        }
        case.add_properties(props.into_iter().map(|(n, v)| Property::new(n, v)));
        suite.add_test_case(case);
    }
    report.add_test_suite(suite);
    let mut xml = report.to_string().expect("JUnit XML serializes");
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    xml
}

/// The sheet as one self-contained HTML page: the verdict table and, per row that ran, a stacked
/// bar of where the time went (medians), the names written in the picture.
pub fn html(sheet: &Sheet) -> String {
    use super::text::xml_escape;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>nodedown qualification: {}</title><style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top}}.pass{{color:#1e7e34}}.fail{{color:#b02a37}}.unknown{{color:#8a6d00}}.na{{color:#666}}</style></head><body>",
        xml_escape(&sheet.environment.storage_class)
    );
    // The Markdown page's facts, as HTML: heading, counts, environment.
    let md = markdown(sheet);
    for line in md.lines().take_while(|l| !l.starts_with('|')) {
        if let Some(h) = line.strip_prefix("## ") {
            let _ = writeln!(out, "<h1>{}</h1>", xml_escape(&h.replace('`', "")));
        } else if !line.trim().is_empty() {
            let _ = writeln!(out, "<p>{}</p>", xml_escape(line));
        }
    }
    let axis = Axis::of(sheet);
    let _ = writeln!(out, "<table><tr><th>row</th><th>verdict</th><th>runs</th><th>time-to-ready p50 / p90 / max</th><th>where the time went (medians; one linear axis for every row, 0–{})</th><th>expectation's source</th></tr>", fmt_ms(axis.max_ms));
    for r in &sheet.rows {
        let class = match r.verdict {
            RowVerdict::Pass => "pass",
            RowVerdict::Fail => "fail",
            RowVerdict::Unknown => "unknown",
            RowVerdict::NotApplicable => "na",
        };
        // The reason's first part in the cell, the rest folded (a failed row's reason names
        // each run's failed expectations: dozens of them).
        let parts: Vec<&str> = r
            .reason
            .as_deref()
            .map(|w| {
                w.split(['\n', ';'])
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let verdict = match parts.as_slice() {
            [] => r.verdict.as_str().to_string(),
            [one] => format!("{}: {}", r.verdict.as_str(), xml_escape(one)),
            [first, rest @ ..] => format!(
                "{}: {}<details><summary>{} more</summary><ul>{}</ul></details>",
                r.verdict.as_str(),
                xml_escape(first),
                rest.len(),
                rest.iter()
                    .map(|p| format!("<li>{}</li>", xml_escape(p)))
                    .collect::<String>()
            ),
        };
        let ready = ready_cell(r);
        let bar = bar(&r.where_the_time_went, axis);
        let _ = writeln!(
            out,
            "<tr class=\"row\" data-row=\"{}\"><td><b>{}</b>: {}</td><td class=\"{class}\">{verdict}</td><td>{}</td><td>{ready}</td><td>{bar}</td><td>{}</td></tr>",
            xml_escape(&r.id),
            xml_escape(&r.id),
            xml_escape(&r.title),
            if r.runs > 0 { format!("{}/{}", r.passed, r.runs) } else { "—".into() },
            xml_escape(&r.source)
        );
    }
    let _ = writeln!(
        out,
        "</table><p>{}</p><p>Sheet digest: <code>{}</code></p></body></html>",
        bar_legend(sheet),
        sheet.digest
    );
    out
}

/// The shared axis of the sheet's bars: linear from 0, so that a segment's length is its time.
/// When one row dwarfs the others (longer than four times the median row), the axis ends at a
/// round time past the rest and that row's bar is broken at the end, its total written.
#[derive(Debug, Clone, Copy)]
struct Axis {
    max_ms: u64,
}

impl Axis {
    const WIDTH: f64 = 420.0;
    const ROUND: [u64; 12] = [
        10_000, 20_000, 30_000, 60_000, 90_000, 120_000, 180_000, 300_000, 600_000, 1_200_000,
        1_800_000, 3_600_000,
    ];

    fn of(sheet: &Sheet) -> Axis {
        let mut totals: Vec<u64> = sheet
            .rows
            .iter()
            .map(|r| {
                r.where_the_time_went
                    .iter()
                    .map(|p| p.median_ms)
                    .sum::<u64>()
            })
            .filter(|t| *t > 0)
            .collect();
        totals.sort_unstable();
        let longest = totals.last().copied().unwrap_or(0);
        let median = crate::units::median(&totals).unwrap_or(0);
        // The rows the axis is for: all, or all but those that dwarf them.
        let reach = if totals.len() >= 2 && longest > 4 * median {
            totals
                .iter()
                .copied()
                .filter(|t| *t <= 4 * median)
                .max()
                .unwrap_or(longest)
        } else {
            longest
        };
        let max_ms = Self::ROUND
            .into_iter()
            .find(|m| *m >= reach)
            .unwrap_or(reach.max(1));
        Axis { max_ms }
    }

    fn x(self, ms: u64) -> f64 {
        (ms as f64 / self.max_ms as f64 * Self::WIDTH).clamp(0.0, Self::WIDTH)
    }

    /// Ticks from 0, at most seven: a round step.
    fn ticks(self) -> Vec<u64> {
        let step = [
            1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000,
        ]
        .into_iter()
        .find(|s| self.max_ms / s <= 6)
        .unwrap_or(self.max_ms.max(1));
        (0..=self.max_ms / step).map(|i| i * step).collect()
    }
}

/// A row's medians as a stacked bar (SVG) on the sheet's shared linear axis, each part named
/// inside it or in its title, its total written after it, the axis's ticks under it; a row
/// longer than the axis is broken at its end (two white strokes) and its total says so.
fn bar(parts: &[SegmentMedian], axis: Axis) -> String {
    let total: u64 = parts.iter().map(|p| p.median_ms).sum();
    if total == 0 {
        return "—".into();
    }
    let (width, height, bar_h) = (Axis::WIDTH + 140.0, 34.0, 20.0);
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">"#
    );
    for t in axis.ticks() {
        let tx = axis.x(t);
        let _ = write!(
            svg,
            r##"<line x1="{tx:.1}" x2="{tx:.1}" y1="0" y2="{bar_h}" stroke="#cccccc"/><text x="{tx:.1}" y="{}" font-size="9" fill="#666" text-anchor="{}">{}</text>"##,
            bar_h + 11.0,
            if t == 0 { "start" } else { "middle" },
            fmt_ms(t)
        );
    }
    let mut at = 0u64;
    for p in parts {
        let (x0, x1) = (axis.x(at), axis.x(at + p.median_ms));
        at += p.median_ms;
        if x1 <= x0 && x0 >= Axis::WIDTH {
            continue;
        }
        let w = (x1 - x0).max(0.5);
        let segment = Segment::ALL
            .iter()
            .map(|(s, _)| *s)
            .find(|s| s.name() == p.segment);
        let color = segment.map_or("#999999", super::svg::segment_color);
        let _ = write!(
            svg,
            r#"<rect class="segment" data-segment="{}" x="{x0:.1}" y="0" width="{w:.1}" height="{bar_h}" fill="{color}"><title>{} {}</title></rect>"#,
            p.segment,
            p.segment,
            fmt_ms(p.median_ms)
        );
        let label = format!("{} {}", p.segment, fmt_ms(p.median_ms));
        if w > 6.0 * label.len() as f64 + 4.0 {
            let _ = write!(
                svg,
                r##"<text x="{:.1}" y="14" font-size="10" fill="#ffffff">{label}</text>"##,
                x0 + 2.0
            );
        }
    }
    let broken = total > axis.max_ms;
    if broken {
        let bx = Axis::WIDTH - 12.0;
        let _ = write!(
            svg,
            r##"<path class="break" d="M{bx:.1},{bar_h} l6,-{bar_h} M{:.1},{bar_h} l6,-{bar_h}" stroke="#ffffff" stroke-width="3"/>"##,
            bx + 5.0
        );
    }
    let _ = write!(
        svg,
        r##"<text class="total" x="{:.1}" y="14" font-size="11" fill="#222">{}{}</text>"##,
        axis.x(total) + 4.0,
        fmt_ms(total),
        if broken { " (bar broken)" } else { "" }
    );
    svg.push_str("</svg>");
    svg
}

/// The colours of the bars' segments present in the sheet, named.
fn bar_legend(sheet: &Sheet) -> String {
    use super::text::xml_escape;
    let present: Vec<Segment> = Segment::ALL
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| {
            sheet
                .rows
                .iter()
                .any(|r| r.where_the_time_went.iter().any(|p| p.segment == s.name()))
        })
        .collect();
    let items: Vec<String> = present
        .iter()
        .map(|s| {
            format!(
                r#"<span class="legend"><svg width="10" height="10"><rect width="10" height="10" fill="{}"/></svg> {}</span>"#,
                super::svg::segment_color(*s),
                xml_escape(s.name())
            )
        })
        .collect();
    items.join(" &nbsp; ")
}

/// How one row changed between two sheets (`nodedown compare` of two sheets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowChange {
    pub id: String,
    /// The row got worse: its verdict (pass → fail / unknown, applicable → absent) or its
    /// time-to-ready p50 beyond the tolerance.
    pub worse: bool,
    pub what: String,
}

/// Rank of a verdict for comparing sheets: higher is better; not applicable is not ranked.
fn rank(v: RowVerdict) -> Option<u8> {
    match v {
        RowVerdict::Fail => Some(0),
        RowVerdict::Unknown => Some(1),
        RowVerdict::Pass => Some(2),
        RowVerdict::NotApplicable => None,
    }
}

/// Every row of `baseline` against the same row of `candidate` (by id): verdict changes, and
/// time-to-ready p50 against `tolerance` (as `nodedown compare` judges metrics).
pub fn compare(
    baseline: &Sheet,
    candidate: &Sheet,
    tolerance: crate::report::compare::Tolerance,
) -> Vec<RowChange> {
    let mut out = Vec::new();
    for b in &baseline.rows {
        let Some(c) = candidate.rows.iter().find(|c| c.id == b.id) else {
            out.push(RowChange {
                id: b.id.clone(),
                worse: b.verdict != RowVerdict::NotApplicable,
                what: "absent from the candidate".into(),
            });
            continue;
        };
        if b.verdict != c.verdict {
            let worse = match (rank(b.verdict), rank(c.verdict)) {
                (Some(x), Some(y)) => y < x,
                (Some(_), None) => true,
                _ => false,
            };
            out.push(RowChange {
                id: b.id.clone(),
                worse,
                what: format!(
                    "{} → {}{}",
                    b.verdict.as_str(),
                    c.verdict.as_str(),
                    c.reason
                        .as_ref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                ),
            });
            continue;
        }
        if let (Some(x), Some(y)) = (&b.time_to_ready, &c.time_to_ready) {
            let limit = tolerance.limit(x.p50_ms);
            if y.p50_ms != x.p50_ms {
                out.push(RowChange {
                    id: b.id.clone(),
                    worse: y.p50_ms > limit,
                    what: format!(
                        "time-to-ready p50 {} → {} (limit {}, {})",
                        fmt_ms(x.p50_ms),
                        fmt_ms(y.p50_ms),
                        fmt_ms(limit),
                        tolerance.describe()
                    ),
                });
            }
        }
    }
    for c in &candidate.rows {
        if !baseline.rows.iter().any(|b| b.id == c.id) {
            out.push(RowChange {
                id: c.id.clone(),
                worse: false,
                what: format!("new row: {}", c.verdict.as_str()),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::fixtures::recorded;

    /// The committed reference sheet (docs/qualification/, a real qualification): its recorded
    /// digest is its bytes' digest; as read by today's model and written again it has the same digest; pretty or
    /// compact, the same; one changed byte of content, or a second `digest` key, does not pass.
    #[test]
    fn a_sheet_is_checked_by_its_own_bytes() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("docs/qualification/nodedown-attach/sheet.json"),
        )
        .unwrap();
        let (recorded, computed) = digest_of_text(&text).unwrap();
        assert_eq!(recorded, computed);
        let sheet: Sheet = serde_json::from_str(&text).unwrap();
        assert_eq!(digest(&sheet), recorded);
        let compact = serde_json::to_string(&sheet).unwrap();
        assert_eq!(
            digest_of_text(&compact).unwrap(),
            (recorded.clone(), computed)
        );
        let edited = text.replacen("\"pass\"", "\"fail\"", 1);
        let (r, c) = digest_of_text(&edited).unwrap();
        assert_eq!(r, recorded);
        assert_ne!(c, recorded);
        // A `digest` inside a row is not the sheet's; two at the top are no digest at all.
        let nested = text.replacen("\"rows\": [", "\"rows\": [{\"digest\": \"x\"},", 1);
        assert_eq!(digest_of_text(&nested).unwrap().0, recorded);
        let twice = text.replacen('{', "{\"digest\": \"\",", 1);
        assert_eq!(digest_of_text(&twice), None);
    }

    /// The recorded replicated runs (real), renamed here as if they were a qualification's
    /// power-off rows; a not-applicable row and a row without runs around them.
    #[test]
    fn rows_are_decided_from_their_runs_and_the_digest_follows_the_content() {
        let mut report = recorded("replicated");
        report.experiments[0].name = "qualify-power-off-taint".into();
        report.experiments[0]
            .runs
            .retain(|r| r.variant == "out-of-service-taint");
        let rows = [
            PlannedRow {
                id: "power-off-taint",
                title: "taint",
                source: "KEP-2268",
                applies: Applies::Run {
                    experiment: "experiments/power-off-taint.yaml".into(),
                },
            },
            PlannedRow {
                id: "block",
                title: "block",
                source: "-",
                applies: Applies::NotApplicable {
                    reason: "the driver does not declare block".into(),
                },
            },
            PlannedRow {
                id: "pod-delete",
                title: "baseline",
                source: "-",
                applies: Applies::Run {
                    experiment: "experiments/pod-delete.yaml".into(),
                },
            },
        ];
        let env = SheetEnvironment {
            storage_class: "nodedown-attach".into(),
            driver: Some("csi.nodedown.dev".into()),
            provisioner: None,
            attach_required: None,
            driver_version: None,
            driver_nodes: None,
            kubernetes: None,
            nodes: None,
        };
        let s = sheet("nodedown test", env.clone(), true, 1, &rows, &report, None);
        assert_eq!(s.rows[0].verdict, RowVerdict::Pass);
        assert_eq!((s.rows[0].runs, s.rows[0].passed), (1, 1));
        assert_eq!(s.rows[0].time_to_ready.as_ref().unwrap().p50_ms, 27850);
        assert_eq!(s.rows[0].where_the_time_went.len(), 7);
        assert_eq!(s.rows[1].verdict, RowVerdict::NotApplicable);
        assert_eq!(s.rows[2].verdict, RowVerdict::Unknown, "no run");
        assert_eq!(s.environment.attach_required, Some(true), "from the runs");
        assert_eq!(s.digest, digest(&s));
        let mut worse = report.clone();
        worse.experiments[0].runs[0].verdict = Verdict::Fail;
        worse.experiments[0].runs[0].expectations[0].verdict = Verdict::Fail;
        let w = sheet("nodedown test", env, true, 1, &rows, &worse, None);
        assert_eq!(w.rows[0].verdict, RowVerdict::Fail);
        assert!(w.rows[0].reason.as_ref().unwrap().contains("expected"));
        assert_ne!(w.digest, s.digest);
        let tol = crate::report::compare::Tolerance::parse("+20%").unwrap();
        let changes = compare(&s, &w, tol);
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert!(changes[0].worse && changes[0].what.starts_with("pass → fail"));
        assert!(
            compare(&w, &s, tol).iter().all(|c| !c.worse),
            "better is not worse"
        );
        assert!(compare(&s, &s, tol).is_empty());
        let mut slower = s.clone();
        slower.rows[0].time_to_ready.as_mut().unwrap().p50_ms = 40_000;
        let changes = compare(&s, &slower, tol);
        assert!(
            changes[0].worse && changes[0].what.contains("27.9s → 40.0s"),
            "{changes:?}"
        );
        let xml = junit(&w);
        assert!(xml.contains(r#"<testcase name="power-off-taint""#), "{xml}");
        assert!(xml.contains("<failure"), "{xml}");
        assert!(
            xml.contains("not applicable: the driver does not declare block"),
            "{xml}"
        );
        let page = html(&s);
        assert!(page.contains(r#"data-segment="pod-deletion""#), "{page}");
        assert_eq!(page.matches(r#"<tr class="row""#).count(), 3);
        let md = markdown(&s);
        assert!(
            md.contains("| **power-off-taint**: taint | ✅ pass | 1/1 | 27.9s"),
            "{md}"
        );
        assert!(
            md.contains("➖ not applicable: the driver does not declare block"),
            "{md}"
        );
        assert!(md.contains(&s.digest));
        assert!(
            md.contains("driver version not published (no app.kubernetes.io/version label"),
            "an absent version is said, not left out: {md}"
        );
        let mut versioned = s.clone();
        versioned.environment.driver_version = Some("v1.2.0".into());
        versioned.environment.driver_nodes = Some(6);
        let md = markdown(&versioned);
        assert!(
            md.contains("driver version v1.2.0 · registered on 6 node(s) (CSINode)"),
            "{md}"
        );
        assert!(html(&versioned).contains("driver version v1.2.0"));
    }
}
