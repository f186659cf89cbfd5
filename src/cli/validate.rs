use super::{error, EXIT_BAD_INPUT, EXIT_OK};
use crate::plan::{self, PlanOptions};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  nodedown validate experiments/                   every file, its variants listed
  nodedown validate my-experiment.yaml             errors name file, line, field and the fix")]
pub struct ValidateArgs {
    /// Experiment files or directories.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

/// Every file checked, valid or not: each valid one with its variants, each invalid one's
/// error, then a count; exit 2 when any file is invalid.
pub fn validate(args: ValidateArgs) -> u8 {
    let (experiments, errors) = match crate::spec::load_paths_all(&args.paths) {
        Ok(x) => x,
        Err(e) => {
            error(e);
            return EXIT_BAD_INPUT;
        }
    };
    for (file, exp) in &experiments {
        let runs = plan::expand(exp, file, &PlanOptions::default());
        let variants: Vec<&str> = exp.variant_specs().iter().map(|v| v.name).collect();
        println!(
            "{}: ok ({}, {} run{}; variants: {})",
            file.display(),
            exp.name,
            runs.len(),
            if runs.len() == 1 { "" } else { "s" },
            variants.join(", ")
        );
    }
    let bad = errors.len();
    for e in errors {
        error(e);
    }
    let files = experiments.len() + bad;
    if bad == 0 {
        return EXIT_OK;
    }
    // The count when there is more than one file to count.
    if files > 1 {
        eprintln!(
            "{files} file{} checked: {} valid, {bad} invalid",
            if files == 1 { "" } else { "s" },
            experiments.len()
        );
    }
    EXIT_BAD_INPUT
}
