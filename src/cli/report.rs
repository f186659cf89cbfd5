use super::{error, EXIT_BAD_INPUT, EXIT_HARNESS, EXIT_OK};
use crate::report::{self, Report};
use crate::store;
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Html,
    Json,
    Junit,
    Markdown,
    Table,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A directory written by `nodedown run` (or one run directory inside it).
    pub run_dir: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
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
    Ok(report)
}

pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Html => report::html::render(report),
        Format::Json => report::json::to_string(report),
        Format::Junit => report::junit::render(report),
        Format::Markdown => report::markdown::render(report),
        Format::Table => report::table::render(report, std::io::stdout().is_terminal()),
    }
}

pub fn report(args: ReportArgs) -> u8 {
    if !args.run_dir.is_dir() {
        error(format!(
            "{} is not a directory; give the directory `nodedown run` wrote (--out)",
            args.run_dir.display()
        ));
        return EXIT_BAD_INPUT;
    }
    match build(&args.run_dir) {
        Ok(r) if r.experiments.is_empty() => simulated(&args),
        Ok(r) => {
            print!("{}", render(&r, args.format));
            EXIT_OK
        }
        Err(e) => {
            error(e);
            EXIT_HARNESS
        }
    }
}

/// The report of simulated runs (provider kwok), which have a results.json of their own: the
/// curve, in Markdown (also for `table`), JSON (the results as curve.json holds them) or JUnit.
fn simulated(args: &ReportArgs) -> u8 {
    use crate::report::simulated;
    let results = match crate::store::load_simulated(&args.run_dir) {
        Ok(r) => r
            .iter()
            .map(|s| simulated::recompute(&s.result, s.events.as_deref()))
            .collect::<Vec<_>>(),
        Err(e) => {
            error(e);
            return EXIT_BAD_INPUT;
        }
    };
    if results.is_empty() {
        error(format!(
            "{} holds no run (no run.json below it, nor a simulated run's results.json)",
            args.run_dir.display()
        ));
        return EXIT_BAD_INPUT;
    }
    match args.format {
        Format::Markdown | Format::Table => print!("{}", simulated::curve_markdown(&results)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&results).expect("results serialize")
        ),
        Format::Junit => print!("{}", simulated::curve_junit(&results)),
        Format::Html => {
            error(format!(
                "{}: simulated runs have no HTML report yet; use --format markdown, json or junit",
                args.run_dir.display()
            ));
            return EXIT_BAD_INPUT;
        }
    }
    EXIT_OK
}
