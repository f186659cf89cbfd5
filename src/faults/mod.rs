//! Faults (effectful): what is done to ONE node, each with its heal. The runner journals the
//! heal before it applies the fault. All of them act on kind node containers through the Docker
//! API: a power-off is a SIGKILL of the container; the others run commands inside it (docker exec
//! goes through the Docker daemon, so it works while the node is cut off from the network).

use crate::cluster::{ClusterError, DockerNodes};
use crate::spec::FaultKind;

/// The iptables chain a network partition lives in (one per node; removed by the heal).
pub const PARTITION_CHAIN: &str = "NODEDOWN-PARTITION";

/// A fault bound to its target.
#[derive(Debug, Clone)]
pub struct Fault {
    pub kind: FaultKind,
    pub node: String,
    pub container: String,
    /// For a partition: the addresses to cut off (control plane and the other nodes).
    pub peers: Vec<String>,
}

/// The shell script that cuts `peers` off (both directions, also forwarded pod traffic).
pub fn partition_script(peers: &[String]) -> String {
    let mut s = format!(
        "set -e\niptables -w -N {c} 2>/dev/null || iptables -w -F {c}\n",
        c = PARTITION_CHAIN
    );
    for ip in peers {
        s.push_str(&format!(
            "iptables -w -A {c} -s {ip} -j DROP\niptables -w -A {c} -d {ip} -j DROP\n",
            c = PARTITION_CHAIN
        ));
    }
    for chain in ["INPUT", "OUTPUT", "FORWARD"] {
        s.push_str(&format!(
            "iptables -w -C {chain} -j {c} 2>/dev/null || iptables -w -I {chain} 1 -j {c}\n",
            c = PARTITION_CHAIN
        ));
    }
    s
}

/// The shell script that removes a partition; harmless when there is none (e.g. after a restart).
pub fn heal_partition_script() -> String {
    let mut s = String::new();
    for chain in ["INPUT", "OUTPUT", "FORWARD"] {
        s.push_str(&format!(
            "while iptables -w -D {chain} -j {c} 2>/dev/null; do :; done\n",
            c = PARTITION_CHAIN
        ));
    }
    s.push_str(&format!(
        "iptables -w -F {c} 2>/dev/null || true\niptables -w -X {c} 2>/dev/null || true\n",
        c = PARTITION_CHAIN
    ));
    s
}

impl Fault {
    pub async fn apply(&self, docker: &DockerNodes) -> Result<(), ClusterError> {
        match self.kind {
            // Power off: SIGKILL the node container (no shutdown, no goodbye to the API server).
            FaultKind::NodeShutdown => docker.kill(&self.container).await,
            FaultKind::KubeletStop => docker
                .exec(&self.container, &["systemctl", "stop", "kubelet"], None)
                .await
                .map(|_| ()),
            FaultKind::NetworkPartition => {
                let script = partition_script(&self.peers);
                docker
                    .exec(&self.container, &["sh", "-c", &script], None)
                    .await
                    .map(|_| ())
            }
        }
    }
}

/// Heals a fault of `kind` on `container` (the journal holds kind and container).
pub async fn heal(
    kind: FaultKind,
    container: &str,
    docker: &DockerNodes,
) -> Result<(), ClusterError> {
    match kind {
        FaultKind::NodeShutdown => docker.start(container).await,
        FaultKind::KubeletStop => docker
            .exec(container, &["systemctl", "start", "kubelet"], None)
            .await
            .map(|_| ()),
        FaultKind::NetworkPartition => docker
            .exec(container, &["sh", "-c", &heal_partition_script()], None)
            .await
            .map(|_| ()),
    }
}

/// Fencing: power the node off and confirm it is off.
pub async fn fence(container: &str, docker: &DockerNodes) -> Result<(), ClusterError> {
    docker.kill(container).await?;
    for _ in 0..50 {
        if !docker.is_running(container).await? {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(ClusterError::Exec {
        container: container.into(),
        command: "kill (fence)".into(),
        code: -1,
        output: "the node container is still running 5s after SIGKILL".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_script_drops_both_directions_for_every_peer_and_heal_is_idempotent() {
        let s = partition_script(&["172.18.0.2".into(), "172.18.0.3".into()]);
        assert_eq!(s.matches(" -j DROP").count(), 4);
        assert!(s.contains("-I FORWARD 1 -j NODEDOWN-PARTITION"));
        let h = heal_partition_script();
        assert!(h.contains("|| true"));
        assert!(h.contains("-X NODEDOWN-PARTITION"));
    }
}
