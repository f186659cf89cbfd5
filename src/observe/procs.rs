//! CPU time and memory of processes, from /proc: the simulated cluster's control plane (its
//! processes are the host's, inside the control-plane container's cgroup), kwok, and nodedown
//! itself. CPU in clock ticks of USER_HZ, which the kernel fixes at 100 per second for /proc.

use std::collections::BTreeMap;

/// /proc's clock ticks per second (USER_HZ).
pub const TICKS_PER_SECOND: u64 = 100;

/// One process's CPU time so far and memory now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcUse {
    pub cpu_ticks: u64,
    pub rss_kib: u64,
}

/// `utime + stime` from a /proc/<pid>/stat line (fields 14 and 15, after the `)` that ends the
/// command name, which may itself hold spaces and parentheses).
pub fn cpu_ticks_of_stat(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// A `Name:   value kB` line of /proc/<pid>/status, in KiB.
pub fn status_kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

fn read_use(pid: &str) -> Option<ProcUse> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(ProcUse {
        cpu_ticks: cpu_ticks_of_stat(&stat)?,
        rss_kib: status_kib(&status, "VmRSS").unwrap_or(0),
    })
}

/// The use of the processes named `comms` (their /proc comm, at most 15 characters) inside the
/// Docker container `container_id`, summed per name.
pub fn in_container(container_id: &str, comms: &[&str]) -> BTreeMap<String, ProcUse> {
    let mut out: BTreeMap<String, ProcUse> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else {
            continue;
        };
        let comm = comm.trim();
        if !comms.contains(&comm) {
            continue;
        }
        let in_it = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .is_ok_and(|c| cgroup_is_container(&c, container_id));
        if !in_it {
            continue;
        }
        if let Some(u) = read_use(&pid) {
            let slot = out.entry(comm.to_string()).or_default();
            slot.cpu_ticks += u.cpu_ticks;
            slot.rss_kib += u.rss_kib;
        }
    }
    out
}

/// Whether a /proc/<pid>/cgroup text puts the process in Docker container `id`, under either
/// cgroup driver: `cgroupfs` (`/docker/<id>`) or `systemd` (`/system.slice/docker-<id>.scope`).
pub fn cgroup_is_container(cgroup: &str, id: &str) -> bool {
    !id.is_empty()
        && (cgroup.contains(&format!("/docker/{id}"))
            || cgroup.contains(&format!("/docker-{id}.scope")))
}

/// One process by pid.
pub fn of_pid(pid: u32) -> Option<ProcUse> {
    read_use(&pid.to_string())
}

/// nodedown's own use, with its peak resident memory (VmHWM).
pub fn own() -> (ProcUse, u64) {
    let u = read_use("self").unwrap_or_default();
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| status_kib(&s, "VmHWM"))
        .unwrap_or(0);
    (u, hwm)
}

pub use crate::timeline::scale::Usage;

/// Average cores and peak memory from two samples `seconds` apart (and the peak seen between).
pub fn usage(
    name: &str,
    before: ProcUse,
    after: ProcUse,
    peak_rss_kib: u64,
    seconds: f64,
) -> Usage {
    let cpu_seconds =
        after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / TICKS_PER_SECOND as f64;
    Usage {
        name: name.into(),
        cores: if seconds > 0.0 {
            cpu_seconds / seconds
        } else {
            0.0
        },
        cpu_seconds,
        max_rss_mib: peak_rss_kib.max(after.rss_kib) as f64 / 1024.0,
    }
}

/// The control plane's processes, as their `comm` begins.
pub const CONTROL_PLANE: [&str; 4] = [
    "kube-apiserver",
    "etcd",
    "kube-controller",
    "kube-scheduler",
];

/// What the control plane (its processes in one container), a helper process (kwok) and
/// nodedown itself use over a stretch of a run: CPU from two readings, memory at its peak
/// (the control plane sampled every 2 s meanwhile, the others by their own high-water mark).
/// The samples are taken on a thread of the meter's own: a scan of /proc takes tens of
/// milliseconds on a busy machine, and must not delay the run's reactions to what it watches.
pub struct CostMeter {
    container: Option<String>,
    helper: Option<(&'static str, u32)>,
    before_cp: BTreeMap<String, ProcUse>,
    before_helper: ProcUse,
    before_self: ProcUse,
    sampler: Option<Sampler>,
    stretch: std::time::Instant,
}

/// The sampling thread: told to stop through the channel, it returns each process's peak
/// resident memory (KiB).
type Sampler = (
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<BTreeMap<String, u64>>,
);

/// The control plane's processes in `container`.
fn control_plane_of(container: Option<&str>) -> BTreeMap<String, ProcUse> {
    container
        .map(|c| in_container(c, &CONTROL_PLANE))
        .unwrap_or_default()
}

impl CostMeter {
    /// Starts the stretch (`container`: the control plane's container id, if known).
    pub fn start(container: Option<String>, helper: Option<(&'static str, u32)>) -> CostMeter {
        let before_cp = control_plane_of(container.as_deref());
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let of = container.clone();
        let sampler = std::thread::Builder::new()
            .name("cost-meter".into())
            .spawn(move || {
                let mut peak = BTreeMap::<String, u64>::new();
                // Every 2 s until told to stop (or the meter is dropped).
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(std::time::Duration::from_secs(2))
                {
                    for (k, u) in control_plane_of(of.as_deref()) {
                        let p = peak.entry(k).or_default();
                        *p = (*p).max(u.rss_kib);
                    }
                }
                peak
            })
            .ok()
            .map(|h| (stop, h));
        CostMeter {
            before_helper: helper.and_then(|(_, pid)| of_pid(pid)).unwrap_or_default(),
            before_self: own().0,
            container,
            helper,
            before_cp,
            sampler,
            stretch: std::time::Instant::now(),
        }
    }

    /// Each process's use over the stretch: the control plane's, the helper's, nodedown's.
    pub fn finish(mut self) -> Vec<Usage> {
        let seconds = self.stretch.elapsed().as_secs_f64();
        let peak = self
            .sampler
            .take()
            .and_then(|(stop, h)| {
                let _ = stop.send(());
                h.join().ok()
            })
            .unwrap_or_default();
        let (after_self, self_hwm) = own();
        let mut cost: Vec<Usage> = control_plane_of(self.container.as_deref())
            .iter()
            .map(|(k, a)| {
                let b = self.before_cp.get(k).copied().unwrap_or_default();
                usage(k, b, *a, peak.get(k).copied().unwrap_or(0), seconds)
            })
            .collect();
        if let Some((name, pid)) = self.helper {
            let after = of_pid(pid).unwrap_or_default();
            cost.push(usage(name, self.before_helper, after, 0, seconds));
        }
        cost.push(usage(
            "nodedown",
            self.before_self,
            after_self,
            self_hwm,
            seconds,
        ));
        cost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_is_found_under_either_cgroup_driver() {
        let id = "4f1c0e";
        // cgroupfs driver, cgroup v1 hierarchy (this machine's kind).
        let v1 = "12:cpu,cpuacct:/docker/4f1c0e/kubelet.slice\n1:name=systemd:/docker/4f1c0e/init.scope\n";
        // systemd driver, cgroup v2 (synthetic: the path systemd gives a Docker container).
        let v2 = "0::/system.slice/docker-4f1c0e.scope/kubelet.slice/kubelet-kubepods.slice\n";
        assert!(cgroup_is_container(v1, id));
        assert!(cgroup_is_container(v2, id));
        assert!(!cgroup_is_container(v2, "4f1c0f"));
        assert!(!cgroup_is_container("0::/user.slice/session-1.scope\n", id));
        assert!(!cgroup_is_container(v1, ""));
    }

    #[test]
    fn cpu_ticks_skip_a_command_name_with_spaces_and_parentheses() {
        // Synthetic: a /proc/<pid>/stat line in the kernel's layout, its name with spaces.
        let stat = "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 5000 0 0 0 731 254 0 0 20 0 12 0 900 1000000 2000 18446744073709551615";
        assert_eq!(cpu_ticks_of_stat(stat), Some(731 + 254));
        assert_eq!(cpu_ticks_of_stat("garbage"), None);
    }

    #[test]
    fn status_values_are_read_in_kib() {
        let status = "Name:\tetcd\nVmHWM:\t  81234 kB\nVmRSS:\t   70000 kB\n";
        assert_eq!(status_kib(status, "VmRSS"), Some(70_000));
        assert_eq!(status_kib(status, "VmHWM"), Some(81_234));
        assert_eq!(status_kib(status, "VmSwap"), None);
        let u = usage(
            "etcd",
            ProcUse {
                cpu_ticks: 100,
                rss_kib: 1024,
            },
            ProcUse {
                cpu_ticks: 300,
                rss_kib: 2048,
            },
            4096,
            4.0,
        );
        assert_eq!((u.cpu_seconds, u.cores, u.max_rss_mib), (2.0, 0.5, 4.0));
    }
}
