//! Pod faults through the API server: the workload's pod deleted gracefully, as a user or an
//! eviction would. Nothing to heal: the controller replaces the pod by itself.

use super::{Backend, Effect, NodeControl, NodeError, NodeFault, PowerState};
use crate::spec::FaultKind;
use crate::timeline::TimeZeroBasis;
use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::DeleteParams;
use kube::{Api, Client};
use std::time::SystemTime;

#[derive(Clone)]
pub struct ApiPodControl {
    client: Client,
}

impl ApiPodControl {
    pub fn new(client: Client) -> ApiPodControl {
        ApiPodControl { client }
    }
}

fn unsupported(what: &str) -> NodeError {
    NodeError::Unsupported {
        backend: Backend::Api.as_str(),
        fault: what.into(),
    }
}

impl NodeControl for ApiPodControl {
    fn capability(&self) -> super::Capability {
        super::Capability::api()
    }

    fn check_node<'a>(&'a self, _node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async { Ok(()) }.boxed()
    }

    fn apply<'a>(&'a self, fault: &'a NodeFault) -> BoxFuture<'a, Result<Effect, NodeError>> {
        async move {
            let (FaultKind::PodDelete, Some(pod)) = (fault.kind, &fault.pod) else {
                return Err(unsupported(fault.kind.as_str()));
            };
            let pods: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
            pods.delete(&pod.name, &DeleteParams::default())
                .await
                .map_err(|e| NodeError::Node {
                    node: fault.node.clone(),
                    detail: format!("delete pod {}/{}: {e}", pod.namespace, pod.name),
                })?;
            // The deletion is accepted (deletionTimestamp set) when the call returns.
            Ok(Effect {
                at: SystemTime::now(),
                basis: TimeZeroBasis::RequestReturned,
            })
        }
        .boxed()
    }

    fn heal<'a>(
        &'a self,
        _kind: FaultKind,
        _node: &'a str,
    ) -> BoxFuture<'a, Result<(), NodeError>> {
        // A deleted pod is not undeleted: its controller makes a new one.
        async { Ok(()) }.boxed()
    }

    fn power_off<'a>(&'a self, _node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async { Err(unsupported("power-off")) }.boxed()
    }

    fn power_state<'a>(&'a self, _node: &'a str) -> BoxFuture<'a, Result<PowerState, NodeError>> {
        async { Err(unsupported("power-state")) }.boxed()
    }
}
