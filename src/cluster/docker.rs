//! Node containers through the Docker API.

use super::ClusterError;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::query_parameters::{KillContainerOptions, ListContainersOptions};
use futures::StreamExt;
use std::collections::HashMap;
use tokio::io::AsyncWriteExt;

/// The label kind puts on every node container of a cluster.
pub const KIND_CLUSTER_LABEL: &str = "io.x-k8s.kind.cluster";
/// The label k3d puts on every container of a cluster (nodes, its load balancer, registry and
/// tools containers alike).
pub const K3D_CLUSTER_LABEL: &str = "k3d.cluster";
/// The label k3d puts on a container to say what it is: `server` and `agent` are nodes.
pub const K3D_ROLE_LABEL: &str = "k3d.role";

/// Which tool made a cluster of node containers; what nodedown needs to know about its
/// containers. Pure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeFlavor {
    /// kind: one container per node, named after the node, running systemd (kubelet.service).
    Kind,
    /// k3d: one container per k3s node (`k3d-<cluster>-server-N`, `k3d-<cluster>-agent-N`,
    /// also the node's name), k3s as the container's main process (no systemd: the kubelet runs
    /// inside k3s), restart policy `unless-stopped`; plus non-node containers (load balancer,
    /// registry, tools).
    K3d,
}

/// A container's restart policy, as the tool that made the cluster sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    No,
    OnFailure(i64),
    UnlessStopped,
}

impl NodeFlavor {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeFlavor::Kind => "kind",
            NodeFlavor::K3d => "k3d",
        }
    }

    /// The label naming the cluster a container belongs to.
    pub fn cluster_label(self) -> &'static str {
        match self {
            NodeFlavor::Kind => KIND_CLUSTER_LABEL,
            NodeFlavor::K3d => K3D_CLUSTER_LABEL,
        }
    }

    /// Whether a container of the cluster (by its labels) is a Kubernetes node.
    pub fn is_node(self, labels: &HashMap<String, String>) -> bool {
        match self {
            NodeFlavor::Kind => true,
            NodeFlavor::K3d => matches!(
                labels.get(K3D_ROLE_LABEL).map(String::as_str),
                Some("server" | "agent")
            ),
        }
    }

    /// The restart policy the tool gives node containers (put back after a clean poweroff,
    /// which turns it off).
    pub fn restart_policy(self) -> Restart {
        match self {
            NodeFlavor::Kind => Restart::OnFailure(1),
            NodeFlavor::K3d => Restart::UnlessStopped,
        }
    }

    /// Whether the node runs systemd with the kubelet as its own unit: what a clean poweroff
    /// (logind tells the kubelet) and `kubelet-stop` (`systemctl stop kubelet`) need.
    pub fn runs_systemd(self) -> bool {
        self == NodeFlavor::Kind
    }
}

#[derive(Clone)]
pub struct DockerNodes {
    docker: bollard::Docker,
}

impl DockerNodes {
    pub fn connect() -> Result<DockerNodes, ClusterError> {
        Ok(DockerNodes {
            docker: bollard::Docker::connect_with_local_defaults()?,
        })
    }

    pub async fn ping(&self) -> Result<(), ClusterError> {
        self.docker.ping().await?;
        Ok(())
    }

    pub async fn image_exists(&self, image: &str) -> Result<bool, ClusterError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Names of the node containers of the `flavor` cluster `cluster` (running or not).
    pub async fn cluster_containers(
        &self,
        cluster: &str,
        flavor: NodeFlavor,
    ) -> Result<Vec<String>, ClusterError> {
        let mut filters = HashMap::new();
        filters.insert(
            "label".to_string(),
            vec![format!("{}={cluster}", flavor.cluster_label())],
        );
        let list = self
            .docker
            .list_containers(Some(ListContainersOptions {
                all: true,
                filters: Some(filters),
                ..Default::default()
            }))
            .await?;
        let mut names: Vec<String> = list
            .into_iter()
            .filter(|c| c.labels.as_ref().is_some_and(|l| flavor.is_node(l)))
            .filter_map(|c| c.names.and_then(|n| n.into_iter().next()))
            .map(|n| n.trim_start_matches('/').to_string())
            .collect();
        names.sort();
        Ok(names)
    }

    /// The container's full id (what its processes' cgroup paths name).
    pub async fn container_id(&self, container: &str) -> Result<Option<String>, ClusterError> {
        Ok(self.docker.inspect_container(container, None).await?.id)
    }

    pub async fn is_running(&self, container: &str) -> Result<bool, ClusterError> {
        let info = self.docker.inspect_container(container, None).await?;
        Ok(info.state.and_then(|s| s.running).unwrap_or(false))
    }

    /// Hard power-off: SIGKILL to the node container's init.
    pub async fn kill(&self, container: &str) -> Result<(), ClusterError> {
        match self
            .docker
            .kill_container(
                container,
                Some(KillContainerOptions {
                    signal: "SIGKILL".into(),
                }),
            )
            .await
        {
            Ok(()) => Ok(()),
            // 409: not running (already off) — the state we want.
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Freezes every process of the container (cgroup freezer): the node is hung, not dead.
    pub async fn pause(&self, container: &str) -> Result<(), ClusterError> {
        self.docker.pause_container(container).await?;
        Ok(())
    }

    /// Thaws a paused container; harmless when it is not paused (or not running).
    pub async fn unpause(&self, container: &str) -> Result<(), ClusterError> {
        match self.docker.unpause_container(container).await {
            Ok(()) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409 | 500,
                message,
            }) if message.contains("not paused") || message.contains("is not running") => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets the container's restart policy (`Restart::No`: a clean poweroff stays off).
    pub async fn set_restart_policy(
        &self,
        container: &str,
        restart: Restart,
    ) -> Result<(), ClusterError> {
        use bollard::models::{ContainerUpdateBody, RestartPolicy, RestartPolicyNameEnum};
        let (name, retries) = match restart {
            Restart::No => (RestartPolicyNameEnum::NO, None),
            Restart::OnFailure(n) => (RestartPolicyNameEnum::ON_FAILURE, Some(n)),
            Restart::UnlessStopped => (RestartPolicyNameEnum::UNLESS_STOPPED, None),
        };
        self.docker
            .update_container(
                container,
                ContainerUpdateBody {
                    restart_policy: Some(RestartPolicy {
                        name: Some(name),
                        maximum_retry_count: retries,
                    }),
                    ..Default::default()
                },
            )
            .await?;
        Ok(())
    }

    pub async fn start(&self, container: &str) -> Result<(), ClusterError> {
        match self.docker.start_container(container, None).await {
            Ok(()) => Ok(()),
            // 304: already started.
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 304, ..
            }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Runs `cmd` in `container` (streaming the file `stdin` to it when given); fails on a
    /// non-zero exit.
    pub async fn exec(
        &self,
        container: &str,
        cmd: &[&str],
        stdin: Option<&std::path::Path>,
    ) -> Result<String, ClusterError> {
        let exec = self
            .docker
            .create_exec(
                container,
                CreateExecOptions {
                    cmd: Some(cmd.to_vec()),
                    attach_stdin: Some(stdin.is_some()),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    ..Default::default()
                },
            )
            .await?;
        let mut text = String::new();
        if let StartExecResults::Attached {
            mut output,
            mut input,
        } = self
            .docker
            .start_exec(
                &exec.id,
                Some(StartExecOptions {
                    detach: false,
                    ..Default::default()
                }),
            )
            .await?
        {
            let writer = async move {
                if let Some(path) = stdin {
                    let mut file = tokio::fs::File::open(path).await?;
                    tokio::io::copy(&mut file, &mut input).await?;
                }
                input.shutdown().await
            };
            let reader = async {
                while let Some(chunk) = output.next().await {
                    text.push_str(&chunk?.to_string());
                }
                Ok::<(), bollard::errors::Error>(())
            };
            let (w, r) = tokio::join!(writer, reader);
            r?;
            w?;
        }
        let code = self
            .docker
            .inspect_exec(&exec.id)
            .await?
            .exit_code
            .unwrap_or(-1);
        if code != 0 {
            return Err(ClusterError::Exec {
                container: container.to_string(),
                command: cmd.join(" "),
                code,
                output: text.trim().chars().take(2000).collect(),
            });
        }
        Ok(text)
    }
}

impl DockerNodes {
    /// The first `die` event of `container` at or after `not_before`, as Docker recorded it
    /// (`timeNano`), waiting at most `timeout`. Events are asked for from a second before
    /// `not_before`, so a death that happened before this call is still found.
    pub async fn die_time(
        &self,
        container: &str,
        not_before: std::time::SystemTime,
        timeout: std::time::Duration,
    ) -> Result<Option<std::time::SystemTime>, ClusterError> {
        use std::time::UNIX_EPOCH;
        let since = not_before
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs()
            .saturating_sub(1);
        let mut filters = HashMap::new();
        filters.insert("type".to_string(), vec!["container".to_string()]);
        filters.insert("container".to_string(), vec![container.to_string()]);
        filters.insert("event".to_string(), vec!["die".to_string()]);
        let stream = self
            .docker
            .events(Some(bollard::query_parameters::EventsOptions {
                since: Some(since.to_string()),
                until: None,
                filters: Some(filters),
            }));
        futures::pin_mut!(stream);
        let found = tokio::time::timeout(timeout, async {
            while let Some(event) = stream.next().await {
                if let Some(at) = death_of(&event?, container, not_before) {
                    return Ok(Some(at));
                }
            }
            Ok::<_, ClusterError>(None)
        })
        .await;
        match found {
            Ok(r) => r,
            Err(_) => Ok(None),
        }
    }

    /// The cluster a node container belongs to (its flavor's cluster label), if it is a node.
    pub async fn cluster_of(
        &self,
        container: &str,
        flavor: NodeFlavor,
    ) -> Result<String, ClusterError> {
        let info = self.docker.inspect_container(container, None).await?;
        let labels = info.config.and_then(|c| c.labels).unwrap_or_default();
        match labels.get(flavor.cluster_label()) {
            Some(cluster) if flavor.is_node(&labels) => Ok(cluster.clone()),
            _ => Err(ClusterError::NoContainer {
                node: container.to_string(),
                cluster: format!("(any {} cluster)", flavor.as_str()),
            }),
        }
    }
}

/// When `event` says the container named `container` died, if it did at `not_before` or later
/// (pure). Docker's `container` filter matches names by prefix — `nodedown-worker` also lets
/// `nodedown-worker2`…`6` through —, so the name is checked here, exactly: another node's
/// death a moment later (a run in another lane) must never be this node's time zero.
pub(crate) fn death_of(
    event: &bollard::models::EventMessage,
    container: &str,
    not_before: std::time::SystemTime,
) -> Option<std::time::SystemTime> {
    use std::time::{Duration, UNIX_EPOCH};
    let actor = event.actor.as_ref()?;
    let name = actor.attributes.as_ref().and_then(|a| a.get("name"));
    if name.map(String::as_str) != Some(container) && actor.id.as_deref() != Some(container) {
        return None;
    }
    let nanos = event.time_nano.and_then(|n| u64::try_from(n).ok())?;
    let at = UNIX_EPOCH + Duration::from_nanos(nanos);
    (at >= not_before).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic die events (the fields Docker's event stream carries for one: the container's
    /// id, its name among the attributes, the time in nanoseconds).
    fn died(name: &str, id: &str, nanos: i64) -> bollard::models::EventMessage {
        bollard::models::EventMessage {
            actor: Some(bollard::models::EventActor {
                id: Some(id.into()),
                attributes: Some(labels(&[("name", name)])),
            }),
            time_nano: Some(nanos),
            ..Default::default()
        }
    }

    #[test]
    fn a_node_dies_by_its_own_name_never_by_another_that_shares_its_prefix() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        let requested = at(1_000);
        // nodedown-worker3 dies 125 ms before nodedown-worker: Docker's prefix filter lets it
        // through for `nodedown-worker`, and it is not its death.
        let other = died("nodedown-worker3", "b2", 1_000_000_000 + 10_000_000);
        let own = died("nodedown-worker", "a1", 1_000_000_000 + 135_000_000);
        assert_eq!(death_of(&other, "nodedown-worker", requested), None);
        assert_eq!(
            death_of(&own, "nodedown-worker", requested),
            Some(at(1_135))
        );
        // Before the kill was asked for: an earlier death, not this one.
        let earlier = died("nodedown-worker", "a1", 999_000_000);
        assert_eq!(death_of(&earlier, "nodedown-worker", requested), None);
        // Named by its id.
        assert_eq!(death_of(&own, "a1", requested), Some(at(1_135)));
    }

    fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn k3d_counts_servers_and_agents_as_nodes_and_nothing_else() {
        let k3d = NodeFlavor::K3d;
        for role in ["server", "agent"] {
            assert!(k3d.is_node(&labels(&[("k3d.cluster", "x"), ("k3d.role", role)])));
        }
        for role in ["loadbalancer", "registry", "noRole"] {
            assert!(!k3d.is_node(&labels(&[("k3d.cluster", "x"), ("k3d.role", role)])));
        }
        assert!(!k3d.is_node(&labels(&[("k3d.cluster", "x")])));
        assert!(NodeFlavor::Kind.is_node(&labels(&[(KIND_CLUSTER_LABEL, "x")])));
        assert_eq!(k3d.restart_policy(), Restart::UnlessStopped);
        assert_eq!(NodeFlavor::Kind.restart_policy(), Restart::OnFailure(1));
        assert!(!k3d.runs_systemd() && NodeFlavor::Kind.runs_systemd());
    }
}
