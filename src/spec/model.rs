//! The experiment format: what a user writes in `experiments/*.yaml`.
//!
//! Strict: every struct denies unknown fields, so a typo is an error that names the field.
//! Durations are written as `30s`, `5m`, `1m30s` (see [`duration`]).

use serde::{Deserialize, Deserializer, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// One experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Experiment {
    /// Name used in reports and run directories: lowercase letters, digits and `-`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(extend("default" = {"provider": "kind", "reuse": true}))]
    pub cluster: ClusterSpec,
    pub workload: WorkloadSpec,
    pub fault: FaultSpec,
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(extend("default" = {"kind": "none"}))]
    pub remediation: RemediationSpec,
    #[serde(default)]
    pub timeouts: Timeouts,
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(extend("default" = {}))]
    pub expect: Expectations,
    /// How many times each variant runs.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    #[schemars(extend("default" = 1))]
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

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// A field left out when written (`nodedown qualify`'s files) because reading it back without
/// it gives the same value.
fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// The name of the implicit variant of an experiment without `variants`.
pub const DEFAULT_VARIANT: &str = "default";

/// What the runs of one variant use: the experiment's fields with the variant's in their place.
#[derive(Debug, Clone, Copy)]
pub struct VariantSpec<'a> {
    pub name: &'a str,
    pub workload: &'a WorkloadSpec,
    pub fault: &'a FaultSpec,
    pub remediation: &'a RemediationSpec,
    pub timeouts: &'a Timeouts,
    pub expect: &'a Expectations,
}

impl Experiment {
    /// Each variant merged into the experiment, in file order: a field the variant gives
    /// replaces the experiment's field as a whole (no deep merge). Without variants, one
    /// variant named [`DEFAULT_VARIANT`] with the experiment's own fields.
    pub fn variant_specs(&self) -> Vec<VariantSpec<'_>> {
        let base = VariantSpec {
            name: DEFAULT_VARIANT,
            workload: &self.workload,
            fault: &self.fault,
            remediation: &self.remediation,
            timeouts: &self.timeouts,
            expect: &self.expect,
        };
        if self.variants.is_empty() {
            return vec![base];
        }
        self.variants
            .iter()
            .map(|v| VariantSpec {
                name: &v.name,
                workload: v.workload.as_ref().unwrap_or(base.workload),
                fault: v.fault.as_ref().unwrap_or(base.fault),
                remediation: v.remediation.as_ref().unwrap_or(base.remediation),
                timeouts: v.timeouts.as_ref().unwrap_or(base.timeouts),
                expect: v.expect.as_ref().unwrap_or(base.expect),
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterSpec {
    #[serde(default)]
    pub provider: Provider,
    /// The provider's own config file (kind: a kind config; k3d: a k3d config), relative to
    /// the experiment file's directory (kept as written; resolve it with
    /// [`crate::spec::cluster_config_path`]). Default: the fast profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
    /// Cluster name (kind, k3d) to create or reuse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Reuse a cluster of that name when it exists (default true).
    #[serde(default = "yes")]
    pub reuse: bool,
    /// `provider: kwok`: how many simulated nodes the cluster has (default 50); nodedown adds
    /// the missing ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulated_nodes: Option<u32>,
}

fn yes() -> bool {
    true
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec {
            provider: Provider::Kind,
            config: None,
            name: None,
            reuse: true,
            simulated_nodes: None,
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// A kind cluster nodedown creates or reuses.
    #[default]
    Kind,
    /// A k3d cluster (k3s in Docker) nodedown creates or reuses.
    K3d,
    /// An existing cluster, reached through kubeconfig / `--context`.
    Existing,
    /// nodedown's simulated cluster: a kind control plane (its own, `nodedown-sim` unless
    /// `name` says otherwise) whose workers are kwok's simulated nodes
    /// (`cluster.simulatedNodes`). Control-plane timings only: no data path, no integrity.
    Kwok,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Kind => "kind",
            Provider::K3d => "k3d",
            Provider::Existing => "existing",
            Provider::Kwok => "kwok",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadSpec {
    pub kind: WorkloadKind,
    #[serde(default = "one")]
    pub replicas: u32,
    /// How many independent copies of the workload (a fleet): each its own StatefulSet, claim
    /// and ledger, all placed on the target node. Instance 0 is `<kind>` (pod `<kind>-0`, the
    /// one `fault.target.nodeOf` names); instance i ≥ 1 is `<kind>-i<i>` (pod `<kind>-i<i>-0`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub instances: u32,
    #[serde(default = "default_storage_class")]
    pub storage_class: String,
    /// PVC size, a Kubernetes quantity such as `1Gi`.
    #[serde(default = "default_size")]
    pub size: String,
    /// Container image; default: the image nodedown builds and loads itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The claim's access mode (and, for the volumes nodedown makes, the PersistentVolume's).
    #[serde(default, skip_serializing_if = "AccessMode::is_default")]
    pub access_mode: AccessMode,
    /// What runs the pod: a StatefulSet (default; at most one pod per identity) or a
    /// Deployment (one replica and one claim; a replacement is made as soon as the old pod is
    /// terminating, whatever its volume says).
    #[serde(default, skip_serializing_if = "Controller::is_default")]
    pub controller: Controller,
    /// The Deployment's `strategy.type` (matters for rollouts, not for a failover, where the
    /// ReplicaSet replaces a terminating pod at once). Deployment only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<DeploymentStrategy>,
    /// `Block`: the claim asks for a raw block volume (`volumeMode: Block`) and the ledger
    /// writes its records to the device itself, through the driver's block attach and map path.
    /// Ledger only; the default `Filesystem` mounts a filesystem the ledger writes a file on.
    #[serde(default, skip_serializing_if = "VolumeMode::is_default")]
    pub volume_mode: VolumeMode,
    /// Before the fault, fill every other node the replacement may go to (the lane's workers,
    /// else the cluster's, but the fault's) to the driver's published attach limit — its
    /// CSINode allocatable count — with pods holding one claim of the class each: the failover
    /// meets nodes at their limit. Needs a class the driver provisions dynamically.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fill_attach_limit: bool,
}

/// A claim's `volumeMode`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum VolumeMode {
    #[default]
    Filesystem,
    Block,
}

impl VolumeMode {
    pub fn as_str(self) -> &'static str {
        match self {
            VolumeMode::Filesystem => "Filesystem",
            VolumeMode::Block => "Block",
        }
    }
    fn is_default(&self) -> bool {
        *self == VolumeMode::Filesystem
    }
}

/// The workload controller.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum Controller {
    #[default]
    StatefulSet,
    Deployment,
}

impl Controller {
    pub fn as_str(self) -> &'static str {
        match self {
            Controller::StatefulSet => "StatefulSet",
            Controller::Deployment => "Deployment",
        }
    }
    fn is_default(&self) -> bool {
        *self == Controller::StatefulSet
    }
}

/// A Deployment's `strategy.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum DeploymentStrategy {
    RollingUpdate,
    Recreate,
}

impl DeploymentStrategy {
    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentStrategy::RollingUpdate => "RollingUpdate",
            DeploymentStrategy::Recreate => "Recreate",
        }
    }
}

/// A PersistentVolumeClaim access mode, written as Kubernetes writes it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum AccessMode {
    /// One node may mount it (any number of its pods).
    #[default]
    ReadWriteOnce,
    /// One pod may mount it.
    ReadWriteOncePod,
    /// Any number of nodes may mount it.
    ReadWriteMany,
}

impl AccessMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AccessMode::ReadWriteOnce => "ReadWriteOnce",
            AccessMode::ReadWriteOncePod => "ReadWriteOncePod",
            AccessMode::ReadWriteMany => "ReadWriteMany",
        }
    }
    fn is_default(&self) -> bool {
        *self == AccessMode::ReadWriteOnce
    }
}

pub fn default_storage_class() -> String {
    "nodedown-shared".to_string()
}
fn default_size() -> String {
    "1Gi".to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// A simple writer: appends a line with a counter to its volume every 200 ms.
    Writer,
    /// The integrity workload: checksummed, numbered, fsynced records; its acknowledgements
    /// are recorded by the harness and checked after failover.
    Ledger,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FaultSpec {
    pub kind: FaultKind,
    pub target: Target,
    /// How long the fault lasts before nodedown undoes it in the middle of the run (only
    /// `node-freeze`: the node thaws and its old pod resumes). Without it, the fault lasts
    /// until the heal at the end of the run.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "optional_duration"
    )]
    #[schemars(with = "Option<DurationText>")]
    pub duration: Option<Duration>,
    /// `node-shutdown` only: a clean `systemctl poweroff` inside the node (systemd-logind tells
    /// the kubelet, whose graceful node shutdown terminates the pods first when
    /// `shutdownGracePeriod` is set) instead of a hard power-off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub graceful: bool,
}

/// An optional [`duration`].
pub mod optional_duration {
    use serde::{Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        super::duration::deserialize(d).map(Some)
    }
}

pub use crate::vocab::FaultKind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Target {
    /// The node running this pod of the workload (e.g. `writer-0`). With `zone` it may be left
    /// out (instance 0's first pod, `<kind>-0`).
    #[serde(default)]
    pub node_of: String,
    /// A topology zone (the nodes' `topology.kubernetes.io/zone` label): every schedulable
    /// worker in it is faulted at the same instant and remediated one by one, and a fleet's
    /// instances are spread over those nodes before the fault. The run has the cluster to
    /// itself (a zone spans lanes, and the replacements go to other zones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Several nodes by name (schedulable workers), faulted at the same instant like a zone's;
    /// a fleet's instances are spread over them. The run has the cluster to itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// A number of nodes: the first `count` schedulable workers by name, faulted at the same
    /// instant; a fleet's instances are spread over them. At least one more worker must stay
    /// up for the replacements. The run has the cluster to itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// The most nodes one fault may take at once (`fault.target.count`, `fault.target.nodes`).
pub const MAX_TARGET_NODES: u32 = 50;

impl Target {
    /// How many nodes the target takes when it names them or counts them (a zone's are known
    /// only on the cluster): the named nodes, else the count, else one.
    pub fn node_count(&self) -> usize {
        if self.nodes.is_empty() {
            self.count.unwrap_or(1) as usize
        } else {
            self.nodes.len()
        }
    }

    /// Whether the target is several nodes at once (a zone, a list or a count).
    pub fn several(&self) -> bool {
        self.zone.is_some() || !self.nodes.is_empty() || self.count.is_some()
    }

    /// The nodes the target names in words, when it names several: `zone zone-a`,
    /// `nodes w1, w2`, `2 schedulable workers`.
    pub fn several_in_words(&self) -> Option<String> {
        if let Some(z) = &self.zone {
            Some(format!("every schedulable worker of zone {z}"))
        } else if !self.nodes.is_empty() {
            Some(format!("nodes {}", self.nodes.join(", ")))
        } else {
            self.count
                .map(|n| format!("the first {n} schedulable worker(s) by name"))
        }
    }

    /// The pod the target names: `nodeOf`, or with only a zone `<kind>-0` (instance 0's
    /// first pod).
    pub fn pod(&self, kind: WorkloadKind) -> String {
        if self.node_of.is_empty() {
            format!("{}-0", super::statefulset_name(kind))
        } else {
            self.node_of.clone()
        }
    }
}

/// The label that names a node's topology zone.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// What is done about the dead node.
///
/// Written as one flat mapping, `{kind: force-delete-pod, after: 30s}`, and read through
/// `RawRemediation` (a tagged enum would lose the positions of its fields). Which fields apply
/// to which kind is checked by the loader, which knows where each field is written; here a field
/// that does not apply is dropped.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", from = "RawRemediation")]
pub enum RemediationSpec {
    #[default]
    None,
    /// nodedown does nothing and watches for a remediator that is not nodedown (medik8s, a
    /// cloud controller, a vendor's pod monitor, a person): the first out-of-service taint on
    /// the node, deletion of the old pod, of the Node or of its VolumeAttachment counts as the
    /// remediation, attributed to the field manager that made it where the API says so.
    External,
    /// Add `node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`, `after` the node is
    /// seen NotReady; with `fence`, make sure the node is powered off (`power`) or refused by
    /// its storage (`storage`) first.
    #[serde(rename_all = "camelCase")]
    OutOfServiceTaint {
        #[serde(serialize_with = "duration::serialize")]
        after: Duration,
        fence: Fence,
        /// With `fence: storage`: the fence and the taint lifted this long after they were
        /// applied, while the fault lasts — a taint removed early (as by a controller acting
        /// on a stale taint, kubernetes#142331), which a platform follows by unfencing.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            serialize_with = "optional_duration::serialize"
        )]
        lift_after: Option<Duration>,
    },
    /// `kubectl delete pod --force --grace-period=0`, `after` the node is seen NotReady; with
    /// `fence`, fenced first, as for the taint.
    #[serde(rename_all = "camelCase")]
    ForceDeletePod {
        #[serde(serialize_with = "duration::serialize")]
        after: Duration,
        #[serde(default, skip_serializing_if = "Fence::is_none")]
        fence: Fence,
    },
    /// Delete the Node object, `after` the node is seen NotReady.
    #[serde(rename_all = "camelCase")]
    DeleteNode {
        #[serde(serialize_with = "duration::serialize")]
        after: Duration,
    },
    /// The by-hand recipe for a volume stuck on a dead node, `after` it is seen NotReady:
    /// force-delete the old pod (grace period 0), then delete the VolumeAttachments of the
    /// workload's volumes on that node; with `fence`, fenced first, as for the taint.
    #[serde(rename_all = "camelCase")]
    DeleteVolumeattachment {
        #[serde(serialize_with = "duration::serialize")]
        after: Duration,
        #[serde(default, skip_serializing_if = "Fence::is_none")]
        fence: Fence,
    },
}

impl RemediationSpec {
    /// Its kind, without its settings.
    pub fn kind(&self) -> crate::vocab::RemediationKind {
        use crate::vocab::RemediationKind as K;
        match self {
            RemediationSpec::None => K::None,
            RemediationSpec::External => K::External,
            RemediationSpec::OutOfServiceTaint { .. } => K::OutOfServiceTaint,
            RemediationSpec::ForceDeletePod { .. } => K::ForceDeletePod,
            RemediationSpec::DeleteNode { .. } => K::DeleteNode,
            RemediationSpec::DeleteVolumeattachment { .. } => K::DeleteVolumeattachment,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }
    /// The delay after NotReady, when there is an action at all.
    pub fn after(&self) -> Option<Duration> {
        match self {
            RemediationSpec::None | RemediationSpec::External => None,
            RemediationSpec::OutOfServiceTaint { after, .. }
            | RemediationSpec::ForceDeletePod { after, .. }
            | RemediationSpec::DeleteNode { after }
            | RemediationSpec::DeleteVolumeattachment { after, .. } => Some(*after),
        }
    }

    /// How long after it was applied a storage fence is lifted early (`liftAfter`), if so.
    pub fn lift_after(&self) -> Option<Duration> {
        match self {
            RemediationSpec::OutOfServiceTaint { lift_after, .. } => *lift_after,
            _ => None,
        }
    }

    /// How the node is fenced before the action (none for kinds that take no fence).
    pub fn fence(&self) -> Fence {
        match self {
            RemediationSpec::OutOfServiceTaint { fence, .. }
            | RemediationSpec::ForceDeletePod { fence, .. }
            | RemediationSpec::DeleteVolumeattachment { fence, .. } => *fence,
            _ => Fence::None,
        }
    }
}

/// How the dead node is fenced before the out-of-service taint declares it gone.
///
/// Written `fence: true` (or `power`), `fence: storage`, or `fence: false` / absent; written back
/// as `true`, `storage` or `false`, so run.json files of power-fenced runs read as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fence {
    /// Not fenced: the taint alone (the node may still be running and writing).
    #[default]
    None,
    /// Powered off hard (and confirmed off) through a backend that can power nodes off.
    Power,
    /// Refused by its storage: a csi-addons `NetworkFence` for the node's addresses, through the
    /// `NetworkFenceClass` of the workload's CSI driver, until `status.result: Succeeded`.
    Storage,
}

impl Fence {
    pub fn is_none(&self) -> bool {
        *self == Fence::None
    }

    /// As the spec writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Fence::None => "false",
            Fence::Power => "true",
            Fence::Storage => "storage",
        }
    }
}

impl Serialize for Fence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Fence::None => s.serialize_bool(false),
            Fence::Power => s.serialize_bool(true),
            Fence::Storage => s.serialize_str("storage"),
        }
    }
}

impl<'de> Deserialize<'de> for Fence {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Fence;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true (power), `power`, `storage` or false")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Fence, E> {
                Ok(if v { Fence::Power } else { Fence::None })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Fence, E> {
                match v {
                    "power" => Ok(Fence::Power),
                    "storage" => Ok(Fence::Storage),
                    _ => Err(E::invalid_value(
                        serde::de::Unexpected::Str(v),
                        &"true (power), `power`, `storage` or false",
                    )),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for Fence {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Fence".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "How the node is fenced before the taint: true or `power` (powered off), `storage` (a csi-addons NetworkFence), false (not fenced)",
            "anyOf": [{"type": "boolean"}, {"type": "string", "enum": ["power", "storage"]}]
        })
    }
}

/// A duration as experiment files write it: a whole number and a unit, units in descending
/// order, e.g. `30s`, `5m`, `1m30s` (for the schema; read by [`duration`]).
#[derive(schemars::JsonSchema)]
#[schemars(
    transparent,
    description = "A duration: a whole number and a unit (h, m, s, ms), units in descending order, e.g. 30s, 5m, 1m30s"
)]
pub struct DurationText(
    #[schemars(regex(pattern = r"^([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?$"))] pub String,
);

impl schemars::JsonSchema for RemediationSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RemediationSpec".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // As written: one flat mapping (see RawRemediation); which fields apply to which kind
        // is checked by the loader.
        <RawRemediation as schemars::JsonSchema>::json_schema(generator)
    }
}

/// The remediation as written: one flat mapping.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRemediation {
    kind: crate::vocab::RemediationKind,
    #[serde(default)]
    #[schemars(with = "Option<DurationText>")]
    after: Option<UserDuration>,
    #[serde(default)]
    fence: Option<Fence>,
    #[serde(default)]
    #[schemars(with = "Option<DurationText>")]
    lift_after: Option<UserDuration>,
}

impl From<RawRemediation> for RemediationSpec {
    fn from(raw: RawRemediation) -> Self {
        use crate::vocab::RemediationKind;
        let after = raw.after.map(|d| d.0).unwrap_or_default();
        match raw.kind {
            RemediationKind::None => RemediationSpec::None,
            RemediationKind::External => RemediationSpec::External,
            RemediationKind::OutOfServiceTaint => RemediationSpec::OutOfServiceTaint {
                after,
                fence: raw.fence.unwrap_or_default(),
                lift_after: raw.lift_after.map(|d| d.0),
            },
            RemediationKind::ForceDeletePod => RemediationSpec::ForceDeletePod {
                after,
                fence: raw.fence.unwrap_or_default(),
            },
            RemediationKind::DeleteNode => RemediationSpec::DeleteNode { after },
            RemediationKind::DeleteVolumeattachment => RemediationSpec::DeleteVolumeattachment {
                after,
                fence: raw.fence.unwrap_or_default(),
            },
        }
    }
}

/// A duration in the strict [`duration`] syntax, for optional fields.
#[derive(Debug, Clone, Copy)]
struct UserDuration(Duration);

impl<'de> Deserialize<'de> for UserDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        duration::deserialize(deserializer).map(UserDuration)
    }
}

/// Durations as experiments write them: one or more `<number><unit>` with no spaces, units in
/// decreasing order, each at most once: `30s`, `5m`, `1m30s`, `1h`, `500ms`, `0s`. Units: `h`,
/// `m`, `s`, `ms`, `us`, `ns`. Written back in the same form, so files and `run.json` round-trip.
pub mod duration {
    use serde::{Deserializer, Serializer};
    use std::time::Duration;

    /// What a user is told to write.
    pub const EXAMPLES: &str = "a duration such as 30s, 5m or 1m30s";

    const UNITS: [(&str, u128); 6] = [
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];

    /// Parses `1m30s` and friends; the error says what is wrong with the text.
    pub fn parse(text: &str) -> Result<Duration, String> {
        if text.is_empty() {
            return Err("an empty text is not a duration".to_string());
        }
        if text.contains(char::is_whitespace) {
            return Err(format!("`{text}` is not a duration: it contains a space"));
        }
        if text.contains('.') {
            return Err(format!(
                "`{text}` is not a duration: fractions are not supported (write 1s500ms, not 1.5s)"
            ));
        }
        let bytes = text.as_bytes();
        let mut i = 0;
        let mut total: u128 = 0;
        let mut last_rank: Option<usize> = None;
        while i < bytes.len() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return Err(format!(
                    "`{text}` is not a duration: expected a number at `{}`",
                    &text[start..]
                ));
            }
            let number: u128 = text[start..i]
                .parse()
                .map_err(|_| format!("`{text}` is too long a duration"))?;
            let unit_start = i;
            while i < bytes.len() && !bytes[i].is_ascii_digit() {
                i += 1;
            }
            let unit = &text[unit_start..i];
            if unit.is_empty() {
                return Err(format!(
                    "`{text}` is not a duration: the number {number} needs a unit (h, m, s or ms)"
                ));
            }
            let Some(rank) = UNITS.iter().position(|(u, _)| *u == unit) else {
                return Err(format!(
                    "`{text}` is not a duration: unknown unit `{unit}` (use h, m, s or ms)"
                ));
            };
            if last_rank.is_some_and(|r| r >= rank) {
                return Err(format!(
                    "`{text}` is not a duration: write the units largest first, each once"
                ));
            }
            last_rank = Some(rank);
            total = number
                .checked_mul(UNITS[rank].1)
                .and_then(|n| total.checked_add(n))
                .ok_or_else(|| format!("`{text}` is too long a duration"))?;
        }
        let secs = u64::try_from(total / 1_000_000_000)
            .map_err(|_| format!("`{text}` is too long a duration"))?;
        Ok(Duration::new(secs, (total % 1_000_000_000) as u32))
    }

    /// `1m30s`, `500ms`, `0s`: the form [`parse`] reads (the one definition is
    /// [`crate::units::fmt_duration`]).
    pub fn format(d: Duration) -> String {
        crate::units::fmt_duration(d)
    }

    pub fn serialize<S: Serializer>(d: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Duration;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(EXAMPLES)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
                parse(v).map_err(|_| E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }
        }
        deserializer.deserialize_str(Visit)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Timeouts {
    /// Workload Running and Ready before the fault.
    #[serde(default = "default_steady", with = "duration")]
    #[schemars(with = "DurationText")]
    pub steady_state: Duration,
    /// From the fault until the replacement pod is Ready; then the run stops observing.
    #[serde(default = "default_recovery", with = "duration")]
    #[schemars(with = "DurationText")]
    pub recovery: Duration,
    /// Healing: node back and Ready.
    #[serde(default = "default_heal", with = "duration")]
    #[schemars(with = "DurationText")]
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
        Timeouts {
            steady_state: default_steady(),
            recovery: default_recovery(),
            heal: default_heal(),
        }
    }
}

/// What must be true of a run. Each field set is one checked expectation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expectations {
    /// Whether the workload pod runs and is Ready again within `timeouts.recovery`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_running: Option<Bound>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_ready: Option<Bound>,
    /// The integrity checker's verdict on the ledger (workload `ledger` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<IntegrityExpectation>,
    /// The longest acceptable write outage: last acknowledged write before the fault to the
    /// first one after it (workload `ledger` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_outage: Option<Bound>,
    /// Phases that must (`seen`) or must not (`notSeen`) happen in the failover window, by
    /// name (e.g. `multi-attach-error`, `volume-detached`; see docs/results-schema.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<PhaseExpectation>,
}

/// `expect.phases`: which phases a run must show, and which it must not.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PhaseExpectation {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<crate::timeline::Phase>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_seen: Vec<crate::timeline::Phase>,
}

/// What the integrity checker must conclude.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IntegrityExpectation {
    /// No acknowledged write lost, no corruption, no second writer.
    Pass,
    /// Two writers wrote the ledger (the unsafe remediations must be caught doing this).
    SplitBrain,
    /// Acknowledged writes are missing.
    LostWrites,
    /// Any failure (lost writes, corruption or split brain).
    Fail,
}

impl IntegrityExpectation {
    pub fn as_str(&self) -> &'static str {
        match self {
            IntegrityExpectation::Pass => "pass",
            IntegrityExpectation::SplitBrain => "split-brain",
            IntegrityExpectation::LostWrites => "lost-writes",
            IntegrityExpectation::Fail => "fail",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Bound {
    #[serde(with = "duration")]
    #[schemars(with = "DurationText")]
    pub max: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Variant {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Replaces the experiment's workload for this variant (e.g. another storage class or
    /// access mode under the same fault).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<RemediationSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<Timeouts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expectations>,
}
