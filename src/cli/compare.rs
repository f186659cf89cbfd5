use super::{error, EXIT_BAD_INPUT, EXIT_EXPECTATION_FAILED, EXIT_OK};
use crate::report::compare::{self, Tolerance, Tolerances};
use crate::report::Report;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CompareFormat {
    /// Per variant and metric: both sides' n, median and range, the change, its p-value and
    /// the call, for a terminal.
    Table,
    /// The same as a Markdown table (a job summary, a pull request).
    Markdown,
    /// The comparison's model as JSON.
    Json,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  nodedown compare runs/before runs/after                    noise-aware: n, ranges, p-values
  nodedown compare runs/before runs/after --strict           fail on medians past tolerance
  nodedown compare base.json cand.json --tolerance time-to-ready=+10% --format markdown
  nodedown compare qual-v1/ qual-v2/                          two qualification sheets")]
pub struct CompareArgs {
    /// The baseline: a run directory or its results.json — or a qualification's sheet.json (or
    /// its directory), to compare two sheets row by row. Two simulated invocations are compared
    /// as curves, run by run.
    pub baseline: PathBuf,
    /// The candidate: a run directory or its results.json, or a sheet.json.
    pub candidate: PathBuf,
    /// How much worse any metric may get (default +20%): a share (`+20%`) or a time (`+5s`).
    #[arg(long, default_value = "+20%", value_parser = Tolerance::parse)]
    pub default_tolerance: Tolerance,
    /// A metric's own tolerance, e.g. `--tolerance time-to-running=+10%` (repeatable).
    #[arg(long = "tolerance", value_name = "METRIC=TOLERANCE")]
    pub tolerances: Vec<String>,
    /// A YAML file of metric tolerances, e.g. `time-to-running: +20%` one per line.
    #[arg(long, value_name = "FILE")]
    pub tolerance_file: Option<PathBuf>,
    /// The significance level: a change counts only when the Mann–Whitney U test of the two
    /// sides' runs finds it at this level (and it is beyond the tolerance).
    #[arg(long, default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,
    /// Also count a median beyond its tolerance as worse when the runs are too few to tell it
    /// from noise (by default that is "cannot tell", exit 0).
    #[arg(long)]
    pub strict: bool,
    /// Compare even when a variant's resolved spec differs between the two.
    #[arg(long)]
    pub allow_spec_change: bool,
    /// What to print (`-o` as on `run` and `report`).
    #[arg(short = 'o', long = "format", visible_alias = "output", value_enum, default_value_t = CompareFormat::Table)]
    pub format: CompareFormat,
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!(
            "`{s}`: a significance level between 0 and 1, e.g. 0.05"
        )),
    }
}

fn load(path: &Path) -> Result<Report, String> {
    // An old simulated invocation (its curve.json, before simulated runs were in results.json).
    if let Some(legacy) = crate::store::load_legacy_curve(path) {
        let runs = legacy.map_err(|e| e.to_string())?;
        return Ok(crate::report::simulated::report_of(
            runs,
            &super::report::tool_version(),
        ));
    }
    if path.is_dir() {
        let runs = crate::store::load_all(path).map_err(|e| e.to_string())?;
        if runs.is_empty() {
            return Err(format!(
                "{} holds no run (no run.json below it)",
                path.display()
            ));
        }
        Ok(crate::report::assemble::report_with(
            runs,
            &super::report::tool_version(),
        ))
    } else {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        crate::report::json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// What differs between the resolved specs of one variant, when both sides are run directories.
fn spec_difference(baseline: &Path, candidate: &Path, id: &str) -> Option<String> {
    let read = |root: &Path| -> Option<serde_json::Value> {
        let dir = crate::store::run_dirs(root)
            .into_iter()
            .find(|d| d.strip_prefix(root).is_ok_and(|r| r.starts_with(id)))?;
        serde_json::from_str(&std::fs::read_to_string(dir.join(crate::store::RUN_FILE)).ok()?).ok()
    };
    let (b, c) = (read(baseline)?, read(candidate)?);
    let fields = [
        "cluster",
        "workload",
        "fault",
        "remediation",
        "timeouts",
        "expect",
    ];
    let diffs: Vec<String> = fields
        .iter()
        .filter(|f| b[**f] != c[**f])
        .map(|f| format!("{f}: {} → {}", b[*f], c[*f]))
        .collect();
    (!diffs.is_empty()).then(|| diffs.join("; "))
}

fn tolerances(args: &CompareArgs) -> Result<Tolerances, String> {
    let mut t = Tolerances {
        default: args.default_tolerance,
        ..Tolerances::default()
    };
    if let Some(file) = &args.tolerance_file {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let map: std::collections::BTreeMap<String, String> = serde_saphyr::from_str(&text)
            .map_err(|e| {
                format!(
                    "{}: {e}; write one `metric: tolerance` per line, e.g. `time-to-running: +20%`",
                    file.display()
                )
            })?;
        for (metric, tol) in map {
            let tol =
                Tolerance::parse(&tol).map_err(|e| format!("{}: {metric}: {e}", file.display()))?;
            let name = t
                .set(&metric, tol)
                .map_err(|e| format!("{}: {e}", file.display()))?;
            if name != metric {
                eprintln!("note: {}: `{metric}` taken as `{name}`", file.display());
            }
        }
    }
    for spec in &args.tolerances {
        let (metric, tol) = spec.split_once('=').ok_or_else(|| {
            format!("--tolerance {spec}: write METRIC=TOLERANCE, e.g. time-to-running=+10%")
        })?;
        let name = t
            .set(metric.trim(), Tolerance::parse(tol)?)
            .map_err(|e| format!("--tolerance {spec}: {e}"))?;
        if name != metric.trim() {
            eprintln!(
                "note: --tolerance {spec}: `{}` taken as `{name}`",
                metric.trim()
            );
        }
    }
    Ok(t)
}

/// Two qualification sheets: each row's verdict and time-to-ready p50 (against the default
/// tolerance); exit 1 when a row got worse.
fn compare_sheets(baseline: &Path, candidate: &Path, args: &CompareArgs) -> u8 {
    let read = crate::store::load_sheet;
    let (b, c) = match (read(baseline), read(candidate)) {
        (Ok(b), Ok(c)) => (b, c),
        (Err(e), _) | (_, Err(e)) => {
            error(e);
            return EXIT_BAD_INPUT;
        }
    };
    let changes = crate::report::sheet::compare(&b, &c, args.default_tolerance);
    println!(
        "sheets: {} ({}) → {} ({}), digests verified",
        b.environment.storage_class,
        &b.digest[..12.min(b.digest.len())],
        c.environment.storage_class,
        &c.digest[..12.min(c.digest.len())]
    );
    for (name, s) in [("baseline", &b), ("candidate", &c)] {
        if let Some(p) = &s.provenance {
            println!(
                "{name}: made {} on {} by `{}`",
                p.made,
                p.cluster.as_deref().unwrap_or("?"),
                p.command
            );
        }
    }
    // Per-row medians over `repeat` runs: a change on few runs may be noise.
    if b.repeat.min(c.repeat) < compare::ENOUGH_RUNS as u32 {
        println!(
            "note: {} vs {} run(s) per row: time changes on so few runs may be noise (qualify --repeat {} for a spread)",
            b.repeat,
            c.repeat,
            compare::ENOUGH_RUNS
        );
    }
    if changes.is_empty() {
        println!("no row changed");
    }
    for ch in &changes {
        println!(
            "{} {}: {}",
            if ch.worse { "WORSE" } else { "changed" },
            ch.id,
            ch.what
        );
    }
    if changes.iter().any(|c| c.worse) {
        EXIT_EXPECTATION_FAILED
    } else {
        EXIT_OK
    }
}

/// Two simulated invocations (their curves), run by run: exit 1 when a run got worse.
fn compare_curves(
    b: &[&crate::report::RunResult],
    c: &[&crate::report::RunResult],
    args: &CompareArgs,
) -> u8 {
    let changes = crate::report::simulated::compare(b, c, args.default_tolerance);
    match args.format {
        CompareFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&changes).expect("changes serialize")
        ),
        CompareFormat::Table | CompareFormat::Markdown => {
            println!(
                "simulated curves: {} runs → {} runs (each run is one sample: rerun with --repeat for a spread before trusting a small change)",
                b.len(),
                c.len()
            );
            if changes.is_empty() {
                println!("no run changed");
            }
            for ch in &changes {
                println!(
                    "{} {}: {}",
                    if ch.worse { "WORSE" } else { "changed" },
                    ch.run,
                    ch.what
                );
            }
        }
    }
    if changes.iter().any(|c| c.worse) {
        EXIT_EXPECTATION_FAILED
    } else {
        EXIT_OK
    }
}

pub fn compare(args: CompareArgs) -> u8 {
    for p in [&args.baseline, &args.candidate] {
        if !p.exists() {
            error(format!(
                "{} does not exist; give a run directory (or its results.json), a qualification's directory (or its sheet.json), or a simulated invocation's directory",
                p.display()
            ));
            return EXIT_BAD_INPUT;
        }
    }
    let sheet_path = crate::store::sheet_path;
    match (sheet_path(&args.baseline), sheet_path(&args.candidate)) {
        (Some(b), Some(c)) => return compare_sheets(&b, &c, &args),
        (Some(s), None) | (None, Some(s)) => {
            error(format!(
                "{} is a qualification sheet and the other side is not: a sheet and a run directory cannot be compared; compare two sheets, or two run directories",
                s.display()
            ));
            return EXIT_BAD_INPUT;
        }
        (None, None) => {}
    }
    let tol = match tolerances(&args) {
        Ok(t) => t,
        Err(e) => {
            error(e);
            return EXIT_BAD_INPUT;
        }
    };
    let (baseline, candidate) = match (load(&args.baseline), load(&args.candidate)) {
        (Ok(b), Ok(c)) => (b, c),
        (Err(e), _) | (_, Err(e)) => {
            error(e);
            return EXIT_BAD_INPUT;
        }
    };
    let simulated = crate::report::simulated::runs;
    match (simulated(&baseline), simulated(&candidate)) {
        (b, c) if !b.is_empty() && !c.is_empty() => return compare_curves(&b, &c, &args),
        (b, c) if !b.is_empty() || !c.is_empty() => {
            error("one side holds simulated runs (a curve) and the other does not: compare a curve with a curve, and real runs with real runs");
            return EXIT_BAD_INPUT;
        }
        _ => {}
    }
    let changed = compare::spec_changes(&baseline, &candidate);
    if !changed.is_empty() && !args.allow_spec_change {
        for id in &changed {
            let what = spec_difference(&args.baseline, &args.candidate, id)
                .unwrap_or_else(|| "their specHash differs".into());
            error(format!("{id}: the resolved spec changed: {what}"));
        }
        error("not comparing runs of different experiments; give --allow-spec-change to compare anyway");
        return EXIT_BAD_INPUT;
    }
    let opts = compare::Options {
        tolerances: tol,
        alpha: args.alpha,
        strict: args.strict,
    };
    let c = compare::compare(&baseline, &candidate, &opts);
    match args.format {
        CompareFormat::Table => print!("{}", compare::render_table(&c)),
        CompareFormat::Markdown => print!("{}", compare::render_markdown(&c)),
        CompareFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&c).expect("comparison serializes")
        ),
    }
    if c.regressed > 0 {
        EXIT_EXPECTATION_FAILED
    } else {
        EXIT_OK
    }
}
