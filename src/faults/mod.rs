//! Faults (effectful edge): the **node-control seam**. A fault acts on ONE node through a
//! [`NodeControl`] backend, which applies it, heals it, and powers nodes off and on. The runner
//! journals the heal — naming the backend — before it applies the fault, so `nodedown cleanup`
//! asks the same backend to undo it.
//!
//! Backends: [`DockerNodeControl`] for kind nodes (containers reached through the Docker API).
//! A node agent (a privileged pod on the target node) and power hooks (the user's commands) are
//! the next implementations; each says which faults it can carry out.

pub mod agent;
mod api;
mod docker;
pub mod hooks;
pub mod kwok;
pub mod partition;

pub use agent::AgentNodeControl;
pub use api::ApiPodControl;
pub use docker::DockerNodeControl;
pub use hooks::{HooksNodeControl, PowerHooks};
pub use kwok::KwokNodeControl;
pub use partition::{heal_partition_script, partition_script, PARTITION_CHAIN};

use crate::spec::FaultKind;
use crate::timeline::TimeZeroBasis;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

pub use crate::vocab::Backend;

/// What one backend can do: the faults it applies (and heals) and whether it shuts a node down
/// cleanly. Plain data, so a plan is checked against it before anything is touched (and
/// `--dry-run` can tell); every backend's [`NodeControl::capability`] is one of these.
#[derive(Debug, Clone, PartialEq)]
pub struct Capability {
    pub backend: Backend,
    pub faults: Vec<FaultKind>,
    /// A clean shutdown (`fault.graceful: true`), not only a hard power-off.
    pub graceful_shutdown: bool,
}

impl Capability {
    /// Node containers through the Docker API; kubelet-stop and a clean shutdown need a node
    /// that runs systemd (kind's, not k3d's).
    pub fn docker(flavor: crate::cluster::NodeFlavor) -> Capability {
        let mut faults = vec![
            FaultKind::NodeShutdown,
            FaultKind::NetworkPartition,
            FaultKind::NodeFreeze,
            FaultKind::ContainerKill,
        ];
        if flavor.runs_systemd() {
            faults.push(FaultKind::KubeletStop);
        }
        Capability {
            backend: Backend::Docker,
            faults,
            graceful_shutdown: flavor.runs_systemd(),
        }
    }

    /// The user's power commands: hard power-off and on.
    pub fn power_hooks() -> Capability {
        Capability {
            backend: Backend::PowerHooks,
            faults: vec![FaultKind::NodeShutdown],
            graceful_shutdown: false,
        }
    }

    /// The node agent: what a privileged pod on the node can do to it and come back from.
    pub fn agent() -> Capability {
        Capability {
            backend: Backend::Agent,
            faults: vec![FaultKind::KubeletStop, FaultKind::NetworkPartition],
            graceful_shutdown: false,
        }
    }

    /// The API server: a graceful pod delete.
    pub fn api() -> Capability {
        Capability {
            backend: Backend::Api,
            faults: vec![FaultKind::PodDelete],
            graceful_shutdown: false,
        }
    }

    /// kwok's simulated nodes: a node stops heartbeating (and is "powered off" for fencing).
    pub fn kwok() -> Capability {
        Capability {
            backend: Backend::Kwok,
            faults: vec![FaultKind::NodeShutdown],
            graceful_shutdown: false,
        }
    }

    /// Whether this backend can carry out `kind` (cleanly, when `graceful`).
    pub fn can(&self, kind: FaultKind, graceful: bool) -> bool {
        self.faults.contains(&kind) && (!graceful || self.graceful_shutdown)
    }

    /// Whether it can power a node off hard (what fencing needs).
    pub fn can_power_off(&self) -> bool {
        self.faults.contains(&FaultKind::NodeShutdown)
    }
}

/// What would provide a backend for `kind` where none can carry it out.
fn provider_of(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::NodeShutdown => {
            "give power hooks (--power-off, --power-on, --power-state), or run on a kind or k3d cluster nodedown reaches through Docker"
        }
        FaultKind::KubeletStop | FaultKind::NetworkPartition => {
            "give --node-control agent (the node agent), or run on a kind cluster nodedown reaches through Docker"
        }
        FaultKind::NodeFreeze | FaultKind::ContainerKill => {
            "only node containers reached through Docker can take it: run on a kind or k3d cluster nodedown creates or reaches"
        }
        FaultKind::PodDelete => "the API server does it: give a cluster nodedown can reach",
    }
}

/// Why no backend here can carry a fault (or the fence) out; each names what would provide one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoBackend {
    #[error("a graceful {} (`graceful: true`) needs a backend that shuts a node down cleanly, and only kind nodes reached through Docker do (power hooks power off hard)", .0.as_str())]
    Graceful(FaultKind),
    #[error("--node-control {} cannot carry out {}; {} can (drop --node-control or name it)", .chosen.as_str(), .kind.as_str(), .other.as_str())]
    NotTheChosen {
        chosen: Backend,
        kind: FaultKind,
        other: Backend,
    },
    #[error("no node-control backend here can carry out {}: {}", .0.as_str(), provider_of(*.0))]
    None(FaultKind),
    #[error("a fenced out-of-service taint (`fence: true`) powers the node off first, and no backend here can power nodes off: give power hooks (--power-off, --power-on, --power-state), or run on a kind or k3d cluster nodedown reaches through Docker")]
    NoFence,
}

/// The backend (an index into `caps`) that carries out a fault of `kind`: the one `only` names
/// (`--node-control`), else the first that can; or why none here can, naming what would
/// provide one. One rule for the check before any run and for the run itself.
pub fn choose(
    caps: &[Capability],
    only: Option<Backend>,
    kind: FaultKind,
    graceful: bool,
) -> Result<usize, NoBackend> {
    let allowed = |c: &&Capability| only.is_none_or(|b| c.backend == b);
    if let Some(i) = caps
        .iter()
        .position(|c| allowed(&c) && c.can(kind, graceful))
    {
        return Ok(i);
    }
    if graceful && caps.iter().filter(allowed).any(|c| c.can(kind, false)) {
        return Err(NoBackend::Graceful(kind));
    }
    if let Some(chosen) = only {
        if let Some(other) = caps.iter().find(|c| c.can(kind, graceful)) {
            return Err(NoBackend::NotTheChosen {
                chosen,
                kind,
                other: other.backend,
            });
        }
    }
    Err(NoBackend::None(kind))
}

/// The backend (an index into `caps`) that fences, i.e. powers a node off hard before the
/// out-of-service taint: the fault's own (`fault_backend`) when it can, else the first that can.
pub fn choose_fence(caps: &[Capability], fault_backend: usize) -> Result<usize, NoBackend> {
    if caps
        .get(fault_backend)
        .is_some_and(Capability::can_power_off)
    {
        return Ok(fault_backend);
    }
    caps.iter()
        .position(Capability::can_power_off)
        .ok_or(NoBackend::NoFence)
}

/// A fault bound to its target node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeFault {
    pub kind: FaultKind,
    pub node: String,
    /// For a partition: the addresses to cut the node off from (the other nodes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<String>,
    /// How long the fault may last at most: a backend that can (the agent) undoes it by itself
    /// then, even when the harness is gone.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::spec::optional_duration"
    )]
    pub lease: Option<std::time::Duration>,
    /// For a power-off: a clean shutdown (`systemctl poweroff` in the node) instead of a hard one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub graceful: bool,
    /// For a pod fault: the pod (and its main container) acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodTarget>,
}

/// The workload pod a pod fault acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodTarget {
    pub namespace: String,
    pub name: String,
    /// The main container's runtime id (`containerd://…` as the pod status gives it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
}

/// When a fault took effect, and what that instant was taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    pub at: SystemTime,
    pub basis: TimeZeroBasis,
}

/// Whether a node's machine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerState {
    On,
    Off,
}

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("the {backend} backend cannot carry out {fault}")]
    Unsupported {
        backend: &'static str,
        fault: String,
    },
    #[error("node {node}: {detail}")]
    Node { node: String, detail: String },
}

/// Control over the nodes of one cluster: one job, one fault at a time, each with its heal.
pub trait NodeControl: Send + Sync {
    /// What this backend can do.
    fn capability(&self) -> Capability;
    fn backend(&self) -> Backend {
        self.capability().backend
    }
    /// Whether this backend can apply (and heal) `kind`.
    fn supports(&self, kind: FaultKind) -> bool {
        self.capability().faults.contains(&kind)
    }
    /// Checks that `node` is one this backend can reach, before anything is journaled.
    fn check_node<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>>;
    /// Applies the fault; returns when it is in effect, with the best evidence of when.
    fn apply<'a>(&'a self, fault: &'a NodeFault) -> BoxFuture<'a, Result<Effect, NodeError>>;
    /// Undoes a fault of `kind` on `node` (idempotent: harmless when it is not in place).
    fn heal<'a>(&'a self, kind: FaultKind, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>>;
    /// Hard power-off (fencing); harmless when already off.
    fn power_off<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>>;
    fn power_state<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<PowerState, NodeError>>;
    /// Whether this backend can shut a node down cleanly (`graceful: true`), not only hard.
    fn supports_graceful_shutdown(&self) -> bool {
        self.capability().graceful_shutdown
    }
}

/// Fencing: power the node off and confirm it is off (polling `power_state` for up to 5 s).
pub async fn fence(control: &dyn NodeControl, node: &str) -> Result<(), NodeError> {
    control.power_off(node).await?;
    for _ in 0..50 {
        if control.power_state(node).await? == PowerState::Off {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(NodeError::Node {
        node: node.into(),
        detail: "still powered on 5s after the power-off (fence not confirmed)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::NodeFlavor;

    #[test]
    fn the_backend_is_chosen_by_capability_and_refusals_name_the_fix() {
        use FaultKind::*;
        // README's "Running on your own cluster" with the agent only: API and agent.
        let agent_only = [Capability::api(), Capability::agent()];
        assert_eq!(choose(&agent_only, None, KubeletStop, false), Ok(1));
        assert_eq!(choose(&agent_only, None, PodDelete, false), Ok(0));
        let e = choose(&agent_only, None, NodeShutdown, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("give power hooks (--power-off"), "{e}");
        let e = choose_fence(&agent_only, 1).unwrap_err().to_string();
        assert!(
            e.contains("`fence: true`") && e.contains("--power-off"),
            "{e}"
        );
        // With power hooks: a hard shutdown and the fence go through them, a clean one cannot.
        let hooks = [
            Capability::power_hooks(),
            Capability::api(),
            Capability::agent(),
        ];
        assert_eq!(choose(&hooks, None, NodeShutdown, false), Ok(0));
        assert_eq!(choose_fence(&hooks, 2), Ok(0));
        let e = choose(&hooks, None, NodeShutdown, true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("graceful node-shutdown"), "{e}");
        // kind through Docker: everything, a fence through the fault's own backend.
        let kind = [
            Capability::docker(NodeFlavor::Kind),
            Capability::api(),
            Capability::agent(),
        ];
        for k in [
            NodeShutdown,
            KubeletStop,
            NetworkPartition,
            NodeFreeze,
            ContainerKill,
        ] {
            assert_eq!(choose(&kind, None, k, false), Ok(0), "{k:?}");
        }
        assert_eq!(choose(&kind, None, NodeShutdown, true), Ok(0));
        assert_eq!(
            choose(&kind, Some(Backend::Agent), KubeletStop, false),
            Ok(2)
        );
        let e = choose(&kind, Some(Backend::Agent), NodeFreeze, false).unwrap_err();
        assert_eq!(
            e,
            NoBackend::NotTheChosen {
                chosen: Backend::Agent,
                kind: NodeFreeze,
                other: Backend::Docker
            }
        );
        assert!(
            e.to_string()
                .contains("--node-control agent cannot carry out node-freeze; docker can"),
            "{e}"
        );
        // k3d nodes run no systemd: kubelet-stop goes to the agent, a clean shutdown nowhere.
        let k3d = [
            Capability::docker(NodeFlavor::K3d),
            Capability::api(),
            Capability::agent(),
        ];
        assert_eq!(choose(&k3d, None, KubeletStop, false), Ok(2));
        assert!(choose(&k3d, None, NodeShutdown, true).is_err());
    }
}
