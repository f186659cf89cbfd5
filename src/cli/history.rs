//! `nodedown history DIR…`: each variant's verdicts and times across invocations.

use super::{error, EXIT_BAD_INPUT, EXIT_HARNESS};
use crate::report::history;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryFormat {
    /// A row per variant: its verdicts the latest first, how many passed, when it last passed,
    /// whether its spec changed, its time-to-ready over the latest runs.
    Table,
    /// The same as a Markdown table (a job summary).
    Markdown,
    /// One page: per variant a small chart of its time-to-ready across the invocations and a
    /// table of its runs.
    Html,
    /// Per variant its points (invocation, start, verdict, times, data, spec hash) as JSON.
    Json,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  nodedown history runs/*                               each variant across every invocation in runs/
  nodedown history runs/* -o html --output-file trend.html   a chart per variant
  nodedown history nightly-1 nightly-2 nightly-3 -o markdown >> $GITHUB_STEP_SUMMARY")]
pub struct HistoryArgs {
    /// Directories written by `nodedown run` (one invocation each), in any order: runs are
    /// ordered by when they started.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// What to write (`-o` as on `run` and `report`).
    #[arg(short = 'o', long = "format", visible_alias = "output", value_enum, default_value_t = HistoryFormat::Table)]
    pub format: HistoryFormat,
    /// Where it goes (default: stdout).
    #[arg(long = "output-file", value_name = "PATH")]
    pub output_file: Option<PathBuf>,
}

pub fn history(args: HistoryArgs) -> u8 {
    let mut reports = Vec::new();
    for dir in &args.dirs {
        if !dir.is_dir() {
            error(format!(
                "{} is not a directory; give directories `nodedown run` wrote (--out)",
                dir.display()
            ));
            return EXIT_BAD_INPUT;
        }
        match super::report::build(dir) {
            Ok(r) if r.experiments.is_empty() => {
                error(format!(
                    "{} holds no run (no run.json below it); give directories `nodedown run` wrote",
                    dir.display()
                ));
                return EXIT_BAD_INPUT;
            }
            Ok(r) => reports.push((dir.display().to_string(), r)),
            Err(e) => {
                error(format!("{}: {e}", dir.display()));
                return EXIT_HARNESS;
            }
        }
    }
    let h = history::of(&reports);
    let n = reports.len();
    let text = match args.format {
        HistoryFormat::Table => history::table(&h, n, super::report::terminal_width()),
        HistoryFormat::Markdown => history::markdown(&h, n),
        HistoryFormat::Html => history::html(&h, n),
        HistoryFormat::Json => serde_json::to_string_pretty(&h).expect("history serializes") + "\n",
    };
    let to = args.output_file.as_deref().filter(|p| p.as_os_str() != "-");
    super::report::write_or_print(to, &text)
}
