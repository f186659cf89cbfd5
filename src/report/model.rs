//! The one neutral result model. JSON, JUnit, Markdown and the terminal table are renderers
//! over it. `results.json` is this model serialized; its schema is versioned by
//! `SCHEMA_VERSION` and documented in docs/results-schema.md.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema_version: u32,
    /// `nodedown <version>`.
    pub tool: String,
    pub experiments: Vec<ExperimentResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExperimentResult {
    pub name: String,
    pub file: String,
    pub runs: Vec<RunResult>,
}

/// Three-valued, as in Jepsen: unknown when the evidence is insufficient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    Fail,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// `<experiment>/<variant>/<repetition>`.
    pub id: String,
    pub variant: String,
    pub repetition: u32,
    pub fault: String,
    pub remediation: String,
    /// The kind config file (profile) the cluster was made from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Wall clock of the run's first event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// Milliseconds from the first to the last event.
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement_node: Option<String>,
    /// Phases that happened, in time order; `atMs` counted from the fault.
    pub phases: Vec<PhaseResult>,
    /// Metric name → milliseconds from the fault. A metric whose phase never happened is absent.
    pub metrics: BTreeMap<String, u64>,
    pub expectations: Vec<ExpectationResult>,
    /// Pass when every expectation passed; Fail when any failed; else Unknown.
    pub verdict: Verdict,
    /// The harness could not complete the run (then the verdict is Unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The integrity checker's findings (ledger workload only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<IntegrityResult>,
}

/// What the integrity checker concluded about a run's ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntegrityResult {
    pub verdict: Verdict,
    /// One line for humans.
    pub summary: String,
    pub records: u64,
    pub writers: u64,
    pub acknowledged: u64,
    pub lost_acknowledged: u64,
    pub corrupt: u64,
    pub split_brain: bool,
    /// Offsets, sequence numbers, incarnations and nodes behind the verdict.
    pub evidence: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseResult {
    pub name: String,
    pub at_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectationResult {
    /// e.g. `recovered`, `timeToRunning`.
    pub name: String,
    /// What the experiment asked for, e.g. `true`, `<= 2m`.
    pub expected: String,
    /// What happened, e.g. `false`, `47.2s`, `absent (never Running)`.
    pub actual: String,
    pub verdict: Verdict,
    /// The events or facts the verdict rests on, for humans.
    pub evidence: String,
}
