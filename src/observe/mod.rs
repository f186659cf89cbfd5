//! Observation (effectful edge + pure diffs): kube-runtime watchers on Nodes, the workload's
//! Pods, VolumeAttachments and Events; every change becomes an `Event`, stamped on receipt and
//! appended to the run's `events.jsonl` as it happens.

mod acks;
mod diff;
mod recorder;
pub use acks::*;
pub use diff::*;
pub use recorder::*;

use futures::{Stream, TryStreamExt};
use k8s_openapi::api::core::v1::{Event as KubeEvent, Node, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// What to watch for one run.
pub struct Scope {
    pub namespace: String,
    /// Label selector of the workload's pods, e.g. `app=writer`.
    pub pod_selector: String,
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
    let events: Api<KubeEvent> = Api::namespaced(client, &scope.namespace);
    let pod_cfg = watcher::Config::default().labels(&scope.pod_selector);
    vec![
        tokio::spawn(follow(
            watcher(nodes, watcher::Config::default()),
            recorder.clone(),
            diff_node,
            node_gone,
        )),
        tokio::spawn(follow(
            watcher(pods, pod_cfg),
            recorder.clone(),
            diff_pod,
            pod_gone,
        )),
        tokio::spawn(follow(
            watcher(vas, watcher::Config::default()),
            recorder.clone(),
            diff_volume_attachment,
            va_gone,
        )),
        tokio::spawn(follow(
            watcher(events, watcher::Config::default()),
            recorder,
            diff_kube_event,
            |_| None,
        )),
    ]
}

/// Drives one watcher: keeps the last observed state per object (by name) and records the
/// events the pure diff function derives from each change.
async fn follow<K, S>(
    stream: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
    recorder: Arc<Recorder>,
    diff: fn(Option<&S>, &K) -> (S, Vec<crate::timeline::EventKind>),
    gone: fn(&S) -> Option<crate::timeline::EventKind>,
) where
    K: kube::Resource + Clone + std::fmt::Debug + Send + 'static,
{
    let mut state: HashMap<String, S> = HashMap::new();
    let stream = stream.default_backoff();
    futures::pin_mut!(stream);
    loop {
        match stream.try_next().await {
            Ok(Some(watcher::Event::Apply(obj))) | Ok(Some(watcher::Event::InitApply(obj))) => {
                let name = obj.meta().name.clone().unwrap_or_default();
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
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(e) => tracing::debug!("watch error (retrying with backoff): {e}"),
        }
    }
}
