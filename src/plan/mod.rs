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

/// The name of the implicit variant of an experiment without `variants`.
pub const DEFAULT_VARIANT: &str = "default";

/// Expands one experiment into its runs, variants in file order, repetitions innermost.
pub fn expand(exp: &Experiment, file: &std::path::Path, opts: &PlanOptions) -> Vec<PlannedRun> {
    let repeat = opts.repeat.unwrap_or(exp.repeat).max(1);
    let base = (DEFAULT_VARIANT.to_string(), None, None, None, None);
    let variants: Vec<_> = if exp.variants.is_empty() {
        vec![base]
    } else {
        exp.variants
            .iter()
            .map(|v| {
                (
                    v.name.clone(),
                    v.fault.clone(),
                    v.remediation.clone(),
                    v.timeouts.clone(),
                    v.expect.clone(),
                )
            })
            .collect()
    };
    let mut runs = Vec::new();
    for (name, fault, remediation, timeouts, expect) in variants {
        if !opts.only.is_empty() && !opts.only.iter().any(|o| o == &name) {
            continue;
        }
        for repetition in 1..=repeat {
            runs.push(PlannedRun {
                id: format!("{}/{}/{}", exp.name, name, repetition),
                experiment: exp.name.clone(),
                file: file.to_path_buf(),
                variant: name.clone(),
                repetition,
                cluster: exp.cluster.clone(),
                workload: exp.workload.clone(),
                fault: fault.clone().unwrap_or_else(|| exp.fault.clone()),
                remediation: remediation
                    .clone()
                    .unwrap_or_else(|| exp.remediation.clone()),
                timeouts: timeouts.clone().unwrap_or_else(|| exp.timeouts.clone()),
                expect: expect.clone().unwrap_or_else(|| exp.expect.clone()),
            });
        }
    }
    runs
}
