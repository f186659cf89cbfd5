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
/// IPv6 is cut off wholesale on the node's network interface: kind's Docker network is dual
/// stack and node names resolve to IPv6 addresses too, so an IPv4-only partition lets the
/// kubelet reconnect over IPv6 (seen: the node was Ready again 45 s into the partition).
pub fn partition_script(peers: &[String]) -> String {
    let c = PARTITION_CHAIN;
    let mut s = format!("set -e\niptables -w -N {c} 2>/dev/null || iptables -w -F {c}\n");
    for ip in peers {
        s.push_str(&format!(
            "iptables -w -A {c} -s {ip} -j DROP\niptables -w -A {c} -d {ip} -j DROP\n"
        ));
    }
    s.push_str(&format!(
        "ip6tables -w -N {c} 2>/dev/null || ip6tables -w -F {c}\n"
    ));
    s.push_str(&format!(
        "ip6tables -w -A {c} -i eth0 -j DROP\nip6tables -w -A {c} -o eth0 -j DROP\n"
    ));
    for tool in ["iptables", "ip6tables"] {
        for chain in ["INPUT", "OUTPUT", "FORWARD"] {
            s.push_str(&format!(
                "{tool} -w -C {chain} -j {c} 2>/dev/null || {tool} -w -I {chain} 1 -j {c}\n"
            ));
        }
    }
    s
}

/// The shell script that removes a partition; harmless when there is none (e.g. after a restart).
pub fn heal_partition_script() -> String {
    let c = PARTITION_CHAIN;
    let mut s = String::new();
    for tool in ["iptables", "ip6tables"] {
        for chain in ["INPUT", "OUTPUT", "FORWARD"] {
            s.push_str(&format!(
                "while {tool} -w -D {chain} -j {c} 2>/dev/null; do :; done\n"
            ));
        }
        s.push_str(&format!(
            "{tool} -w -F {c} 2>/dev/null || true\n{tool} -w -X {c} 2>/dev/null || true\n"
        ));
    }
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
        let v4_drops = s
            .lines()
            .filter(|l| {
                l.starts_with("iptables -w -A NODEDOWN-PARTITION") && l.ends_with("-j DROP")
            })
            .count();
        assert_eq!(v4_drops, 4, "{s}");
        assert!(s.contains("iptables -w -I FORWARD 1 -j NODEDOWN-PARTITION"));
        assert!(
            s.contains("ip6tables -w -A NODEDOWN-PARTITION -i eth0 -j DROP"),
            "IPv6 cut off too"
        );
        assert!(s.contains("ip6tables -w -I OUTPUT 1 -j NODEDOWN-PARTITION"));
        let h = heal_partition_script();
        assert!(h.contains("|| true"));
        assert!(
            h.contains("iptables -w -X NODEDOWN-PARTITION")
                && h.contains("ip6tables -w -X NODEDOWN-PARTITION")
        );
    }
}
