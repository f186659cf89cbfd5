//! The power-hooks backend: the user's own commands power nodes off and on and tell their power
//! state — `virsh destroy {node}`, `aws ec2 stop-instances --force --instance-ids {instanceId}`,
//! `ipmitool … chassis power off`, a Redfish call. Each runs through `sh -c` with the node's
//! facts substituted; its command, exit code and output are appended to a log in the run
//! directory. Only `node-shutdown` (and fencing) go through hooks.

use super::{Effect, NodeControl, NodeError, NodeFault, PowerState};
use crate::spec::FaultKind;
use crate::timeline::TimeZeroBasis;
use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::core::v1::Node;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// The placeholders a hook may use.
pub const PLACEHOLDERS: [&str; 4] = ["node", "providerID", "instanceId", "address"];

/// The three commands (templates).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PowerHooks {
    pub power_off: String,
    pub power_on: String,
    pub power_state: String,
    /// How long one hook may run.
    #[serde(default = "default_timeout", with = "crate::spec::duration")]
    pub timeout: Duration,
}

fn default_timeout() -> Duration {
    Duration::from_secs(120)
}

/// What a template is filled with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    pub node: String,
    pub provider_id: Option<String>,
    pub address: Option<String>,
}

impl NodeFacts {
    pub fn of(node: &Node) -> NodeFacts {
        NodeFacts {
            node: node.metadata.name.clone().unwrap_or_default(),
            provider_id: node.spec.as_ref().and_then(|s| s.provider_id.clone()),
            address: node
                .status
                .as_ref()
                .and_then(|s| s.addresses.as_ref())
                .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
                .map(|a| a.address.clone()),
        }
    }

    /// The cloud's instance id: the last path segment of the providerID
    /// (`aws:///us-east-1a/i-0abc` → `i-0abc`, `gce://p/z/vm-1` → `vm-1`).
    pub fn instance_id(&self) -> Option<String> {
        self.provider_id
            .as_deref()
            .and_then(|p| p.rsplit('/').find(|s| !s.is_empty()))
            .map(str::to_string)
    }
}

/// A value as one shell word: single-quoted, with `'` written as `'\''`.
fn shell_word(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Fills `{node}`, `{providerID}`, `{instanceId}` and `{address}` (each as one quoted shell
/// word); every other brace is left as written (Go templates in `docker inspect -f` stay
/// intact). A placeholder whose fact the node lacks is an error naming it.
pub fn fill(template: &str, facts: &NodeFacts) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let name = after.split('}').next().filter(|_| after.contains('}'));
        match name.filter(|n| PLACEHOLDERS.contains(n)) {
            Some(n) => {
                let value = match n {
                    "node" => Some(facts.node.clone()),
                    "providerID" => facts.provider_id.clone(),
                    "instanceId" => facts.instance_id(),
                    _ => facts.address.clone(),
                };
                let value = value.ok_or_else(|| {
                    format!(
                        "node {} has no {n} (used as {{{n}}} in `{template}`)",
                        facts.node
                    )
                })?;
                out.push_str(&shell_word(&value));
                rest = &after[n.len() + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Reads a `powerState` hook's output: `on`/`off` (also `running`/`true`, `stopped`/`shut
/// off`/`false`), case and surrounding space ignored.
pub fn parse_power_state(stdout: &str) -> Result<PowerState, String> {
    match stdout.trim().to_ascii_lowercase().as_str() {
        "on" | "running" | "true" | "poweredon" => Ok(PowerState::On),
        "off" | "stopped" | "shut off" | "false" | "poweredoff" => Ok(PowerState::Off),
        other => Err(format!(
            "powerState printed `{other}`; it must print `on` or `off`"
        )),
    }
}

/// One hook run, as logged in `hooks.jsonl`.
#[derive(Debug, Serialize)]
struct HookRecord<'a> {
    wall: String,
    hook: &'a str,
    node: &'a str,
    command: &'a str,
    exit: Option<i32>,
    stdout: String,
    stderr: String,
    ms: u64,
}

/// The backend.
pub struct HooksNodeControl {
    hooks: PowerHooks,
    client: kube::Client,
    /// `hooks.jsonl` of the invocation's output directory.
    log: Option<PathBuf>,
}

impl HooksNodeControl {
    pub fn new(hooks: PowerHooks, client: kube::Client, log: Option<PathBuf>) -> Self {
        HooksNodeControl { hooks, client, log }
    }

    async fn facts(&self, node: &str) -> Result<NodeFacts, NodeError> {
        let n = kube::Api::<Node>::all(self.client.clone())
            .get_opt(node)
            .await
            .map_err(|e| NodeError::Node {
                node: node.into(),
                detail: format!("cannot read the Node for the hook: {e}"),
            })?;
        // A deleted Node (delete-node remediation) still has a name to power on.
        Ok(n.map(|n| NodeFacts::of(&n)).unwrap_or(NodeFacts {
            node: node.into(),
            ..Default::default()
        }))
    }

    /// Runs hook `name` for `node`; its stdout on success.
    async fn run(&self, name: &str, template: &str, node: &str) -> Result<String, NodeError> {
        let facts = self.facts(node).await?;
        let command = fill(template, &facts).map_err(|detail| NodeError::Node {
            node: node.into(),
            detail,
        })?;
        let started = std::time::Instant::now();
        let child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(self.hooks.timeout, child).await;
        let (exit, stdout, stderr) = match &output {
            Ok(Ok(o)) => (
                o.status.code(),
                String::from_utf8_lossy(&o.stdout).into_owned(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            ),
            Ok(Err(e)) => (None, String::new(), format!("cannot run sh: {e}")),
            Err(_) => (
                None,
                String::new(),
                format!("timed out after {:?}", self.hooks.timeout),
            ),
        };
        if let Some(path) = &self.log {
            let record = HookRecord {
                wall: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
                hook: name,
                node,
                command: &command,
                exit,
                stdout: stdout.clone(),
                stderr: stderr.clone(),
                ms: started.elapsed().as_millis() as u64,
            };
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "{}", serde_json::to_string(&record).expect("serializes"));
            }
        }
        if exit == Some(0) {
            Ok(stdout)
        } else {
            Err(NodeError::Node {
                node: node.into(),
                detail: format!(
                    "{name} hook `{command}` failed ({}): {}",
                    exit.map_or("no exit code".to_string(), |c| format!("exit {c}")),
                    stderr.trim()
                ),
            })
        }
    }
}

impl NodeControl for HooksNodeControl {
    fn capability(&self) -> super::Capability {
        super::Capability::power_hooks()
    }

    fn check_node<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move {
            // Every template must fill for this node, and the node must be on.
            let facts = self.facts(node).await?;
            for t in [
                &self.hooks.power_off,
                &self.hooks.power_on,
                &self.hooks.power_state,
            ] {
                fill(t, &facts).map_err(|detail| NodeError::Node {
                    node: node.into(),
                    detail,
                })?;
            }
            match self.power_state(node).await? {
                PowerState::On => Ok(()),
                PowerState::Off => Err(NodeError::Node {
                    node: node.into(),
                    detail: "powerState says it is already off".into(),
                }),
            }
        }
        .boxed()
    }

    fn apply<'a>(&'a self, fault: &'a NodeFault) -> BoxFuture<'a, Result<Effect, NodeError>> {
        async move {
            if fault.kind != FaultKind::NodeShutdown {
                return Err(NodeError::Unsupported {
                    backend: "power-hooks",
                    fault: fault.kind.as_str().into(),
                });
            }
            self.run("powerOff", &self.hooks.power_off, &fault.node)
                .await?;
            // The machine died somewhere while the command ran: its return is an upper bound.
            Ok(Effect {
                at: SystemTime::now(),
                basis: TimeZeroBasis::RequestReturned,
            })
        }
        .boxed()
    }

    fn heal<'a>(&'a self, kind: FaultKind, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move {
            if kind != FaultKind::NodeShutdown {
                return Err(NodeError::Unsupported {
                    backend: "power-hooks",
                    fault: kind.as_str().into(),
                });
            }
            if self.power_state(node).await? == PowerState::On {
                return Ok(());
            }
            self.run("powerOn", &self.hooks.power_on, node)
                .await
                .map(|_| ())
        }
        .boxed()
    }

    fn power_off<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move {
            self.run("powerOff", &self.hooks.power_off, node)
                .await
                .map(|_| ())
        }
        .boxed()
    }

    fn power_state<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<PowerState, NodeError>> {
        async move {
            let out = self
                .run("powerState", &self.hooks.power_state, node)
                .await?;
            parse_power_state(&out).map_err(|detail| NodeError::Node {
                node: node.into(),
                detail,
            })
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> NodeFacts {
        NodeFacts {
            node: "worker-2".into(),
            provider_id: Some("aws:///us-east-1a/i-0abc123".into()),
            address: Some("10.0.3.7".into()),
        }
    }

    #[test]
    fn fills_known_placeholders_as_quoted_words_and_leaves_other_braces() {
        assert_eq!(
            fill("virsh destroy {node}", &facts()).unwrap(),
            "virsh destroy 'worker-2'"
        );
        assert_eq!(
            fill(
                "aws ec2 stop-instances --force --instance-ids {instanceId}",
                &facts()
            )
            .unwrap(),
            "aws ec2 stop-instances --force --instance-ids 'i-0abc123'"
        );
        assert_eq!(
            fill(
                "ipmitool -H {address} chassis power off # {providerID}",
                &facts()
            )
            .unwrap(),
            "ipmitool -H '10.0.3.7' chassis power off # 'aws:///us-east-1a/i-0abc123'"
        );
        // Go templates survive, {else} included.
        let t = "docker inspect -f '{{if .State.Running}}on{{else}}off{{end}}' {node}";
        assert_eq!(
            fill(t, &facts()).unwrap(),
            "docker inspect -f '{{if .State.Running}}on{{else}}off{{end}}' 'worker-2'"
        );
        assert_eq!(fill("echo {", &facts()).unwrap(), "echo {");
        assert_eq!(
            fill("{node}{node}", &facts()).unwrap(),
            "'worker-2''worker-2'"
        );
    }

    #[test]
    fn values_cannot_break_out_of_their_word() {
        let f = NodeFacts {
            node: "a'; rm -rf /; echo '".into(),
            ..Default::default()
        };
        assert_eq!(
            fill("echo {node}", &f).unwrap(),
            r"echo 'a'\''; rm -rf /; echo '\'''"
        );
    }

    #[test]
    fn a_missing_fact_is_an_error_naming_it() {
        let f = NodeFacts {
            node: "n1".into(),
            ..Default::default()
        };
        let e = fill("stop {instanceId}", &f).unwrap_err();
        assert!(e.contains("no instanceId") && e.contains("n1"), "{e}");
    }

    #[test]
    fn instance_ids_from_provider_ids() {
        let id = |p: &str| {
            NodeFacts {
                provider_id: Some(p.into()),
                ..Default::default()
            }
            .instance_id()
        };
        assert_eq!(id("aws:///us-east-1a/i-0abc").as_deref(), Some("i-0abc"));
        assert_eq!(id("gce://proj/zone/vm-1").as_deref(), Some("vm-1"));
        assert_eq!(
            id("kind://docker/nd/nd-worker").as_deref(),
            Some("nd-worker")
        );
    }

    #[test]
    fn power_state_words() {
        assert_eq!(parse_power_state(" ON\n").unwrap(), PowerState::On);
        assert_eq!(parse_power_state("true").unwrap(), PowerState::On);
        assert_eq!(parse_power_state("shut off").unwrap(), PowerState::Off);
        assert!(parse_power_state("maybe").unwrap_err().contains("`maybe`"));
    }
}
