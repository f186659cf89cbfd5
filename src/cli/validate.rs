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

pub fn validate(args: ValidateArgs) -> u8 {
    match crate::spec::load_paths(&args.paths) {
        Ok(experiments) => {
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
            EXIT_OK
        }
        Err(e) => {
            error(e);
            EXIT_BAD_INPUT
        }
    }
}
