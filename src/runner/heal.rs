//! Healing: replays a journal's pending undo actions, in heal order. Used at the end of every
//! run, on every exit path (error, panic, signal), and by `nodedown cleanup`.

use crate::faults::NodeControl;
use crate::journal::{Journal, Track, Undo};
use crate::observe::Recorder;
use crate::remediation::{self, is_control_plane, node_is_ready};
use crate::timeline::EventKind;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client};
use std::sync::Arc;
use std::time::Duration;

/// How long a run namespace may take to disappear.
const NAMESPACE_TIMEOUT: Duration = Duration::from_secs(120);

pub struct Healer {
    pub client: Client,
    /// The node-control backends this harness can reach; a journaled fault is healed by the
    /// backend that applied it.
    pub controls: Vec<Arc<dyn NodeControl>>,
    /// How long a node may take to be Ready again.
    pub node_timeout: Duration,
}

/// A journaled action that could not be undone (`undo`: the action as journaled).
#[derive(Debug, thiserror::Error)]
#[error("{undo}: {cause}")]
pub struct HealError {
    pub undo: String,
    pub cause: HealFailure,
}

/// Why an undo failed, or why the runs' namespaces did not go.
#[derive(Debug, thiserror::Error)]
pub enum HealFailure {
    /// The journal could not be read (the file, or a line of it).
    #[error("{0}")]
    Journal(String),
    #[error(
        "the fault was applied through the {backend} backend, which this invocation cannot reach"
    )]
    Unreachable { backend: &'static str },
    #[error(transparent)]
    Node(#[from] crate::faults::NodeError),
    #[error("node {node} not Ready within {}", crate::units::fmt_duration(*.timeout))]
    NotReady { node: String, timeout: Duration },
    #[error(transparent)]
    Remediation(#[from] remediation::RemediationError),
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    #[error("{left} pod(s) of namespace {namespace} still there after {}s", NAMESPACE_TIMEOUT.as_secs())]
    PodsLeft { left: usize, namespace: String },
    #[error("namespaces still terminating after {}s: {}", NAMESPACE_TIMEOUT.as_secs(), .0.join(", "))]
    NamespacesLeft(Vec<String>),
    #[error(transparent)]
    Bundle(#[from] crate::cluster::bundle::BundleError),
    /// The storage fence was not lifted (it stays, so no forgotten writer gets through).
    #[error("NetworkFence {name} kept: {why}")]
    FenceKept { name: String, why: String },
    #[error("remove {}: {source}", .path.display())]
    Remove {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

impl Healer {
    /// Heals everything pending in `journal`; records heal events when a recorder is given.
    /// Keeps going after a failure. Returns how many actions were healed and every failure.
    /// The nodes and the run's objects heal at the same time (each track in heal order): the
    /// run's pods stop and go while the faulted node comes back. A pod left on that node goes
    /// once its kubelet is back, which the object track waits for anyway.
    pub async fn heal_all(
        &self,
        journal: &Journal,
        recorder: Option<&Recorder>,
    ) -> (usize, Vec<HealError>) {
        let pending = match journal.pending() {
            Ok(p) => p,
            Err(e) => {
                return (
                    0,
                    vec![HealError {
                        undo: journal.path().display().to_string(),
                        cause: HealFailure::Journal(e.to_string()),
                    }],
                );
            }
        };
        // A line that cannot be read is a failure of the heal, whatever it recorded.
        let mut errors: Vec<HealError> = pending
            .unreadable
            .iter()
            .map(|bad| {
                let detail = crate::journal::describe_unreadable(bad);
                tracing::error!("{}: {detail}", journal.path().display());
                HealError {
                    undo: "journal".into(),
                    cause: HealFailure::Journal(detail),
                }
            })
            .collect();
        let (nodes, objects): (Vec<_>, Vec<_>) = pending
            .actions
            .into_iter()
            .partition(|(_, u)| u.track() == Track::Nodes);
        let ((healed_nodes, node_errors), (healed_objects, object_errors)) = tokio::join!(
            self.heal_track(journal, nodes, recorder),
            self.heal_track(journal, objects, recorder)
        );
        errors.extend(node_errors);
        errors.extend(object_errors);
        (healed_nodes + healed_objects, errors)
    }

    /// Heals one track's actions, one after the other, in heal order; keeps going after a
    /// failure.
    async fn heal_track(
        &self,
        journal: &Journal,
        actions: Vec<(u64, Undo)>,
        recorder: Option<&Recorder>,
    ) -> (usize, Vec<HealError>) {
        let mut errors = Vec::new();
        let mut healed = 0;
        for (id, undo) in actions {
            match self.heal(&undo, recorder).await {
                Ok(()) => {
                    healed += 1;
                    if let Err(e) = journal.healed(id) {
                        tracing::warn!("cannot mark journal entry {id} healed: {e}");
                    }
                }
                Err(cause) => {
                    tracing::error!("heal {undo:?} failed: {cause}");
                    errors.push(HealError {
                        undo: format!("{undo:?}"),
                        cause,
                    });
                }
            }
        }
        (healed, errors)
    }

    async fn heal(&self, undo: &Undo, recorder: Option<&Recorder>) -> Result<(), HealFailure> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let note = |what: EventKind| {
            if let Some(r) = recorder {
                r.record(what);
            }
        };
        match undo {
            Undo::HealFault {
                backend,
                fault,
                node,
            } => {
                let control = self
                    .controls
                    .iter()
                    .find(|c| c.backend() == *backend)
                    .ok_or(HealFailure::Unreachable {
                        backend: backend.as_str(),
                    })?;
                control.heal(*fault, node).await?;
                note(EventKind::Note {
                    message: format!(
                        "{} undone on {node} through {}; waiting for it Ready",
                        fault.as_str(),
                        backend.as_str()
                    ),
                });
                wait_node_ready(&nodes, node, self.node_timeout).await?;
                note(EventKind::FaultHealed {
                    fault: *fault,
                    node: node.clone(),
                });
                Ok(())
            }
            Undo::RestoreNode { node, object } => {
                // The kubelet re-registers its node when it starts; recreate only if it did not.
                let deadline = tokio::time::Instant::now() + self.node_timeout;
                loop {
                    if remediation::get_node(&nodes, node).await?.is_some() {
                        return Ok(());
                    }
                    if tokio::time::Instant::now() >= deadline {
                        remediation::recreate_node(&nodes, object).await?;
                        note(EventKind::RemediationUndone {
                            remediation: "delete-node".into(),
                            node: node.clone(),
                            detail: "Node object recreated from the journal".into(),
                        });
                        return Ok(());
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            Undo::DeleteNetworkFence {
                name,
                node,
                namespace,
            } => {
                // Lift the fence only once nothing of the run can write through it: the node
                // back, and its kubelet running no pod of the run (a writer the API forgot while
                // the node was cut off runs until its kubelet hears of it).
                wait_node_ready(&nodes, node, self.node_timeout).await?;
                let deadline = tokio::time::Instant::now() + self.node_timeout;
                loop {
                    match remediation::fence::kubelet_pods_of(&self.client, node, namespace).await {
                        Ok(0) => break,
                        Ok(n) if tokio::time::Instant::now() >= deadline => {
                            return Err(HealFailure::FenceKept {
                                name: name.clone(),
                                why: format!(
                                    "the kubelet of {node} still runs {n} pod(s) of {namespace}"
                                ),
                            })
                        }
                        Err(e) if tokio::time::Instant::now() >= deadline => {
                            return Err(HealFailure::FenceKept {
                                name: name.clone(),
                                why: e.to_string(),
                            })
                        }
                        _ => tokio::time::sleep(Duration::from_millis(500)).await,
                    }
                }
                let why = "deleted; its finalizer unfenced the node";
                match remediation::fence::lift(&self.client, name, node, why).await {
                    Ok(unfenced) => {
                        if let Some(e) = unfenced {
                            note(e);
                        }
                        Ok(())
                    }
                    Err(e) => Err(HealFailure::FenceKept {
                        name: name.clone(),
                        why: e.to_string(),
                    }),
                }
            }
            Undo::RemoveTaint { node, key } => {
                if remediation::remove_taint(&nodes, node, key).await? {
                    note(EventKind::RemediationUndone {
                        remediation: "out-of-service-taint".into(),
                        node: node.clone(),
                        detail: format!("taint {key} removed"),
                    });
                }
                Ok(())
            }
            Undo::DeleteNamespace { name } => {
                // Its pods must stop writing before their storage directory is removed (a later
                // undo). The run is over and its evidence collected, so they get a 1 s grace
                // period (nodedown's workload ignores SIGTERM as PID 1: its default 10 s grace
                // was most of every heal). Their controllers go first so none comes back; a pod
                // object disappears once the kubelet has stopped its containers.
                let c = || self.client.clone();
                let background = DeleteParams::default();
                delete_all::<Deployment>(c(), name, &background).await?;
                delete_all::<ReplicaSet>(c(), name, &background).await?;
                delete_all::<StatefulSet>(c(), name, &background).await?;
                let quick = DeleteParams {
                    grace_period_seconds: Some(1),
                    ..Default::default()
                };
                delete_all::<Pod>(c(), name, &quick).await?;
                let poll = Duration::from_millis(250);
                match crate::cluster::wait_no_pods(&c(), name, NAMESPACE_TIMEOUT, poll).await {
                    Ok(()) => {}
                    Err(crate::cluster::PodsNotGone::Left(left)) => {
                        return Err(HealFailure::PodsLeft {
                            left,
                            namespace: name.clone(),
                        })
                    }
                    Err(crate::cluster::PodsNotGone::Api(source)) => {
                        return Err(HealFailure::Api {
                            what: format!("list the pods of namespace {name}"),
                            source,
                        })
                    }
                }
                // Its claims are deleted before the namespace: with no pod left their protection
                // finalizer goes at once, whereas claims left to the namespace controller made
                // it wait a pass for them (an otherwise empty namespace took 10.8 s to go with a
                // claim, 5.9 s with the claim deleted first). The namespace itself finishes
                // terminating on its own; the next run uses a namespace of its own, and the
                // invocation waits for all of them once at its end (`wait_namespaces_gone`).
                delete_all::<PersistentVolumeClaim>(c(), name, &background).await?;
                let api: Api<Namespace> = Api::all(c());
                ignore_missing(
                    api.delete(name, &DeleteParams::default()).await.map(|_| ()),
                    format!("delete namespace {name}"),
                )
            }
            Undo::DeletePersistentVolume { name } => {
                let api: Api<PersistentVolume> = Api::all(self.client.clone());
                ignore_missing(
                    api.delete(name, &DeleteParams::default()).await.map(|_| ()),
                    format!("delete PersistentVolume {name}"),
                )
            }
            Undo::DeleteStorageClass { name } => {
                let api: Api<k8s_openapi::api::storage::v1::StorageClass> =
                    Api::all(self.client.clone());
                ignore_missing(
                    api.delete(name, &DeleteParams::default()).await.map(|_| ()),
                    format!("delete StorageClass {name}"),
                )
            }
            Undo::DeleteBundle { namespace, objects } => {
                Ok(crate::cluster::bundle::delete(&self.client, namespace, objects).await?)
            }
            Undo::RemoveDir { path } => match std::fs::remove_dir_all(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(source) => Err(HealFailure::Remove {
                    path: path.clone(),
                    source,
                }),
            },
        }
    }
}

/// Deletes every object of kind `K` in namespace `ns` (none there, or no namespace: fine).
async fn delete_all<K>(client: Client, ns: &str, params: &DeleteParams) -> Result<(), HealFailure>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    ignore_missing(
        Api::<K>::namespaced(client, ns)
            .delete_collection(params, &ListParams::default())
            .await
            .map(|_| ()),
        format!(
            "delete the {}s of namespace {ns}",
            K::kind(&Default::default())
        ),
    )
}

/// A deletion's result, an object already gone counting as deleted (`what`: the deletion).
fn ignore_missing(r: Result<(), kube::Error>, what: String) -> Result<(), HealFailure> {
    match r {
        Ok(()) => Ok(()),
        Err(e) if remediation::is_not_found(&e) => Ok(()),
        Err(source) => Err(HealFailure::Api { what, source }),
    }
}

/// Which namespaces an invocation (or a cleanup) waits for at its end: its own, never those of
/// another invocation confined to other nodes of the same cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owned {
    /// Every nodedown namespace (a cluster nodedown alone uses: the simulated one).
    pub every: bool,
    /// Run namespaces labelled with this invocation id.
    pub invocation: Option<String>,
    /// Run namespaces by name (a cleanup's, from its journals).
    pub namespaces: Vec<String>,
    /// The nodes whose agents' namespaces are waited for; none: every node's (also with
    /// `every`).
    pub nodes: Option<Vec<String>>,
}

impl Owned {
    /// Everything of every nodedown invocation (a cluster nodedown alone uses: the simulated
    /// one).
    pub fn every() -> Owned {
        Owned {
            every: true,
            ..Owned::default()
        }
    }

    /// Whether the run namespace `ns` is waited for (pure).
    pub fn has_run_namespace(&self, ns: &Namespace) -> bool {
        if self.every {
            return true;
        }
        let name = ns.metadata.name.as_deref().unwrap_or("");
        let label = ns
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(crate::vocab::INVOCATION_LABEL));
        self.namespaces.iter().any(|n| n == name)
            || (self.invocation.is_some() && label == self.invocation.as_ref())
    }

    /// Whether the agent namespace `ns` is waited for (pure).
    pub fn has_agent_namespace(&self, ns: &Namespace) -> bool {
        let node = ns
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(crate::faults::agent::AGENT_NODE_LABEL));
        match (&self.nodes, node) {
            (None, _) => true,
            (Some(nodes), Some(node)) => nodes.contains(node),
            (Some(_), None) => false,
        }
    }

    /// A cleanup's: the namespaces and nodes its journals' pending actions name.
    pub fn of_pending(actions: &[(u64, crate::journal::Undo)]) -> Owned {
        use crate::journal::Undo;
        let mut owned = Owned {
            nodes: Some(vec![]),
            ..Owned::default()
        };
        for (_, undo) in actions {
            match undo {
                Undo::DeleteNamespace { name } => owned.namespaces.push(name.clone()),
                Undo::HealFault { node, .. }
                | Undo::RestoreNode { node, .. }
                | Undo::RemoveTaint { node, .. }
                | Undo::DeleteNetworkFence { node, .. } => {
                    owned.nodes.get_or_insert_default().push(node.clone())
                }
                _ => {}
            }
        }
        owned
    }
}

/// Waits until no namespace of a nodedown run (label `nodedown.dev/run`) nor of a node agent
/// (label `nodedown.dev/agent-node`) that `owned` covers is terminating, at most
/// [`NAMESPACE_TIMEOUT`]; `Err` names the ones still there (or why they cannot be listed). An
/// invocation leaves nothing of its own behind when it exits.
pub async fn wait_namespaces_gone(client: &Client, owned: &Owned) -> Result<(), HealFailure> {
    let api: Api<Namespace> = Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + NAMESPACE_TIMEOUT;
    loop {
        let mut terminating: Vec<String> = Vec::new();
        for (label, agent) in [
            (crate::workload::RUN_LABEL, false),
            (crate::faults::agent::AGENT_NODE_LABEL, true),
        ] {
            terminating.extend(
                api.list(&ListParams::default().labels(label))
                    .await
                    .map_err(|source| HealFailure::Api {
                        what: "cannot list the runs' namespaces".into(),
                        source,
                    })?
                    .items
                    .into_iter()
                    .filter(|n| n.metadata.deletion_timestamp.is_some())
                    .filter(|n| {
                        if agent {
                            owned.has_agent_namespace(n)
                        } else {
                            owned.has_run_namespace(n)
                        }
                    })
                    .filter_map(|n| n.metadata.name),
            );
        }
        if terminating.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(HealFailure::NamespacesLeft(terminating));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The workers a pod can go to now: Ready, not control plane, not cordoned, no NoSchedule or
/// NoExecute taint. By name. Pure.
pub fn schedulable_workers(nodes: &[Node]) -> Vec<String> {
    nodes
        .iter()
        .filter(|n| node_is_ready(n) && !is_control_plane(n))
        .filter(|n| {
            let spec = n.spec.as_ref();
            !spec.and_then(|s| s.unschedulable).unwrap_or(false)
                && !spec.and_then(|s| s.taints.as_ref()).is_some_and(|t| {
                    t.iter()
                        .any(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
                })
        })
        .filter_map(|n| n.metadata.name.clone())
        .collect()
}

/// What makes a cluster unfit for a failover run, one line each (empty: fit). Pure.
pub fn degraded(nodes: &[Node], workers_needed: usize) -> Vec<String> {
    let mut problems = Vec::new();
    let name = |n: &Node| n.metadata.name.clone().unwrap_or_default();
    let not_ready: Vec<String> = nodes
        .iter()
        .filter(|n| !node_is_ready(n))
        .map(name)
        .collect();
    if !not_ready.is_empty() {
        problems.push(format!("not Ready: {}", not_ready.join(", ")));
    }
    let tainted: Vec<String> = nodes
        .iter()
        .filter(|n| {
            n.spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|t| t.iter().any(|t| t.key == remediation::OUT_OF_SERVICE_KEY))
        })
        .map(name)
        .collect();
    if !tainted.is_empty() {
        problems.push(format!(
            "out-of-service taint already on: {}",
            tainted.join(", ")
        ));
    }
    let schedulable = schedulable_workers(nodes).len();
    let needed = workers_needed.max(2);
    if schedulable < needed {
        problems.push(if needed == 2 {
            format!("{schedulable} schedulable worker(s): a failover needs at least two")
        } else {
            format!(
                "{schedulable} schedulable worker(s): {} replicas on a node each and one for the replacement need {needed}",
                needed - 1
            )
        });
    }
    problems
}

/// Polls until the Node exists and is Ready.
pub async fn wait_node_ready(
    nodes: &Api<Node>,
    node: &str,
    timeout: Duration,
) -> Result<(), HealFailure> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Ok(Some(n)) = nodes.get_opt(node).await {
            if node_is_ready(&n) {
                return Ok(());
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(HealFailure::NotReady {
                node: node.to_string(),
                timeout,
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, ready: bool, extra: serde_json::Value) -> Node {
        let mut v = serde_json::json!({
            "metadata": {"name": name, "labels": {}},
            "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
        });
        if let Some(labels) = extra.get("labels") {
            v["metadata"]["labels"] = labels.clone();
        }
        if let Some(taints) = extra.get("taints") {
            v["spec"]["taints"] = taints.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn degraded_clusters_are_named() {
        let cp = node(
            "cp",
            true,
            serde_json::json!({"labels": {"node-role.kubernetes.io/control-plane": ""}}),
        );
        let w = |n: &str| node(n, true, serde_json::json!({}));
        assert!(degraded(&[cp.clone(), w("w1"), w("w2")], 2).is_empty());
        let p = degraded(
            &[
                cp.clone(),
                w("w1"),
                node("w2", false, serde_json::json!({})),
            ],
            2,
        );
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].contains("not Ready: w2"));
        assert!(p[1].contains("1 schedulable worker"));
        let oos = node(
            "w3",
            true,
            serde_json::json!({"taints": [{"key": remediation::OUT_OF_SERVICE_KEY, "effect": "NoExecute"}]}),
        );
        let p = degraded(&[cp.clone(), w("w1"), w("w2"), oos], 2);
        assert_eq!(p, vec!["out-of-service taint already on: w3".to_string()]);
        // Three replicas, a node each, and one more for the replacement.
        let p = degraded(&[cp.clone(), w("w1"), w("w2"), w("w3")], 4);
        assert_eq!(
            p,
            vec!["3 schedulable worker(s): 3 replicas on a node each and one for the replacement need 4".to_string()]
        );
        assert!(degraded(&[cp, w("w1"), w("w2"), w("w3"), w("w4")], 4).is_empty());
    }

    // Synthetic namespaces: a name and its labels, as nodedown makes them.
    fn ns(name: &str, labels: serde_json::Value) -> Namespace {
        serde_json::from_value(serde_json::json!({"metadata": {"name": name, "labels": labels}}))
            .unwrap()
    }

    #[test]
    fn an_invocation_waits_for_its_own_namespaces_and_its_own_nodes_agents_only() {
        let ours = ns(
            "nd-smoke-default-1-aaaaa",
            serde_json::json!({"nodedown.dev/run": "smoke.default.1", "nodedown.dev/invocation": "abc"}),
        );
        let theirs = ns(
            "nd-smoke-default-1-bbbbb",
            serde_json::json!({"nodedown.dev/run": "smoke.default.1", "nodedown.dev/invocation": "def"}),
        );
        let agent = |node: &str| {
            ns(
                &format!("nd-agent-{node}"),
                serde_json::json!({"nodedown.dev/agent-node": node}),
            )
        };
        let owned = Owned {
            every: false,
            invocation: Some("abc".into()),
            namespaces: vec![],
            nodes: Some(vec!["w1".into(), "w2".into()]),
        };
        assert!(owned.has_run_namespace(&ours));
        assert!(!owned.has_run_namespace(&theirs));
        assert!(owned.has_agent_namespace(&agent("w2")));
        assert!(!owned.has_agent_namespace(&agent("w3")));
        // The simulated cluster is nodedown's own: everything on it.
        let every = Owned::every();
        assert!(every.has_run_namespace(&theirs) && every.has_agent_namespace(&agent("w3")));
    }

    #[test]
    fn a_cleanup_waits_for_what_its_journals_name() {
        let actions = vec![
            (
                1,
                Undo::DeleteNamespace {
                    name: "nd-x-1-aaaaa".into(),
                },
            ),
            (
                2,
                Undo::RemoveTaint {
                    node: "w1".into(),
                    key: "node.kubernetes.io/out-of-service".into(),
                },
            ),
        ];
        let owned = Owned::of_pending(&actions);
        assert!(owned.has_run_namespace(&ns("nd-x-1-aaaaa", serde_json::json!({}))));
        assert!(!owned.has_run_namespace(&ns("nd-y-1-bbbbb", serde_json::json!({}))));
        assert!(owned.has_agent_namespace(&ns(
            "nd-agent-w1",
            serde_json::json!({"nodedown.dev/agent-node": "w1"})
        )));
        assert!(!owned.has_agent_namespace(&ns(
            "nd-agent-w2",
            serde_json::json!({"nodedown.dev/agent-node": "w2"})
        )));
        // Nothing named: nothing waited for (not everyone's).
        let none = Owned::of_pending(&[]);
        assert!(!none.has_run_namespace(&ns("nd-y-1-bbbbb", serde_json::json!({}))));
    }
}
