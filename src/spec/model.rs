//! The experiment format: what a user writes in `experiments/*.yaml`.
//!
//! Strict: every struct denies unknown fields, so a typo is an error that names the field.
//! Durations are written as `30s`, `5m`, `1m30s` (humantime).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// One experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Experiment {
    /// Name used in reports and run directories: lowercase letters, digits and `-`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub cluster: ClusterSpec,
    pub workload: WorkloadSpec,
    pub fault: FaultSpec,
    #[serde(default)]
    pub remediation: RemediationSpec,
    #[serde(default)]
    pub timeouts: Timeouts,
    #[serde(default)]
    pub expect: Expectations,
    /// How many times each variant runs.
    #[serde(default = "one")]
    pub repeat: u32,
    /// Overrides of the fields above, one run set per variant. A field given in a variant
    /// replaces the experiment's field as a whole (no deep merge). No variants: one implicit
    /// variant named `default`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterSpec {
    #[serde(default)]
    pub provider: Provider,
    /// kind config file, relative to the experiment file. Default: the fast profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
    /// Cluster name (kind) to create or reuse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Reuse a cluster of that name when it exists (default true).
    #[serde(default = "yes")]
    pub reuse: bool,
}

fn yes() -> bool {
    true
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec { provider: Provider::Kind, config: None, name: None, reuse: true }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    #[default]
    Kind,
    /// An existing cluster, reached through kubeconfig / `--context`.
    Existing,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadSpec {
    pub kind: WorkloadKind,
    #[serde(default = "one")]
    pub replicas: u32,
    #[serde(default = "default_storage_class")]
    pub storage_class: String,
    /// PVC size, a Kubernetes quantity such as `1Gi`.
    #[serde(default = "default_size")]
    pub size: String,
    /// Container image; default: the image nodedown builds and loads itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

pub fn default_storage_class() -> String {
    "nodedown-shared".to_string()
}
fn default_size() -> String {
    "1Gi".to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// A simple writer: appends a line with a counter to its volume every 200 ms.
    Writer,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FaultSpec {
    pub kind: FaultKind,
    pub target: Target,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Power off: the node container is killed.
    NodeShutdown,
}

impl FaultKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            FaultKind::NodeShutdown => "node-shutdown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Target {
    /// The node running this pod of the workload (e.g. `writer-0`).
    pub node_of: String,
}

/// What is done about the dead node.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum RemediationSpec {
    #[default]
    None,
    /// Add `node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`, `after` the node is
    /// seen NotReady; with `fence`, make sure the node is powered off first.
    #[serde(rename_all = "camelCase")]
    OutOfServiceTaint {
        #[serde(default, with = "humantime_serde")]
        after: Duration,
        #[serde(default)]
        fence: bool,
    },
    /// `kubectl delete pod --force --grace-period=0`, `after` the node is seen NotReady.
    #[serde(rename_all = "camelCase")]
    ForceDeletePod {
        #[serde(default, with = "humantime_serde")]
        after: Duration,
    },
    /// Delete the Node object, `after` the node is seen NotReady.
    #[serde(rename_all = "camelCase")]
    DeleteNode {
        #[serde(default, with = "humantime_serde")]
        after: Duration,
    },
}

impl RemediationSpec {
    pub fn name(&self) -> &'static str {
        match self {
            RemediationSpec::None => "none",
            RemediationSpec::OutOfServiceTaint { .. } => "out-of-service-taint",
            RemediationSpec::ForceDeletePod { .. } => "force-delete-pod",
            RemediationSpec::DeleteNode { .. } => "delete-node",
        }
    }
    /// The delay after NotReady, when there is an action at all.
    pub fn after(&self) -> Option<Duration> {
        match self {
            RemediationSpec::None => None,
            RemediationSpec::OutOfServiceTaint { after, .. }
            | RemediationSpec::ForceDeletePod { after }
            | RemediationSpec::DeleteNode { after } => Some(*after),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Timeouts {
    /// Workload Running and Ready before the fault.
    #[serde(default = "default_steady", with = "humantime_serde")]
    pub steady_state: Duration,
    /// From the fault until the replacement pod is Ready; then the run stops observing.
    #[serde(default = "default_recovery", with = "humantime_serde")]
    pub recovery: Duration,
    /// Healing: node back and Ready.
    #[serde(default = "default_heal", with = "humantime_serde")]
    pub heal: Duration,
}

fn default_steady() -> Duration {
    Duration::from_secs(180)
}
fn default_recovery() -> Duration {
    Duration::from_secs(300)
}
fn default_heal() -> Duration {
    Duration::from_secs(180)
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { steady_state: default_steady(), recovery: default_recovery(), heal: default_heal() }
    }
}

/// What must be true of a run. Each field set is one checked expectation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expectations {
    /// Whether the workload pod runs and is Ready again within `timeouts.recovery`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_running: Option<Bound>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_ready: Option<Bound>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Bound {
    #[serde(with = "humantime_serde")]
    pub max: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Variant {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<RemediationSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<Timeouts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expectations>,
}
