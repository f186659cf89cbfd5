//! The container backend: the node containers of a kind or k3d cluster through the Docker API. A power-off is a SIGKILL of the
//! node container (time zero from Docker's own `die` event); the other faults run commands
//! inside it (docker exec goes through the Docker daemon, so it works while the node is cut off
//! from the network).

use super::{
    heal_partition_script, partition_script, Effect, NodeControl, NodeError, NodeFault, PowerState,
};
use crate::cluster::{DockerNodes, NodeFlavor, Restart};
use crate::spec::FaultKind;
use crate::timeline::TimeZeroBasis;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::time::{Duration, SystemTime};

/// How long to wait for Docker's `die` event after a kill returned.
const DIE_EVENT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct DockerNodeControl {
    docker: DockerNodes,
    flavor: NodeFlavor,
}

impl DockerNodeControl {
    pub fn new(docker: DockerNodes, flavor: NodeFlavor) -> DockerNodeControl {
        DockerNodeControl { docker, flavor }
    }

    /// kind and k3d both name each node container after its node (the container's hostname,
    /// which the kubelet registers as the node name).
    fn container(node: &str) -> &str {
        node
    }

    /// A fault that needs systemd in the node (kind's), refused on k3s nodes with the reason.
    fn needs_systemd(&self, fault: &str) -> Result<(), NodeError> {
        if self.flavor.runs_systemd() {
            return Ok(());
        }
        Err(NodeError::Unsupported {
            backend: "docker",
            fault: format!("{fault}: it {}", crate::spec::K3D_REFUSAL),
        })
    }

    async fn apply_fault(&self, fault: &NodeFault) -> Result<Effect, NodeError> {
        let c = Self::container(&fault.node);
        match fault.kind {
            // A clean power-off: systemd in the node shuts down (logind tells the kubelet, which
            // terminates pods within its shutdownGracePeriod), then the container exits.
            FaultKind::NodeShutdown if fault.graceful => {
                self.needs_systemd("a graceful node-shutdown")?;
                // kind's `on-failure:1` would bring the node straight back (a poweroff inside a
                // container exits non-zero): a poweroff must stay off until the heal.
                self.docker.set_restart_policy(c, Restart::No).await?;
                self.docker
                    .exec(c, &["systemctl", "poweroff"], None)
                    .await?;
                Ok(Effect {
                    at: SystemTime::now(),
                    basis: TimeZeroBasis::CommandReturned,
                })
            }
            // Power off: SIGKILL the node container (no shutdown, no goodbye to the API server).
            FaultKind::NodeShutdown => {
                let requested = SystemTime::now();
                self.docker.kill(c).await?;
                let returned = SystemTime::now();
                match self
                    .docker
                    .die_time(c, requested, DIE_EVENT_TIMEOUT)
                    .await?
                {
                    Some(at) => Ok(Effect {
                        at,
                        basis: TimeZeroBasis::RuntimeDieEvent,
                    }),
                    None => {
                        tracing::warn!("no die event for {c} within {DIE_EVENT_TIMEOUT:?}");
                        Ok(Effect {
                            at: returned,
                            basis: TimeZeroBasis::RequestReturned,
                        })
                    }
                }
            }
            FaultKind::KubeletStop => {
                self.needs_systemd("kubelet-stop")?;
                self.docker
                    .exec(c, &["systemctl", "stop", "kubelet"], None)
                    .await?;
                Ok(Effect {
                    at: SystemTime::now(),
                    basis: TimeZeroBasis::CommandReturned,
                })
            }
            FaultKind::NodeFreeze => {
                self.docker.pause(c).await?;
                Ok(Effect {
                    at: SystemTime::now(),
                    basis: TimeZeroBasis::CommandReturned,
                })
            }
            FaultKind::NetworkPartition => {
                let script = partition_script(&fault.peers);
                self.docker.exec(c, &["sh", "-c", &script], None).await?;
                Ok(Effect {
                    at: SystemTime::now(),
                    basis: TimeZeroBasis::CommandReturned,
                })
            }
            FaultKind::ContainerKill => {
                let id = fault
                    .pod
                    .as_ref()
                    .and_then(|p| p.container_id.as_deref())
                    .and_then(|id| id.strip_prefix("containerd://"))
                    .ok_or_else(|| NodeError::Node {
                        node: fault.node.clone(),
                        detail: "container-kill needs the pod's containerd container id (its status has none)".into(),
                    })?;
                self.docker
                    .exec(
                        c,
                        &["ctr", "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id],
                        None,
                    )
                    .await?;
                Ok(Effect {
                    at: SystemTime::now(),
                    basis: TimeZeroBasis::CommandReturned,
                })
            }
            FaultKind::PodDelete => Err(NodeError::Unsupported {
                backend: "docker",
                fault: fault.kind.as_str().into(),
            }),
        }
    }

    async fn heal_fault(&self, kind: FaultKind, node: &str) -> Result<(), NodeError> {
        let c = Self::container(node);
        match kind {
            FaultKind::NodeShutdown => {
                // Back to the tool's restart policy (a graceful poweroff turned it off).
                self.docker
                    .set_restart_policy(c, self.flavor.restart_policy())
                    .await?;
                self.docker.start(c).await?
            }
            FaultKind::NodeFreeze => self.docker.unpause(c).await?,
            FaultKind::KubeletStop if self.flavor.runs_systemd() => {
                self.docker
                    .exec(c, &["systemctl", "start", "kubelet"], None)
                    .await?;
            }
            // Never applied there (see apply).
            FaultKind::KubeletStop => {}
            FaultKind::NetworkPartition => {
                self.docker
                    .exec(c, &["sh", "-c", &heal_partition_script()], None)
                    .await?;
            }
            // The kubelet restarts a killed container; a deleted pod is not undeleted.
            FaultKind::ContainerKill | FaultKind::PodDelete => {}
        }
        Ok(())
    }
}

impl NodeControl for DockerNodeControl {
    fn capability(&self) -> super::Capability {
        super::Capability::docker(self.flavor)
    }

    fn check_node<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move {
            // The tool's cluster label proves the container is a node of such a cluster.
            self.docker
                .cluster_of(Self::container(node), self.flavor)
                .await
                .map(|_| ())
                .map_err(|e| NodeError::Node {
                    node: node.into(),
                    detail: format!(
                        "not a {} node container this harness can reach: {e}",
                        self.flavor.as_str()
                    ),
                })
        }
        .boxed()
    }

    fn apply<'a>(&'a self, fault: &'a NodeFault) -> BoxFuture<'a, Result<Effect, NodeError>> {
        self.apply_fault(fault).boxed()
    }

    fn heal<'a>(&'a self, kind: FaultKind, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        self.heal_fault(kind, node).boxed()
    }

    fn power_off<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move {
            let c = Self::container(node);
            self.docker.kill(c).await?;
            // A frozen (paused) node gets the SIGKILL only once thawed; it runs no more of its
            // own code after that.
            self.docker.unpause(c).await?;
            Ok(())
        }
        .boxed()
    }

    fn power_state<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<PowerState, NodeError>> {
        async move {
            Ok(if self.docker.is_running(Self::container(node)).await? {
                PowerState::On
            } else {
                PowerState::Off
            })
        }
        .boxed()
    }
}
