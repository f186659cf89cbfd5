//! A real Pushgateway (github.com/prometheus/pushgateway, built by scripts/test) for the tests
//! that push to it: on a free port of this machine, or inside a kind node container (where
//! pods reach it: this machine has no route back to the pod network), stopped when dropped.
//! Shared by tests/metrics.rs and tests/e2e.rs, each of which uses a part.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};

enum Process {
    Local(std::process::Child),
    /// Started with `docker exec` in a node container from a copy on the shared directory.
    InNode {
        node: String,
        copy: PathBuf,
    },
}

pub struct Gateway {
    process: Process,
    pub url: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        match &mut self.process {
            Process::Local(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Process::InNode { node, copy } => {
                let _ = Command::new("docker")
                    .args(["exec", node, "pkill", "-f", &in_node_path(copy)])
                    .output();
                let _ = std::fs::remove_file(copy);
            }
        }
    }
}

fn binary() -> PathBuf {
    let bin = std::env::var_os("NODEDOWN_PUSHGATEWAY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/nodedown/pushgateway-v1.11.5/pushgateway"));
    assert!(
        bin.is_file(),
        "{} missing: scripts/test installs it (go install github.com/prometheus/pushgateway@v1.11.5), or set NODEDOWN_PUSHGATEWAY_BIN",
        bin.display()
    );
    bin
}

fn free_port(ip: &str) -> u16 {
    std::net::TcpListener::bind(format!("{ip}:0"))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_ready(g: Gateway) -> Gateway {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while ureq::get(&format!("{}/-/ready", g.url)).call().is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the pushgateway at {} did not get ready",
            g.url
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    g
}

/// Starts one on a free port of `ip` (a local address) and waits until it is ready.
pub fn start(ip: &str) -> Gateway {
    let port = free_port(ip);
    let child = Command::new(binary())
        .arg(format!("--web.listen-address={ip}:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(Gateway {
        process: Process::Local(child),
        url: format!("http://{ip}:{port}"),
    })
}

/// Where a file of the shared directory (`host_shared`) is inside the nodes.
fn in_node_path(copy: &std::path::Path) -> String {
    format!(
        "/mnt/nodedown-shared/{}",
        copy.file_name().unwrap().to_string_lossy()
    )
}

/// Starts one inside the kind node container `node` (address `node_ip`), from a copy of the
/// binary in the shared directory the nodes mount (`host_shared` on this machine).
pub fn start_in_node(node: &str, node_ip: &str, host_shared: &std::path::Path) -> Gateway {
    let copy = host_shared.join(format!("pushgateway-{}", std::process::id()));
    std::fs::copy(binary(), &copy).unwrap();
    // A port free on this machine is as good a guess as any for the node's own namespace.
    let port = free_port("127.0.0.1");
    let started = Command::new("docker")
        .args(["exec", "-d", node, &in_node_path(&copy)])
        .arg(format!("--web.listen-address={node_ip}:{port}"))
        .output()
        .unwrap();
    assert!(
        started.status.success(),
        "docker exec {node}: {}",
        String::from_utf8_lossy(&started.stderr)
    );
    wait_ready(Gateway {
        process: Process::InNode {
            node: node.to_string(),
            copy,
        },
        url: format!("http://{node_ip}:{port}"),
    })
}

/// What the gateway exposes now (its /metrics), nodedown's families only.
pub fn nodedown_families(g: &Gateway) -> String {
    let text = ureq::get(&format!("{}/metrics", g.url))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    text.split("# HELP ")
        .filter(|f| f.starts_with("nodedown_"))
        .map(|f| format!("# HELP {f}"))
        .collect()
}
