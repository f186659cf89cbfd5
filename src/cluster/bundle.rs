//! The effects of `nodedown bundle run` on the cluster: apply the bundle's objects, find and
//! follow its pod, fetch its results through the API server's exec, and delete it all again.
//! The objects themselves are planned in `plan::bundle`.

use crate::journal::ObjectRef;
use crate::plan::bundle::{GRACE, JOB, RESULTS_DIR};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{
    Api, AttachParams, DeleteParams, DynamicObject, GroupVersionKind, ListParams, LogParams, Patch,
    PatchParams,
};
use kube::Client;
use serde_json::Value;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    #[error("{0}")]
    Object(String),
    #[error("{left} pod(s) of namespace {namespace} still there after {}s (the qualification inside heals on SIGTERM; see `kubectl -n {namespace} logs job/{JOB}`)", .waited.as_secs())]
    PodsLeft {
        left: usize,
        namespace: String,
        waited: Duration,
    },
    #[error("fetching the results from pod {pod}: {why}")]
    Fetch { pod: String, why: String },
}

fn api_err(what: impl Into<String>) -> impl FnOnce(kube::Error) -> BundleError {
    let what = what.into();
    move |source| BundleError::Api { what, source }
}

/// The reference of an object value (`apiVersion`, `kind`, `metadata.namespace`, `.name`).
pub fn object_ref(o: &Value) -> Result<ObjectRef, BundleError> {
    let s = |v: &Value| v.as_str().map(str::to_string);
    Ok(ObjectRef {
        api_version: s(&o["apiVersion"])
            .ok_or_else(|| BundleError::Object(format!("no apiVersion in {o}")))?,
        kind: s(&o["kind"]).ok_or_else(|| BundleError::Object(format!("no kind in {o}")))?,
        namespace: s(&o["metadata"]["namespace"]),
        name: s(&o["metadata"]["name"])
            .ok_or_else(|| BundleError::Object(format!("no metadata.name in {o}")))?,
    })
}

/// The API of an object's kind, through discovery (the plural and the scope from the server).
async fn api_of(client: &Client, r: &ObjectRef) -> Result<Api<DynamicObject>, BundleError> {
    let (group, version) = r
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", r.api_version.as_str()));
    let gvk = GroupVersionKind::gvk(group, version, &r.kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(api_err(format!("discover {} {}", r.api_version, r.kind)))?;
    Ok(match &r.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    })
}

fn describe(r: &ObjectRef) -> String {
    match &r.namespace {
        Some(ns) => format!("{} {ns}/{}", r.kind, r.name),
        None => format!("{} {}", r.kind, r.name),
    }
}

/// Applies one object (server-side apply, field manager `nodedown`).
pub async fn apply(client: &Client, object: &Value) -> Result<(), BundleError> {
    let r = object_ref(object)?;
    let api = api_of(client, &r).await?;
    api.patch(
        &r.name,
        &PatchParams::apply("nodedown").force(),
        &Patch::Apply(object),
    )
    .await
    .map(|_| ())
    .map_err(api_err(format!("apply {}", describe(&r))))
}

/// Whether the namespace exists (a bundle running there, or one left behind); one that is
/// terminating is waited for, at most `wait`.
pub async fn namespace_exists(
    client: &Client,
    namespace: &str,
    wait: Duration,
) -> Result<bool, BundleError> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let ns = api
            .get_opt(namespace)
            .await
            .map_err(api_err(format!("read namespace {namespace}")))?;
        let terminating = match &ns {
            None => return Ok(false),
            Some(n) => n.metadata.deletion_timestamp.is_some(),
        };
        if !terminating || tokio::time::Instant::now() >= deadline {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The Job's pod, once it has one.
pub async fn pod(client: &Client, namespace: &str) -> Result<Option<Pod>, BundleError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let list = pods
        .list(&ListParams::default().labels(&format!("job-name={JOB}")))
        .await
        .map_err(api_err(format!("list the pods of job {namespace}/{JOB}")))?;
    Ok(list.items.into_iter().next())
}

/// Where the pod stands, for the caller's wait.
#[derive(Debug, Clone, PartialEq)]
pub enum PodState {
    /// Not yet running (scheduling, pulling the image).
    Waiting(Option<String>),
    /// The qualification runs.
    Running,
    /// The qualification ended; its results wait to be fetched.
    ResultsReady,
    /// The container ended (before its results were fetched: something went wrong).
    Ended { exit_code: i32, reason: String },
    /// It cannot start (the image cannot be pulled, the pod cannot be created).
    Stuck(String),
}

/// The state of the bundle's pod. Pure over the Pod object.
pub fn pod_state(pod: &Pod) -> PodState {
    let status = pod.status.clone().unwrap_or_default();
    let container = status
        .container_statuses
        .as_ref()
        .and_then(|c| c.first().cloned());
    if let Some(c) = &container {
        if let Some(state) = &c.state {
            if let Some(t) = &state.terminated {
                return PodState::Ended {
                    exit_code: t.exit_code,
                    reason: t.reason.clone().unwrap_or_default(),
                };
            }
            if let Some(w) = &state.waiting {
                let reason = w.reason.clone().unwrap_or_default();
                if matches!(
                    reason.as_str(),
                    "ErrImagePull"
                        | "ImagePullBackOff"
                        | "InvalidImageName"
                        | "CreateContainerConfigError"
                        | "CreateContainerError"
                ) {
                    return PodState::Stuck(format!(
                        "{reason}: {}",
                        w.message.clone().unwrap_or_default()
                    ));
                }
                return PodState::Waiting(Some(reason));
            }
            if state.running.is_some() {
                return if c.ready {
                    PodState::ResultsReady
                } else {
                    PodState::Running
                };
            }
        }
    }
    let why = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .map(|c| c.message.unwrap_or_default());
    PodState::Waiting(why)
}

/// Follows the pod's log into `sink` line by line until the container ends or the stream
/// breaks.
pub async fn follow_log(
    client: Client,
    namespace: String,
    pod: String,
    mut sink: impl FnMut(&str) + Send,
) -> Result<(), BundleError> {
    use futures::AsyncBufReadExt;
    use futures::TryStreamExt;
    let pods: Api<Pod> = Api::namespaced(client, &namespace);
    let stream = pods
        .log_stream(
            &pod,
            &LogParams {
                follow: true,
                ..Default::default()
            },
        )
        .await
        .map_err(api_err(format!("follow the log of pod {namespace}/{pod}")))?;
    let mut lines = stream.lines();
    while let Some(line) = lines.try_next().await.map_err(|e| BundleError::Fetch {
        pod: pod.clone(),
        why: format!("the log stream broke: {e}"),
    })? {
        sink(&line);
    }
    Ok(())
}

/// The pod's whole log so far (for the bundle and for an error).
pub async fn log(client: &Client, namespace: &str, pod: &str) -> Result<String, BundleError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    pods.logs(pod, &LogParams::default())
        .await
        .map_err(api_err(format!("read the log of pod {namespace}/{pod}")))
}

/// The results as a gzip'd tar, through the API server's exec of `nodedown bundle tar` in the
/// pod (which marks them fetched: the pod then ends).
pub async fn fetch(client: &Client, namespace: &str, pod: &str) -> Result<Vec<u8>, BundleError> {
    use tokio::io::AsyncReadExt;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let fail = |why: String| BundleError::Fetch {
        pod: pod.to_string(),
        why,
    };
    let mut attached = pods
        .exec(
            pod,
            [
                "/usr/local/bin/nodedown",
                "bundle",
                "tar",
                RESULTS_DIR,
                "--mark-retrieved",
            ],
            &AttachParams::default().container("nodedown"),
        )
        .await
        .map_err(|e| fail(format!("exec: {e}")))?;
    let mut stdout = attached
        .stdout()
        .ok_or_else(|| fail("no stdout from exec".into()))?;
    let mut stderr = attached
        .stderr()
        .ok_or_else(|| fail("no stderr from exec".into()))?;
    let status = attached.take_status();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (o, e) = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
    o.map_err(|e| fail(format!("reading the tarball: {e}")))?;
    e.map_err(|e| fail(format!("reading its stderr: {e}")))?;
    let status = match status {
        Some(s) => s.await,
        None => None,
    };
    attached
        .join()
        .await
        .map_err(|e| fail(format!("exec: {e}")))?;
    if let Some(s) = status {
        if s.status.as_deref() != Some("Success") {
            return Err(fail(format!(
                "`nodedown bundle tar` failed: {} {}",
                s.message.unwrap_or_default(),
                String::from_utf8_lossy(&err).trim()
            )));
        }
    }
    if out.is_empty() {
        return Err(fail(format!(
            "no tarball came back: {}",
            String::from_utf8_lossy(&err).trim()
        )));
    }
    Ok(out)
}

/// Deletes what a bundle put in the cluster: the Job and its pod (waited for: the
/// qualification inside heals on SIGTERM within [`GRACE`]), then `objects` (those outside the
/// namespace), then the namespace. Objects already gone count as deleted.
pub async fn delete(
    client: &Client,
    namespace: &str,
    objects: &[ObjectRef],
) -> Result<(), BundleError> {
    let gone = |r: Result<(), kube::Error>, what: String| match r {
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(BundleError::Api { what, source }),
        Ok(()) => Ok(()),
    };
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(client.clone(), namespace);
    gone(
        jobs.delete(JOB, &DeleteParams::background())
            .await
            .map(|_| ()),
        format!("delete job {namespace}/{JOB}"),
    )?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    gone(
        pods.delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
            .map(|_| ()),
        format!("delete the pods of namespace {namespace}"),
    )?;
    let waited = GRACE + Duration::from_secs(60);
    match super::wait_no_pods(client, namespace, waited, Duration::from_secs(1)).await {
        Ok(()) => {}
        Err(super::PodsNotGone::Left(left)) => {
            return Err(BundleError::PodsLeft {
                left,
                namespace: namespace.to_string(),
                waited,
            })
        }
        Err(super::PodsNotGone::Api(source)) => {
            return Err(BundleError::Api {
                what: format!("list the pods of namespace {namespace}"),
                source,
            })
        }
    }
    for r in objects.iter().rev() {
        let api = api_of(client, r).await?;
        gone(
            api.delete(&r.name, &DeleteParams::default())
                .await
                .map(|_| ()),
            format!("delete {}", describe(r)),
        )?;
    }
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    gone(
        namespaces
            .delete(namespace, &DeleteParams::default())
            .await
            .map(|_| ()),
        format!("delete namespace {namespace}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "p"}, "status": status}))
            .unwrap()
    }

    // Synthetic Pod statuses in the shapes the kubelet reports.
    #[test]
    fn the_pod_state_follows_its_container() {
        assert_eq!(
            pod_state(&pod(
                serde_json::json!({"conditions": [{"type": "PodScheduled", "status": "False", "message": "0/3 nodes are available"}]})
            )),
            PodState::Waiting(Some("0/3 nodes are available".into()))
        );
        let c = |state: serde_json::Value, ready: bool| {
            pod(
                serde_json::json!({"containerStatuses": [{"name": "nodedown", "image": "i", "imageID": "", "ready": ready, "restartCount": 0, "state": state}]}),
            )
        };
        assert_eq!(
            pod_state(&c(
                serde_json::json!({"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}),
                false
            )),
            PodState::Stuck("ImagePullBackOff: not found".into())
        );
        assert_eq!(
            pod_state(&c(serde_json::json!({"running": {}}), false)),
            PodState::Running
        );
        assert_eq!(
            pod_state(&c(serde_json::json!({"running": {}}), true)),
            PodState::ResultsReady
        );
        assert_eq!(
            pod_state(&c(
                serde_json::json!({"terminated": {"exitCode": 3, "reason": "Error"}}),
                false
            )),
            PodState::Ended {
                exit_code: 3,
                reason: "Error".into()
            }
        );
    }
}
