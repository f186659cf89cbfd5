//! Expands experiments (variants × repetitions) into runs. Pure.

use crate::spec::{
    ClusterSpec, Expectations, Experiment, FaultSpec, RemediationSpec, Timeouts, WorkloadSpec,
};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One execution of one variant of one experiment: one JUnit test case.
/// Written to `<run dir>/run.json` before the run starts; reports are recomputed from it and
/// `events.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedRun {
    /// `<experiment>/<variant>/<repetition>`; also the run's directory below the output dir.
    pub id: String,
    pub experiment: String,
    /// The experiment file it came from.
    pub file: PathBuf,
    pub variant: String,
    /// 1-based.
    pub repetition: u32,
    pub cluster: ClusterSpec,
    pub workload: WorkloadSpec,
    pub fault: FaultSpec,
    pub remediation: RemediationSpec,
    pub timeouts: Timeouts,
    pub expect: Expectations,
}

/// Filters given on the command line.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Overrides every experiment's `repeat`.
    pub repeat: Option<u32>,
    /// Only these variant names (empty: all).
    pub only: Vec<String>,
}

pub use crate::spec::DEFAULT_VARIANT;

/// Expands one experiment into its runs, variants in file order, repetitions innermost.
pub fn expand(exp: &Experiment, file: &std::path::Path, opts: &PlanOptions) -> Vec<PlannedRun> {
    let repeat = opts.repeat.unwrap_or(exp.repeat).max(1);
    let mut runs = Vec::new();
    for variant in exp.variant_specs() {
        if !opts.only.is_empty() && !opts.only.iter().any(|o| o == variant.name) {
            continue;
        }
        for repetition in 1..=repeat {
            runs.push(PlannedRun {
                id: format!("{}/{}/{}", exp.name, variant.name, repetition),
                experiment: exp.name.clone(),
                file: file.to_path_buf(),
                variant: variant.name.to_string(),
                repetition,
                cluster: exp.cluster.clone(),
                workload: exp.workload.clone(),
                fault: variant.fault.clone(),
                remediation: variant.remediation.clone(),
                timeouts: variant.timeouts.clone(),
                expect: variant.expect.clone(),
            });
        }
    }
    runs
}
