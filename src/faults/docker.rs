//! The kind backend: node containers through the Docker API. A power-off is a SIGKILL of the
//! node container (time zero from Docker's own `die` event); the other faults run commands
//! inside it (docker exec goes through the Docker daemon, so it works while the node is cut off
//! from the network).

use super::{
    heal_partition_script, partition_script, Backend, Effect, NodeControl, NodeError, NodeFault,
    PowerState,
};
use crate::cluster::DockerNodes;
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
}

impl DockerNodeControl {
    pub fn new(docker: DockerNodes) -> DockerNodeControl {
        DockerNodeControl { docker }
    }

    /// kind names each node container after its node.
    fn container(node: &str) -> &str {
        node
    }

    async fn apply_fault(&self, fault: &NodeFault) -> Result<Effect, NodeError> {
        let c = Self::container(&fault.node);
        match fault.kind {
            // A clean power-off: systemd in the node shuts down (logind tells the kubelet, which
            // terminates pods within its shutdownGracePeriod), then the container exits.
            FaultKind::NodeShutdown if fault.graceful => {
                // kind's `on-failure:1` would bring the node straight back (a poweroff inside a
                // container exits non-zero): a poweroff must stay off until the heal.
                self.docker.set_restart_on_failure(c, None).await?;
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
                // Back to kind's restart policy (a graceful poweroff turned it off).
                self.docker.set_restart_on_failure(c, Some(1)).await?;
                self.docker.start(c).await?
            }
            FaultKind::NodeFreeze => self.docker.unpause(c).await?,
            FaultKind::KubeletStop => {
                self.docker
                    .exec(c, &["systemctl", "start", "kubelet"], None)
                    .await?;
            }
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
    fn backend(&self) -> Backend {
        Backend::Docker
    }

    fn supports_graceful_shutdown(&self) -> bool {
        true
    }

    fn supports(&self, kind: FaultKind) -> bool {
        matches!(
            kind,
            FaultKind::NodeShutdown
                | FaultKind::KubeletStop
                | FaultKind::NetworkPartition
                | FaultKind::NodeFreeze
                | FaultKind::ContainerKill
        )
    }

    fn check_node<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move {
            // The kind label proves the container is a node of a kind cluster.
            self.docker
                .cluster_of(Self::container(node))
                .await
                .map(|_| ())
                .map_err(|e| NodeError::Node {
                    node: node.into(),
                    detail: format!("not a kind node container this harness can reach: {e}"),
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
