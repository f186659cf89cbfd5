//! `nodedown agent`: the node agent, run by the harness as a privileged pod (hostPID,
//! hostNetwork) on ONE target node of a cluster nodedown cannot reach through Docker. It carries
//! out one fault at a time in the host's namespaces and undoes it itself when the fault's lease
//! ends — because `kubelet-stop` and a partition can cut the harness off from it, the agent
//! never needs the harness to heal. It touches nothing but the named fault.
//!
//! HTTP (through the API server's pod proxy, or the node's address directly):
//! - `POST /fault` `{"kind": "kubelet-stop"|"network-partition", "peers": [..], "leaseMs": N}`
//!   → 202 `{"leaseUntilMs": unix ms}`, answered *before* the fault is applied (a partition
//!   would drop the answer); the outcome is in `GET /status` (`applied`). 409 while another
//!   fault is active.
//! - `POST /heal` → `{"healed": true|false}` (false: nothing was active).
//! - `GET /status` → what is active, until when, and what was healed.
//!
//! The lease logic ([`Lease`]) is pure and unit-tested; the rest is thin.

use super::{Accepted, Active, AgentStatus, Order};
use crate::faults::partition::{heal_partition_script, partition_script};
use crate::spec::FaultKind;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Why the agent refuses an order (answered 409 with the text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{} is active until {until_ms}; heal it first", .kind.as_str())]
    Busy { kind: FaultKind, until_ms: u64 },
    #[error("leaseMs must be more than 0")]
    NoLease,
    #[error("the agent carries out kubelet-stop and network-partition, not {}", .0.as_str())]
    NotMine(FaultKind),
}

/// Why a fault or its heal could not be carried out on the host (reported in `GET /status`).
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("open /proc/1/ns/{ns} (is the pod hostPID and privileged?): {source}")]
    Namespace {
        ns: &'static str,
        source: std::io::Error,
    },
    #[error("enter the host's namespaces: {0}")]
    Enter(std::io::Error),
    #[error("`{script}` failed ({status}): {output}")]
    Failed {
        script: String,
        status: std::process::ExitStatus,
        output: String,
    },
    #[error("the agent does not carry out {}", .0.as_str())]
    NotMine(FaultKind),
}

/// The lease state machine (pure: time is passed in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lease {
    pub active: Option<Active>,
}

/// What the agent must do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Due {
    Nothing,
    Heal(FaultKind),
}

impl Lease {
    /// Accepts an order at `now_ms`, or says why not.
    pub fn order(&mut self, order: &Order, now_ms: u64) -> Result<Active, Refused> {
        if let Some(a) = &self.active {
            return Err(Refused::Busy {
                kind: a.kind,
                until_ms: a.until_ms,
            });
        }
        if order.lease_ms == 0 {
            return Err(Refused::NoLease);
        }
        if !matches!(
            order.kind,
            FaultKind::KubeletStop | FaultKind::NetworkPartition
        ) {
            return Err(Refused::NotMine(order.kind));
        }
        let a = Active {
            kind: order.kind,
            until_ms: now_ms.saturating_add(order.lease_ms),
        };
        self.active = Some(a.clone());
        Ok(a)
    }

    /// Whether the lease ran out at `now_ms` (then the fault is no longer active).
    pub fn tick(&mut self, now_ms: u64) -> Due {
        match &self.active {
            Some(a) if now_ms >= a.until_ms => {
                let kind = a.kind;
                self.active = None;
                Due::Heal(kind)
            }
            _ => Due::Nothing,
        }
    }

    /// A heal asked for before the lease ran out.
    pub fn heal_now(&mut self) -> Due {
        match self.active.take() {
            Some(a) => Due::Heal(a.kind),
            None => Due::Nothing,
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Whether the host's PID 1 runs inside a container (`container=` in its environment, as
/// systemd in a kind node has).
pub fn host_is_container() -> bool {
    std::fs::read("/proc/1/environ")
        .map(|env| {
            env.split(|b| *b == 0)
                .any(|kv| kv.starts_with(b"container="))
        })
        .unwrap_or(false)
}

/// Runs `script` with `/bin/sh` in the host's mount, network, UTS, IPC and PID namespaces (the
/// namespaces of PID 1, visible through hostPID).
fn host_sh(script: &str) -> Result<String, HostError> {
    use std::os::unix::io::AsRawFd;
    use std::os::unix::process::CommandExt;
    let mut fds = Vec::new();
    for ns in ["ipc", "uts", "net", "pid", "mnt"] {
        let f = std::fs::File::open(format!("/proc/1/ns/{ns}"))
            .map_err(|source| HostError::Namespace { ns, source })?;
        fds.push(f);
    }
    let raw: Vec<i32> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(script).env_clear().env(
        "PATH",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    );
    // SAFETY: only async-signal-safe calls (setns) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            for fd in &raw {
                if libc::setns(*fd, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let out = cmd.output().map_err(HostError::Enter)?;
    drop(fds);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(HostError::Failed {
            script: script.to_string(),
            status: out.status,
            output: text.trim().to_string(),
        })
    }
}

fn apply(order: &Order) -> Result<(), HostError> {
    match order.kind {
        FaultKind::KubeletStop => {
            host_sh("systemctl cat kubelet.service >/dev/null 2>&1 || { echo 'the kubelet is not a systemd unit (kubelet.service) on this node; the agent cannot stop it' >&2; exit 1; }; systemctl stop kubelet")
                .map(|_| ())
        }
        FaultKind::NetworkPartition => host_sh(&partition_script(&order.peers)).map(|_| ()),
        FaultKind::NodeShutdown
        | FaultKind::NodeFreeze
        | FaultKind::PodDelete
        | FaultKind::ContainerKill => Err(HostError::NotMine(order.kind)),
    }
}

fn heal(kind: FaultKind) -> Result<(), HostError> {
    match kind {
        FaultKind::KubeletStop => host_sh("systemctl start kubelet").map(|_| ()),
        FaultKind::NetworkPartition => host_sh(&heal_partition_script()).map(|_| ()),
        FaultKind::NodeShutdown
        | FaultKind::NodeFreeze
        | FaultKind::PodDelete
        | FaultKind::ContainerKill => Ok(()),
    }
}

struct State {
    lease: Lease,
    status: AgentStatus,
}

fn do_heal(state: &Mutex<State>, due: Due, why: &str) {
    if let Due::Heal(kind) = due {
        let result = heal(kind);
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        s.status.active = None;
        let note = match result {
            Ok(()) => why.to_string(),
            Err(e) => format!("{why}; heal failed: {e}"),
        };
        eprintln!("agent: healed {}: {note}", kind.as_str());
        s.status.healed.push((kind, now_ms(), note));
    }
}

/// The agent process: serve orders, heal at lease end, heal on SIGTERM. `test_node` allows
/// acting inside a container-based node (a kind node of a throwaway cluster).
pub fn run(port: u16, test_node: bool) -> std::io::Result<()> {
    let container_node = host_is_container();
    if container_node && !test_node {
        return Err(std::io::Error::other(
            "refusing to act: this node is a container (PID 1 has container= in its environment); start the agent with --test-node if this is a throwaway test cluster",
        ));
    }
    // Block SIGTERM in every thread (threads inherit the mask) so that one thread can wait
    // for it and heal before exiting.
    // SAFETY: plain signal-mask change before any thread is spawned.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let state = Arc::new(Mutex::new(State {
        lease: Lease::default(),
        status: AgentStatus {
            container_node,
            ..Default::default()
        },
    }));
    // The lease clock.
    {
        let state = state.clone();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(200));
            let due = state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .lease
                .tick(now_ms());
            do_heal(&state, due, "lease ended");
        });
    }
    // SIGTERM (the pod is deleted): heal first.
    {
        let state = state.clone();
        std::thread::spawn(move || {
            // SAFETY: blocking the signal in this thread and waiting for it synchronously.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGTERM);
                let mut sig = 0;
                if libc::sigwait(&set, &mut sig) == 0 {
                    let due = state
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .lease
                        .heal_now();
                    do_heal(&state, due, "the agent was stopped");
                    std::process::exit(0);
                }
            }
        });
    }
    let server = tiny_http::Server::http(("0.0.0.0", port))
        .map_err(|e| std::io::Error::other(format!("agent: cannot listen on :{port}: {e}")))?;
    eprintln!("agent: listening on :{port} (container node: {container_node})");
    for mut req in server.incoming_requests() {
        let path = req.url().split('?').next().unwrap_or("").to_string();
        let json = |code: u16, body: String| {
            tiny_http::Response::from_string(body)
                .with_status_code(code)
                .with_header(
                    tiny_http::Header::from_bytes("Content-Type", "application/json")
                        .expect("valid header"),
                )
        };
        let response = match (req.method(), path.as_str()) {
            (tiny_http::Method::Get, "/status") => {
                let s = state.lock().unwrap_or_else(|p| p.into_inner());
                json(200, serde_json::to_string(&s.status).unwrap_or_default())
            }
            (tiny_http::Method::Post, "/fault") => {
                let mut body = String::new();
                let _ = std::io::Read::take(req.as_reader(), 64 * 1024).read_to_string(&mut body);
                match serde_json::from_str::<Order>(&body) {
                    Err(e) => json(400, serde_json::json!({"error": e.to_string()}).to_string()),
                    Ok(order) => {
                        let accepted = {
                            let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                            let r = s.lease.order(&order, now_ms());
                            if let Ok(a) = &r {
                                s.status.active = Some(a.clone());
                            }
                            r
                        };
                        match accepted {
                            Err(e) => {
                                json(409, serde_json::json!({"error": e.to_string()}).to_string())
                            }
                            Ok(active) => {
                                // Answer first, then act: a partition would drop the answer.
                                let answer = json(
                                    202,
                                    serde_json::to_string(&Accepted {
                                        lease_until_ms: active.until_ms,
                                    })
                                    .unwrap_or_default(),
                                );
                                let _ = req.respond(answer);
                                let result = apply(&order);
                                let at = now_ms();
                                let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                                s.status.applied.push((
                                    order.kind,
                                    at,
                                    result.as_ref().err().map(|e| e.to_string()),
                                ));
                                drop(s);
                                if let Err(e) = result {
                                    eprintln!(
                                        "agent: applying {} failed: {e}",
                                        order.kind.as_str()
                                    );
                                    // Undo whatever part of it took.
                                    let due = state
                                        .lock()
                                        .unwrap_or_else(|p| p.into_inner())
                                        .lease
                                        .heal_now();
                                    do_heal(&state, due, "applying failed");
                                }
                                continue;
                            }
                        }
                    }
                }
            }
            (tiny_http::Method::Post, "/heal") => {
                let due = state
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .lease
                    .heal_now();
                let healed = due != Due::Nothing;
                do_heal(&state, due, "asked by the harness");
                json(200, serde_json::json!({"healed": healed}).to_string())
            }
            _ => json(
                404,
                serde_json::json!({"error": "try GET /status, POST /fault, POST /heal"})
                    .to_string(),
            ),
        };
        let _ = req.respond(response);
    }
    Ok(())
}

use std::io::Read as _;

#[cfg(test)]
mod tests {
    use super::*;

    fn order(kind: FaultKind, lease_ms: u64) -> Order {
        Order {
            kind,
            peers: vec![],
            lease_ms,
        }
    }

    #[test]
    fn the_lease_heals_at_its_end_and_not_before() {
        let mut l = Lease::default();
        let a = l
            .order(&order(FaultKind::KubeletStop, 5_000), 1_000)
            .unwrap();
        assert_eq!(a.until_ms, 6_000);
        assert_eq!(l.tick(5_999), Due::Nothing);
        assert_eq!(l.tick(6_000), Due::Heal(FaultKind::KubeletStop));
        assert_eq!(l.tick(9_000), Due::Nothing, "healed once");
        assert_eq!(l.active, None);
    }

    #[test]
    fn one_fault_at_a_time_and_an_early_heal_ends_the_lease() {
        let mut l = Lease::default();
        l.order(&order(FaultKind::NetworkPartition, 60_000), 0)
            .unwrap();
        let e = l
            .order(&order(FaultKind::KubeletStop, 1_000), 10)
            .unwrap_err();
        assert_eq!(
            e,
            Refused::Busy {
                kind: FaultKind::NetworkPartition,
                until_ms: 60_000
            }
        );
        assert!(e.to_string().contains("network-partition is active"), "{e}");
        assert_eq!(l.heal_now(), Due::Heal(FaultKind::NetworkPartition));
        assert_eq!(l.heal_now(), Due::Nothing);
        assert_eq!(l.tick(u64::MAX), Due::Nothing);
        l.order(&order(FaultKind::KubeletStop, 1_000), 10).unwrap();
    }

    #[test]
    fn orders_it_cannot_carry_out_are_refused() {
        let mut l = Lease::default();
        assert!(l.order(&order(FaultKind::NodeShutdown, 1_000), 0).is_err());
        assert!(l.order(&order(FaultKind::KubeletStop, 0), 0).is_err());
        assert_eq!(l.active, None);
        let mut l = Lease::default();
        let a = l
            .order(&order(FaultKind::KubeletStop, u64::MAX), u64::MAX - 1)
            .unwrap();
        assert_eq!(a.until_ms, u64::MAX, "no overflow");
    }

    #[test]
    fn order_json_shape() {
        let o: Order = serde_json::from_str(
            r#"{"kind":"network-partition","peers":["172.18.0.2"],"leaseMs":90000}"#,
        )
        .unwrap();
        assert_eq!(o.kind, FaultKind::NetworkPartition);
        assert_eq!(o.peers, vec!["172.18.0.2".to_string()]);
        assert_eq!(o.lease_ms, 90_000);
    }
}
