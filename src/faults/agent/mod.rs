//! The node-agent backend: for clusters nodedown reaches by kubeconfig alone. The harness runs
//! `nodedown agent` (its own workload image) as a privileged DaemonSet pod (hostPID,
//! hostNetwork) pinned to the target node, in a namespace of its own, and orders one fault with
//! a lease through the API server's pod proxy. The agent undoes the fault when the lease ends
//! even if the harness died or is cut off; the harness's heal asks for an early heal (pod proxy,
//! else the node's address directly), else waits out the lease, then removes the agent.
//!
//! The program that runs on the node is [`node`].

pub mod node;

use super::{Effect, NodeControl, NodeError, NodeFault, PowerState};
use crate::spec::FaultKind;
use crate::timeline::TimeZeroBasis;
use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The agent's port (hostNetwork: it is the node's port).
pub const AGENT_PORT: u16 = 18081;

/// A fault order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub kind: FaultKind,
    #[serde(default)]
    pub peers: Vec<String>,
    /// How long the fault may last; the agent undoes it when this runs out.
    pub lease_ms: u64,
}

/// The answer to an order (sent before the fault is applied: a partition would drop it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    pub lease_until_ms: u64,
}

/// What `GET /status` answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<Active>,
    /// Every fault applied: (kind, unix ms when in place, the error if it failed).
    #[serde(default)]
    pub applied: Vec<(FaultKind, u64, Option<String>)>,
    /// Every heal so far: (kind, unix ms, why).
    #[serde(default)]
    pub healed: Vec<(FaultKind, u64, String)>,
    /// PID 1 of the host runs in a container (a kind node).
    pub container_node: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Active {
    pub kind: FaultKind,
    pub until_ms: u64,
}
/// Label on the agent's namespace and DaemonSet: the node it acts on.
pub const AGENT_NODE_LABEL: &str = "nodedown.dev/agent-node";
/// Annotation on the DaemonSet: when the current fault's lease ends (unix ms).
pub const LEASE_ANNOTATION: &str = "nodedown.dev/lease-until-ms";
/// How long the agent pod may take to be Ready.
const AGENT_READY_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a new agent waits for the namespace of the previous agent on its node to go.
const AGENT_NAMESPACE_GONE_TIMEOUT: Duration = Duration::from_secs(120);

/// The harness side.
pub struct AgentNodeControl {
    client: Client,
    /// The workload image (the agent is nodedown itself) and whether it is preloaded; without
    /// it the backend can heal but not apply.
    image: Option<(String, bool)>,
    /// The nodes are containers of a throwaway test cluster: let the agent act inside them.
    test_node: bool,
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn err(node: &str, detail: impl Into<String>) -> NodeError {
    NodeError::Node {
        node: node.into(),
        detail: detail.into(),
    }
}

/// A name fit for a namespace, from a node name.
fn agent_namespace(node: &str) -> String {
    let clean: String = node
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let mut name = format!("nd-agent-{clean}");
    name.truncate(63);
    name.trim_end_matches('-').to_string()
}

/// The agent's DaemonSet: one privileged pod on `node`, tolerating every taint (it must stay
/// through NotReady, unreachable and out-of-service).
pub fn daemonset(node: &str, image: &str, preloaded: bool, test_node: bool) -> DaemonSet {
    let mut command = vec![
        "/usr/local/bin/nodedown".to_string(),
        "agent".to_string(),
        "--port".to_string(),
        AGENT_PORT.to_string(),
    ];
    if test_node {
        command.push("--test-node".into());
    }
    serde_json::from_value(json!({
        "metadata": {"name": "nodedown-agent", "labels": {AGENT_NODE_LABEL: node}},
        "spec": {
            "selector": {"matchLabels": {"app": "nodedown-agent"}},
            "template": {
                "metadata": {"labels": {"app": "nodedown-agent", AGENT_NODE_LABEL: node}},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "tolerations": [{"operator": "Exists"}],
                    "hostPID": true,
                    "hostNetwork": true,
                    "terminationGracePeriodSeconds": 30,
                    "containers": [{
                        "name": "agent",
                        "image": image,
                        "imagePullPolicy": if preloaded { "Never" } else { "IfNotPresent" },
                        "command": command,
                        "securityContext": {"privileged": true},
                        "readinessProbe": {"httpGet": {"path": "/status", "port": AGENT_PORT}, "periodSeconds": 1}
                    }]
                }
            }
        }
    }))
    .expect("valid DaemonSet")
}

impl AgentNodeControl {
    pub fn new(client: Client, image: Option<(String, bool)>, test_node: bool) -> Self {
        AgentNodeControl {
            client,
            image,
            test_node,
        }
    }

    /// Deploys the agent on `node` and waits for it Ready; returns its pod name.
    async fn deploy(&self, node: &str) -> Result<(String, String), NodeError> {
        let (image, preloaded) = self
            .image
            .clone()
            .ok_or_else(|| err(node, "no workload image for the agent"))?;
        let ns = agent_namespace(node);
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        // The agent is privileged (it stops the kubelet, cuts the network): its namespace, made
        // for it alone, says so to Pod Security admission, which would otherwise reject it on a
        // cluster that enforces `baseline` or `restricted` by default.
        let ns_obj: Namespace = serde_json::from_value(json!({
            "metadata": {"name": ns, "labels": {
                AGENT_NODE_LABEL: node,
                "pod-security.kubernetes.io/enforce": "privileged",
                "pod-security.kubernetes.io/warn": "privileged",
                "pod-security.kubernetes.io/audit": "privileged",
            }}
        }))
        .expect("valid Namespace");
        // The agent of an earlier fault on this node (another run's, a moment ago) may still be
        // going: its namespace takes no new objects while it terminates, so wait it out.
        let deadline = tokio::time::Instant::now() + AGENT_NAMESPACE_GONE_TIMEOUT;
        loop {
            match namespaces.create(&PostParams::default(), &ns_obj).await {
                Ok(_) => break,
                Err(kube::Error::Api(e)) if e.is_already_exists() => {}
                Err(e) => return Err(err(node, format!("create namespace {ns}: {e}"))),
            }
            let existing = namespaces
                .get_opt(&ns)
                .await
                .map_err(|e| err(node, format!("read namespace {ns}: {e}")))?;
            match existing {
                Some(n) if n.metadata.deletion_timestamp.is_some() => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(err(
                            node,
                            format!(
                                "the agent namespace {ns} of an earlier fault is still terminating after {}",
                                crate::units::fmt_duration(AGENT_NAMESPACE_GONE_TIMEOUT)
                            ),
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                // Live: reuse it. Gone since: create it again.
                Some(_) => break,
                None => {}
            }
        }
        let ds: Api<DaemonSet> = Api::namespaced(self.client.clone(), &ns);
        match ds
            .create(
                &PostParams::default(),
                &daemonset(node, &image, preloaded, self.test_node),
            )
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.is_already_exists() => {}
            Err(e) => return Err(err(node, format!("create the agent DaemonSet: {e}"))),
        }
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let deadline = tokio::time::Instant::now() + AGENT_READY_TIMEOUT;
        loop {
            let list = pods
                .list(&ListParams::default().labels("app=nodedown-agent"))
                .await
                .map_err(|e| err(node, format!("list agent pods: {e}")))?;
            if let Some(p) = list.items.iter().find(|p| {
                p.metadata.deletion_timestamp.is_none() && crate::observe::pod_is_ready(p)
            }) {
                return Ok((ns, p.metadata.name.clone().unwrap_or_default()));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(err(
                    node,
                    format!("the agent pod in {ns} is not Ready after {AGENT_READY_TIMEOUT:?} (kubectl -n {ns} describe pods)"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    fn proxy_url(ns: &str, pod: &str, path: &str) -> String {
        format!("/api/v1/namespaces/{ns}/pods/{pod}:{AGENT_PORT}/proxy{path}")
    }

    async fn post(
        &self,
        ns: &str,
        pod: &str,
        path: &str,
        body: Vec<u8>,
    ) -> Result<String, CallError> {
        let request = http::Request::post(Self::proxy_url(ns, pod, path))
            .header("Content-Type", "application/json")
            .body(body)
            .expect("valid request");
        match tokio::time::timeout(Duration::from_secs(5), self.client.request_text(request)).await
        {
            Ok(r) => r.map_err(CallError::Api),
            Err(_) => Err(CallError::Timeout),
        }
    }

    async fn find_agent(
        &self,
        node: &str,
    ) -> Result<Option<(String, Option<String>, Option<u64>)>, NodeError> {
        let all: Api<DaemonSet> = Api::all(self.client.clone());
        let list = all
            .list(&ListParams::default().labels(&format!("{AGENT_NODE_LABEL}={node}")))
            .await
            .map_err(|e| err(node, format!("find the agent: {e}")))?;
        let Some(ds) = list.items.first() else {
            return Ok(None);
        };
        let ns = ds.metadata.namespace.clone().unwrap_or_default();
        let lease = ds
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(LEASE_ANNOTATION))
            .and_then(|v| v.parse().ok());
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let pod = pods
            .list(&ListParams::default().labels("app=nodedown-agent"))
            .await
            .ok()
            .and_then(|l| l.items.into_iter().find_map(|p| p.metadata.name));
        Ok(Some((ns, pod, lease)))
    }

    async fn node_address(&self, node: &str) -> Option<String> {
        let n = Api::<Node>::all(self.client.clone())
            .get_opt(node)
            .await
            .ok()??;
        n.status?
            .addresses?
            .into_iter()
            .find(|a| a.type_ == "InternalIP")
            .map(|a| a.address)
    }

    async fn apply_fault(&self, fault: &NodeFault) -> Result<Effect, NodeError> {
        let node = fault.node.as_str();
        if !self.supports(fault.kind) {
            return Err(NodeError::Unsupported {
                backend: "agent",
                fault: fault.kind.as_str().into(),
            });
        }
        let (ns, pod) = self.deploy(node).await?;
        let lease = fault.lease.unwrap_or(Duration::from_secs(300));
        let until = unix_ms() + lease.as_millis() as u64;
        // Written before the order: whoever heals later knows when the agent heals by itself.
        let ds: Api<DaemonSet> = Api::namespaced(self.client.clone(), &ns);
        ds.patch(
            "nodedown-agent",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {LEASE_ANNOTATION: until.to_string()}}}),
            ),
        )
        .await
        .map_err(|e| err(node, format!("annotate the agent's lease: {e}")))?;
        let order = Order {
            kind: fault.kind,
            peers: fault.peers.clone(),
            lease_ms: lease.as_millis() as u64,
        };
        let body = serde_json::to_vec(&order).expect("order serializes");
        let answer = self.post(&ns, &pod, "/fault", body).await.map_err(|e| {
            err(
                node,
                format!("order {} from the agent: {e}", fault.kind.as_str()),
            )
        })?;
        let _: Accepted = serde_json::from_str(&answer)
            .map_err(|e| err(node, format!("the agent answered {answer:?}: {e}")))?;
        Ok(Effect {
            at: SystemTime::now(),
            basis: TimeZeroBasis::CommandReturned,
        })
    }

    async fn heal_fault(&self, node: &str) -> Result<(), NodeError> {
        let Some((ns, pod, lease)) = self.find_agent(node).await? else {
            return Ok(());
        };
        // Ask for an early heal: through the API server, else the node's address directly.
        let mut asked = false;
        if let Some(pod) = &pod {
            asked = self.post(&ns, pod, "/heal", Vec::new()).await.is_ok();
        }
        if !asked {
            if let Some(addr) = self.node_address(node).await {
                asked = direct_post(&addr, AGENT_PORT, "/heal").await.is_ok();
            }
        }
        if !asked {
            // Cut off: the agent heals by itself when the lease ends.
            if let Some(until) = lease {
                let wait = until.saturating_sub(unix_ms()) + 3_000;
                tracing::info!(
                    "agent on {node} unreachable; waiting {wait} ms for its lease to end"
                );
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
        }
        Api::<Namespace>::all(self.client.clone())
            .delete(&ns, &DeleteParams::default())
            .await
            .map(|_| ())
            .or_else(|e| match e {
                kube::Error::Api(s) if s.is_not_found() => Ok(()),
                e => Err(err(node, format!("delete the agent namespace {ns}: {e}"))),
            })
    }
}

/// Why a call to the agent got no good answer.
#[derive(Debug, thiserror::Error)]
enum CallError {
    /// Through the API server's pod proxy.
    #[error("{0}")]
    Api(kube::Error),
    #[error("no answer within 5s")]
    Timeout,
    /// To the node's address directly.
    #[error("{target}: {source}")]
    Io {
        target: String,
        source: std::io::Error,
    },
    /// The node's address does not parse as a socket address.
    #[error("{0}")]
    Address(String),
    /// The agent answered, but not 200: its status line.
    #[error("{0}")]
    Status(String),
    #[error("the call's thread: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// POST without a body to `http://addr:port/path`, with a short timeout (the node's address
/// directly, when the API server cannot reach the agent).
async fn direct_post(addr: &str, port: u16, path: &str) -> Result<String, CallError> {
    let target = if addr.contains(':') {
        format!("[{addr}]:{port}")
    } else {
        format!("{addr}:{port}")
    };
    let path = path.to_string();
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let sock: std::net::SocketAddr = target
            .parse()
            .map_err(|e| CallError::Address(format!("{target}: {e}")))?;
        let io = |source| CallError::Io {
            target: target.clone(),
            source,
        };
        let mut s =
            std::net::TcpStream::connect_timeout(&sock, Duration::from_secs(3)).map_err(io)?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok();
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: agent\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .map_err(io)?;
        let mut out = String::new();
        s.read_to_string(&mut out).map_err(io)?;
        if out.starts_with("HTTP/1.1 200") || out.starts_with("HTTP/1.0 200") {
            Ok(out)
        } else {
            Err(CallError::Status(
                out.lines().next().unwrap_or("").to_string(),
            ))
        }
    })
    .await?
}

impl NodeControl for AgentNodeControl {
    fn capability(&self) -> crate::faults::Capability {
        crate::faults::Capability::agent()
    }

    fn check_node<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move {
            Api::<Node>::all(self.client.clone())
                .get(node)
                .await
                .map(|_| ())
                .map_err(|e| err(node, format!("cannot read the Node: {e}")))
        }
        .boxed()
    }

    fn apply<'a>(&'a self, fault: &'a NodeFault) -> BoxFuture<'a, Result<Effect, NodeError>> {
        self.apply_fault(fault).boxed()
    }

    fn heal<'a>(&'a self, _kind: FaultKind, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        self.heal_fault(node).boxed()
    }

    fn power_off<'a>(&'a self, _node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move {
            Err(NodeError::Unsupported {
                backend: "agent",
                fault: "power-off (fencing needs power hooks or the Docker backend)".into(),
            })
        }
        .boxed()
    }

    fn power_state<'a>(&'a self, _node: &'a str) -> BoxFuture<'a, Result<PowerState, NodeError>> {
        async move {
            Err(NodeError::Unsupported {
                backend: "agent",
                fault: "power state".into(),
            })
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_manifest_pins_one_privileged_pod_to_the_node() {
        let ds = daemonset("worker-2", "img:1", true, true);
        let v = serde_json::to_value(&ds).unwrap();
        let spec = &v["spec"]["template"]["spec"];
        assert_eq!(spec["nodeSelector"]["kubernetes.io/hostname"], "worker-2");
        assert_eq!(spec["hostPID"], true);
        assert_eq!(spec["hostNetwork"], true);
        assert_eq!(spec["tolerations"][0]["operator"], "Exists");
        let c = &spec["containers"][0];
        assert_eq!(c["securityContext"]["privileged"], true);
        assert!(c["command"]
            .as_array()
            .unwrap()
            .contains(&json!("--test-node")));
        let ds = daemonset("worker-2", "img:1", false, false);
        let v = serde_json::to_value(&ds).unwrap();
        assert!(!v["spec"]["template"]["spec"]["containers"][0]["command"]
            .as_array()
            .unwrap()
            .contains(&json!("--test-node")));
        assert_eq!(agent_namespace("Node_A.example"), "nd-agent-node-a-example");
    }
}
