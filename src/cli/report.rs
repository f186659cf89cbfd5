use super::{error, EXIT_BAD_INPUT, EXIT_HARNESS, EXIT_OK};
use crate::report::{self, Report};
use crate::store;
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One self-contained page (report.html in DIR unless `--output-file`): the verdicts'
    /// banner, timelines, a table per experiment, each run's evidence.
    Html,
    /// results.json's model, the schema in schema/results.json.
    Json,
    /// JUnit XML: a test suite per experiment, a test case per run.
    Junit,
    /// The job summary (GitHub-flavoured Markdown, under the 1 MiB summary limit).
    Markdown,
    /// Prometheus text exposition (node-exporter's textfile collector, a Pushgateway).
    Prometheus,
    /// The runs grouped by experiment, fit to the terminal's width (`COLUMNS`), then what failed
    /// and what to do next.
    Table,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  nodedown report runs/2026-12-06T10-00-00Z                 the table again
  nodedown report runs/… --fail-on unknown                  exit 1 unless every run passed (as `run`)
  nodedown report runs/… -o markdown > summary.md           the job summary
  nodedown report runs/… -o html                            writes runs/…/report.html
  nodedown report runs/… -o html --output-file - | less     HTML on stdout
  nodedown report runs/… -o prometheus > nodedown.prom      metrics for a textfile collector
  nodedown report qualification/ -o html                    the sheet's page (sheet.html)")]
pub struct ReportArgs {
    /// A directory written by `nodedown run` (or one run directory inside it), a simulated
    /// invocation's directory, or a qualification's directory (or its sheet.json).
    #[arg(value_name = "DIR")]
    pub run_dir: PathBuf,
    /// What to write (`-o json` as on `run`).
    #[arg(short = 'o', long = "format", visible_alias = "output", value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Where it goes (`-`: stdout). Default: report.html in DIR for HTML (sheet.html for a
    /// qualification), stdout for the others.
    #[arg(long = "output-file", value_name = "PATH")]
    pub output_file: Option<PathBuf>,
    /// Exit 1 when a run failed (`fail`), or also when one is unknown (`unknown`), as `nodedown
    /// run` does — for a job that renders the results of a run it did not wait on. Without it
    /// the exit code says only whether the reports could be written.
    #[arg(long, value_enum, value_name = "VERDICTS")]
    pub fail_on: Option<super::exit::FailOn>,
    /// Also push the runs' metrics (as `--format prometheus` writes them) to a Prometheus
    /// Pushgateway: its address (group `/metrics/job/nodedown`) or a push URL naming the group.
    #[arg(long, env = "NODEDOWN_PUSHGATEWAY", value_name = "URL")]
    pub pushgateway: Option<String>,
    /// Also annotate the user's Grafana with the runs: per run a region from the fault to the
    /// recovery and a point at each key phase (`POST /api/annotations`; the service account
    /// token from `NODEDOWN_GRAFANA_TOKEN`).
    #[arg(long, env = "NODEDOWN_GRAFANA_URL", value_name = "URL")]
    pub grafana_url: Option<String>,
    /// The dashboard the annotations belong to (its UID); without it they are organization
    /// annotations.
    #[arg(
        long,
        env = "NODEDOWN_GRAFANA_DASHBOARD",
        value_name = "UID",
        requires = "grafana_url"
    )]
    pub grafana_dashboard: Option<String>,
}

/// Writes `text` where `--output-file` says, else to `default` in the directory, and says
/// where; `-` is stdout. Formats other than HTML always go to stdout.
fn emit(args: &ReportArgs, default: &Path, text: &str) -> u8 {
    let to = match (&args.format, &args.output_file) {
        (_, Some(p)) if p.as_os_str() == "-" => None,
        (_, Some(p)) => Some(p.clone()),
        (Format::Html, None) => Some(default.to_path_buf()),
        _ => None,
    };
    write_or_print(to.as_deref(), text)
}

/// `text` into the file `to` (saying so on stderr), or on stdout without one.
pub(super) fn write_or_print(to: Option<&Path>, text: &str) -> u8 {
    match to {
        None => {
            print!("{text}");
            EXIT_OK
        }
        Some(p) => match std::fs::write(p, text) {
            Ok(()) => {
                eprintln!("wrote {}", p.display());
                EXIT_OK
            }
            Err(e) => {
                error(format!("cannot write {}: {e}", p.display()));
                EXIT_HARNESS
            }
        },
    }
}

/// A qualification sheet rendered again (its digest verified): Markdown (also for `table`),
/// HTML, JSON or JUnit.
fn sheet(args: &ReportArgs, path: &Path) -> u8 {
    use crate::report::sheet;
    if let Err(code) = super::push::check(args.pushgateway.as_deref()) {
        return code;
    }
    let s = match crate::store::load_sheet(path) {
        Ok(s) => s,
        Err(e) => {
            error(e);
            return EXIT_BAD_INPUT;
        }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let metrics = || qualification_metrics(&s, &dir.join("runs"));
    if let Some(given) = &args.pushgateway {
        if let Err(e) = super::push::push_to(given, &metrics(), false) {
            error(e);
            return EXIT_HARNESS;
        }
    }
    let text = match args.format {
        Format::Prometheus => metrics(),
        Format::Markdown => sheet::markdown(&s),
        Format::Table => sheet::table(&s, terminal_width()),
        Format::Html => sheet::html(&s),
        Format::Json => serde_json::to_string_pretty(&s).expect("a sheet serializes") + "\n",
        Format::Junit => sheet::junit(&s),
    };
    let code = emit(args, &dir.join("sheet.html"), &text);
    match args.fail_on {
        // A row not applicable to the driver is neither.
        Some(fail_on) if code == EXIT_OK => super::exit::exit_code_of(
            s.rows.iter().filter_map(|r| match r.verdict {
                sheet::RowVerdict::Pass => Some((crate::verdict::Verdict::Pass, false)),
                sheet::RowVerdict::Fail => Some((crate::verdict::Verdict::Fail, false)),
                sheet::RowVerdict::Unknown => Some((crate::verdict::Verdict::Unknown, false)),
                sheet::RowVerdict::NotApplicable => None,
            }),
            fail_on,
        ),
        _ => code,
    }
}

/// A qualification's metrics: its sheet's rows, and its runs' when `runs` (its runs'
/// directory) holds them.
pub fn qualification_metrics(s: &crate::report::sheet::Sheet, runs: &Path) -> String {
    let mut text = report::metrics::render_sheet(s);
    if let Ok(r) = build(runs) {
        if !r.experiments.is_empty() {
            text.push_str(&report::metrics::render(&r));
        }
    }
    text
}

pub fn tool_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Recomputes the report of every run below `dir` from the files of its run directories.
pub fn build(dir: &Path) -> Result<Report, store::StoreError> {
    let mut report = report::assemble::report_with(store::load_all(dir)?, &tool_version());
    report.invocation =
        store::load_invocation(dir).map(|t| report::assemble::invocation(&report, t));
    report.not_run = store::load_not_run(dir)?;
    report.dir = Some(dir.display().to_string());
    report.origin = std::fs::read_to_string(dir.join(store::SESSION_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<crate::runner::Session>(&t).ok())
        .map(|s| report::Origin {
            command: s.command.unwrap_or_default(),
            started: s.started,
            provider: s.provider,
            cluster: s.cluster,
            context: s.context,
        });
    Ok(report)
}

pub fn render(report: &Report, format: Format) -> String {
    // A simulated invocation's views are its curve's.
    let simulated = report::simulated::runs(report);
    if !simulated.is_empty() {
        match format {
            Format::Html => return report::simulated::curve_html(&simulated),
            Format::Junit => return report::simulated::curve_junit(&simulated),
            Format::Markdown => return report::simulated::curve_markdown(&simulated),
            Format::Table => return report::simulated::curve_table(&simulated, terminal_width()),
            Format::Json | Format::Prometheus => {}
        }
    }
    match format {
        Format::Html => report::html::render(report),
        Format::Json => report::json::to_string(report),
        Format::Junit => report::junit::render(report),
        Format::Markdown => report::markdown::render(report),
        Format::Prometheus => report::metrics::render(report),
        Format::Table => report::table::render(report, &terminal_layout(report)),
    }
}

/// How the table fits where it is printed: colours on a terminal unless `NO_COLOR` is set; the
/// width of `COLUMNS`, else of the terminal, else none (a log or a pipe: nothing cut).
pub fn terminal_layout(report: &Report) -> report::table::Layout {
    let tty = std::io::stdout().is_terminal();
    report::table::Layout {
        color: tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        width: terminal_width(),
        dir: report.dir.clone(),
    }
}

/// The width tables are fit to: `COLUMNS`, else the terminal's, else none (a log, a pipe).
pub fn terminal_width() -> Option<usize> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|w| *w > 0)
        .or_else(|| {
            std::io::stdout()
                .is_terminal()
                .then(|| terminal_size::terminal_size().map(|(w, _)| w.0 as usize))
                .flatten()
        })
}

pub fn report(args: ReportArgs) -> u8 {
    if !args.run_dir.exists() {
        error(format!(
            "{} does not exist; give the directory `nodedown run` wrote (--out), or a qualification's",
            args.run_dir.display()
        ));
        return EXIT_BAD_INPUT;
    }
    if let Some(path) = crate::store::sheet_path(&args.run_dir) {
        return sheet(&args, &path);
    }
    if !args.run_dir.is_dir() {
        error(format!(
            "{} is a file, not a directory; give the directory `nodedown run` wrote (--out), or a qualification's sheet.json",
            args.run_dir.display()
        ));
        return EXIT_BAD_INPUT;
    }
    if let Err(code) = super::push::check(args.pushgateway.as_deref()) {
        return code;
    }
    if let Err(code) = super::push::check_grafana(args.grafana_url.as_deref()) {
        return code;
    }
    let built = match crate::store::load_legacy_curve(&args.run_dir) {
        Some(legacy) => legacy.map(|runs| report::simulated::report_of(runs, &tool_version())),
        None => build(&args.run_dir),
    };
    // How many of the runs are simulated, of how many: none, all, or some (refused).
    let simulated = |r: &Report| {
        let all: usize = r.experiments.iter().map(|e| e.runs.len()).sum();
        (report::simulated::runs(r).len(), all)
    };
    match built {
        Ok(r) if r.experiments.is_empty() => {
            error(format!(
                "{} holds no run (no run.json below it)",
                args.run_dir.display()
            ));
            EXIT_BAD_INPUT
        }
        Ok(r) if matches!(simulated(&r), (s, all) if s > 0 && s != all) => {
            error(format!(
                "{} holds runs on simulated nodes and runs on real nodes (two invocations?): give each invocation's directory",
                args.run_dir.display()
            ));
            EXIT_BAD_INPUT
        }
        Ok(r)
            if simulated(&r).0 > 0
                && (args.pushgateway.is_some() || args.format == Format::Prometheus) =>
        {
            error("the metrics are those of runs on real nodes: this directory holds simulated runs, whose figures are in results.json (each run's `scale`); use --format json");
            EXIT_BAD_INPUT
        }
        Ok(r) => {
            if let Some(url) = &args.grafana_url {
                let annotations =
                    report::grafana::annotations(&r, args.grafana_dashboard.as_deref());
                if let Err(e) = super::push::annotate(url, &annotations, false) {
                    error(e);
                    return EXIT_HARNESS;
                }
            }
            if let Some(given) = &args.pushgateway {
                if let Err(e) = super::push::push_to(given, &report::metrics::render(&r), false) {
                    error(e);
                    return EXIT_HARNESS;
                }
            }
            let code = emit(
                &args,
                &args.run_dir.join("report.html"),
                &render(&r, args.format),
            );
            match args.fail_on {
                Some(fail_on) if code == EXIT_OK => super::exit::exit_code(&r, fail_on),
                _ => code,
            }
        }
        Err(e) => {
            error(e);
            EXIT_HARNESS
        }
    }
}
