//! Observation (effectful edge + pure diffs): kube-runtime watchers on Nodes, the workload's
//! Pods and claims, VolumeAttachments and Events; every change becomes an `Event`, stamped on receipt and
//! appended to the run's `events.jsonl` as it happens.

mod acks;
mod counters;
mod diff;
pub mod procs;
mod ready;
mod recorder;
pub use acks::*;
pub use counters::*;
pub use diff::*;
pub use ready::{is_control_plane, node_is_ready, pod_is_ready, pod_not_ready_reason};
pub use recorder::*;

use crate::timeline::{EventKind, Resource};
use futures::{Stream, TryStreamExt};
use k8s_openapi::api::core::v1::{Event as KubeEvent, Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tokio::task::JoinHandle;

/// What to watch for one run.
pub struct Scope {
    pub namespace: String,
    /// Label selector of the workload's pods, e.g. `app=writer`.
    pub pod_selector: String,
    /// The run's lane: only these nodes, and VolumeAttachments on them, are recorded (empty:
    /// the whole cluster, as a run alone has it).
    pub nodes: Vec<String>,
    /// Also record the namespace's Kubernetes Events (the simulated runs leave them out: at
    /// hundreds of instances they are scheduler chatter the curve never reads).
    pub kube_events: bool,
    /// Also record the Events about NetworkFences (a storage-fenced run: the storage's report of
    /// the operations it refused).
    pub fence_events: bool,
    /// Also watch NetworkFences made by someone else (an external remediator fencing at the
    /// storage, as Rook does): the nodes' addresses as CIDR blocks (`172.18.0.2/32` → node).
    /// `None`: not watched.
    pub fence_clients: Option<HashMap<String, String>>,
}

/// Keeps the watcher's objects `keep` accepts (and every list boundary): what another lane's
/// nodes and volumes do is not recorded in this run.
fn only<K, S>(
    stream: S,
    keep: impl Fn(&K) -> bool + Send + 'static,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
{
    stream.try_filter(move |e| {
        std::future::ready(match e {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) | watcher::Event::Delete(o) => {
                keep(o)
            }
            watcher::Event::Init | watcher::Event::InitDone => true,
        })
    })
}

/// Starts the watchers; they run until the handles are aborted.
pub fn spawn_watchers(
    client: Client,
    scope: &Scope,
    recorder: Arc<Recorder>,
) -> Vec<JoinHandle<()>> {
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &scope.namespace);
    let vas: Api<VolumeAttachment> = Api::all(client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &scope.namespace);
    let events: Api<KubeEvent> = Api::namespaced(client.clone(), &scope.namespace);
    let fence_events: Api<KubeEvent> =
        Api::namespaced(client.clone(), crate::vocab::CLUSTER_EVENTS_NAMESPACE);
    let pod_cfg = watcher::Config::default().labels(&scope.pod_selector);
    let lane: Arc<HashSet<String>> = Arc::new(scope.nodes.iter().cloned().collect());
    let in_lane = {
        let lane = lane.clone();
        move |n: &Node| {
            lane.is_empty() || n.metadata.name.as_ref().is_some_and(|n| lane.contains(n))
        }
    };
    let attached_in_lane =
        move |va: &VolumeAttachment| lane.is_empty() || lane.contains(&va.spec.node_name);
    let mut watchers = vec![
        tokio::spawn(follow(
            Resource::Nodes,
            only(watcher(nodes, watcher::Config::default()), in_lane),
            recorder.clone(),
            diff_node,
            node_gone,
        )),
        tokio::spawn(follow(
            Resource::Pods,
            watcher(pods, pod_cfg),
            recorder.clone(),
            diff_pod,
            pod_gone,
        )),
        tokio::spawn(follow(
            Resource::VolumeAttachments,
            only(watcher(vas, watcher::Config::default()), attached_in_lane),
            recorder.clone(),
            diff_volume_attachment,
            va_gone,
        )),
        tokio::spawn(follow(
            Resource::PersistentVolumeClaims,
            watcher(claims, watcher::Config::default()),
            recorder.clone(),
            diff_claim,
            |_| None,
        )),
    ];
    if scope.fence_events {
        // The run's own fences are named after its namespace (`remediation::fence::fence_name`);
        // an external remediator's are named as it likes (the timeline keeps the target's).
        let prefix = format!("{}-", scope.namespace);
        let anyone = scope.fence_clients.is_some();
        let own = move |e: &KubeEvent| {
            anyone
                || e.involved_object
                    .name
                    .as_ref()
                    .is_some_and(|n| n.starts_with(&prefix))
        };
        watchers.push(tokio::spawn(follow(
            Resource::FenceEvents,
            only(
                watcher(
                    fence_events,
                    watcher::Config::default().fields("involvedObject.kind=NetworkFence"),
                ),
                own,
            ),
            recorder.clone(),
            diff_kube_event,
            |_| None,
        )));
    }
    if let Some(clients) = scope.fence_clients.clone() {
        watchers.push(tokio::spawn(follow_fences(
            client.clone(),
            clients,
            recorder.clone(),
        )));
    }
    if scope.kube_events {
        watchers.push(tokio::spawn(follow(
            Resource::Events,
            watcher(events, watcher::Config::default()),
            recorder,
            diff_kube_event,
            |_| None,
        )));
    }
    watchers
}

/// The csi-addons API group and version of `NetworkFence` and `NetworkFenceClass`.
pub const CSI_ADDONS_GROUP: &str = "csiaddons.openshift.io";
pub const CSI_ADDONS_VERSION: &str = "v1alpha1";

/// A csi-addons resource (cluster-scoped): its kind and plural in that group and version.
pub fn csi_addons_resource(kind: &str, plural: &str) -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: CSI_ADDONS_GROUP.into(),
        version: CSI_ADDONS_VERSION.into(),
        api_version: format!("{CSI_ADDONS_GROUP}/{CSI_ADDONS_VERSION}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The API resource of `NetworkFence`.
pub fn network_fence_resource() -> kube::api::ApiResource {
    csi_addons_resource("NetworkFence", "networkfences")
}

/// Follows the cluster's NetworkFences (csi-addons): each fence whose blocks name a node of
/// `clients` is recorded as it is requested, decided and lifted (`diff_network_fence`); a fence
/// deleted is lifted. Without the csi-addons API the watch fails once and is recorded as a gap.
async fn follow_fences(client: Client, clients: HashMap<String, String>, recorder: Arc<Recorder>) {
    let api: Api<kube::api::DynamicObject> = Api::all_with(client, &network_fence_resource());
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let mut seen: HashMap<String, FenceSeen> = HashMap::new();
    let mut gap = false;
    loop {
        match stream.try_next().await {
            Ok(Some(watcher::Event::Apply(o) | watcher::Event::InitApply(o))) => {
                if gap {
                    recorder.record(EventKind::WatchResumed {
                        resource: Resource::NetworkFences,
                        relisted: false,
                    });
                    gap = false;
                }
                let name = o.metadata.name.clone().unwrap_or_default();
                let (next, events) = diff_network_fence(seen.get(&name), &name, &o.data, &clients);
                seen.insert(name, next);
                for e in events {
                    recorder.record(e);
                }
            }
            Ok(Some(watcher::Event::Delete(o))) => {
                let name = o.metadata.name.clone().unwrap_or_default();
                if let Some(FenceSeen {
                    node: Some(node),
                    state,
                }) = seen.remove(&name)
                {
                    if state != Some(crate::timeline::FenceState::Unfenced) {
                        recorder.record(EventKind::NetworkFence {
                            name,
                            node,
                            cidrs: Vec::new(),
                            state: crate::timeline::FenceState::Unfenced,
                            message: Some("deleted".into()),
                        });
                    }
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(e) => {
                if !gap {
                    recorder.record(EventKind::WatchGap {
                        resource: Resource::NetworkFences,
                        error: e.to_string(),
                    });
                    gap = true;
                }
            }
        }
    }
}

/// After a watch error, items that arrive within this long of the first one are a replay of
/// what was missed (stamped late), so they still count as inside the gap.
const REPLAY_BURST: std::time::Duration = std::time::Duration::from_secs(1);

/// Drives one watcher: keeps the last observed state per object (by name) and records the
/// events the pure diff function derives from each change.
///
/// Gaps are recorded, not hidden: a watch error records `watch-gap`; the gap ends with
/// `watch-resumed` — after a relist once it is complete (objects missing from the new list are
/// recorded gone), after a resumed watch once the replay burst is over ([`REPLAY_BURST`]).
/// Everything recorded in between is marked uncertain by the timeline.
async fn follow<K, S>(
    resource: Resource,
    stream: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
    recorder: Arc<Recorder>,
    diff: fn(Option<&S>, &K) -> (S, Vec<EventKind>),
    gone: fn(&S) -> Option<EventKind>,
) where
    K: kube::Resource + Clone + std::fmt::Debug + Send + 'static,
{
    let mut state: HashMap<String, S> = HashMap::new();
    // Names seen in the current (re)list, to find the objects that disappeared meanwhile.
    let mut listing: Option<HashSet<String>> = None;
    let mut first_list = true;
    let mut gap = false;
    let mut burst_start: Option<std::time::Instant> = None;
    let stream = stream.default_backoff();
    futures::pin_mut!(stream);
    loop {
        let item = stream.try_next().await;
        if gap && listing.is_none() {
            if let Ok(Some(watcher::Event::Apply(_) | watcher::Event::Delete(_))) = &item {
                // A resumed watch replays what it missed right away; the burst is the gap.
                let start = *burst_start.get_or_insert_with(std::time::Instant::now);
                if start.elapsed() > REPLAY_BURST {
                    recorder.record(EventKind::WatchResumed {
                        resource,
                        relisted: false,
                    });
                    gap = false;
                    burst_start = None;
                }
            }
        }
        match item {
            Ok(Some(watcher::Event::Init)) => listing = Some(HashSet::new()),
            Ok(Some(watcher::Event::InitDone)) => {
                if let Some(seen) = listing.take() {
                    let missing: Vec<String> = state
                        .keys()
                        .filter(|k| !seen.contains(*k))
                        .cloned()
                        .collect();
                    for name in missing {
                        if let Some(e) = state.remove(&name).as_ref().and_then(gone) {
                            recorder.record(e);
                        }
                    }
                }
                if gap || !first_list {
                    recorder.record(EventKind::WatchResumed {
                        resource,
                        relisted: true,
                    });
                }
                gap = false;
                first_list = false;
                burst_start = None;
            }
            Ok(Some(watcher::Event::Apply(obj))) | Ok(Some(watcher::Event::InitApply(obj))) => {
                let name = obj.meta().name.clone().unwrap_or_default();
                if let Some(seen) = listing.as_mut() {
                    seen.insert(name.clone());
                }
                let (next, events) = diff(state.get(&name), &obj);
                state.insert(name, next);
                for e in events {
                    recorder.record(e);
                }
            }
            Ok(Some(watcher::Event::Delete(obj))) => {
                let name = obj.meta().name.clone().unwrap_or_default();
                if let Some(prev) = state.remove(&name) {
                    if let Some(e) = gone(&prev) {
                        recorder.record(e);
                    }
                }
            }
            Ok(None) => return,
            Err(e) => {
                tracing::debug!("{resource:?} watch error (retrying with backoff): {e}");
                if !gap {
                    recorder.record(EventKind::WatchGap {
                        resource,
                        error: e.to_string(),
                    });
                    gap = true;
                }
                burst_start = None;
            }
        }
    }
}
