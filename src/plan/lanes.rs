//! Lanes: disjoint sets of worker nodes on which the runs of one invocation go side by side.
//! A scheduling decision, not a change to what a run is: a run in a lane does what it does
//! alone, with its workload confined to the lane's nodes. Pure.

use super::PlannedRun;
use crate::spec::RemediationSpec;

/// How many lanes `--parallel` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parallel {
    /// This many lanes at most (1: one run after the other, each with the whole cluster).
    Lanes(usize),
    /// As many lanes as the schedulable workers allow.
    Auto,
}

impl std::str::FromStr for Parallel {
    type Err = String;
    fn from_str(s: &str) -> Result<Parallel, String> {
        if s == "auto" {
            return Ok(Parallel::Auto);
        }
        match s.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(Parallel::Lanes(n)),
            _ => Err(format!(
                "`{s}` is neither a number of lanes (1 or more) nor `auto`"
            )),
        }
    }
}

/// One lane: its number (1-based) and its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    pub index: u32,
    pub nodes: Vec<String>,
}

/// The nodes a run needs: the target and one for the replacement. The same for every fault
/// and remediation nodedown has (a deleted or partitioned node is still one node). A
/// StatefulSet of several replicas (a node each) never goes in a lane (see [`alone_reason`]).
pub fn nodes_needed(_run: &PlannedRun) -> usize {
    2
}

/// Why `run` cannot share the cluster with other runs (it then runs alone, on every worker,
/// once the lanes are idle); `None` when a lane can contain it.
pub fn alone_reason(run: &PlannedRun, allow_control_plane: bool) -> Option<String> {
    if run.remediation == RemediationSpec::External {
        return Some(
            "remediation external: a remediator outside nodedown may act on any node, and what it does to another lane's node would be taken for this run's remediation"
                .into(),
        );
    }
    if run.workload.replicas > 1 {
        return Some(format!(
            "replicas: {}: each replica on a node of its own and one more node for the replacement, more than a lane's",
            run.workload.replicas
        ));
    }
    if let Some(zone) = &run.fault.target.zone {
        return Some(format!(
            "target zone {zone}: its nodes are faulted together and the replacements go to other zones, across lanes"
        ));
    }
    if let Some(several) = run.fault.target.several_in_words() {
        return Some(format!(
            "target {several}: several nodes faulted together, and the replacements go to any other worker, across lanes"
        ));
    }
    if allow_control_plane {
        return Some(
            "--allow-control-plane: the fault may hit the control plane, which every lane shares"
                .into(),
        );
    }
    None
}

/// How many lanes the invocation gets: what `parallel` asks for, at most as many as `workers`
/// schedulable workers make room for (each lane needs `need` nodes) and as many as there are
/// runs that can go in a lane. 1 means no lanes: every run has the whole cluster.
pub fn lane_count(parallel: Parallel, workers: usize, need: usize, laneable: usize) -> usize {
    let room = workers / need.max(1);
    let asked = match parallel {
        Parallel::Lanes(n) => n,
        Parallel::Auto => room,
    };
    asked.min(room).min(laneable).max(1)
}

/// Splits `workers` (sorted by name first) into `count` lanes of consecutive nodes, as even
/// as they go (the first lanes get one more when they do not divide).
pub fn split(workers: &[String], count: usize) -> Vec<Lane> {
    let mut sorted = workers.to_vec();
    sorted.sort();
    let count = count.max(1).min(sorted.len().max(1));
    let (base, extra) = (sorted.len() / count, sorted.len() % count);
    let mut lanes = Vec::new();
    let mut rest = sorted.as_slice();
    for i in 0..count {
        let size = base + usize::from(i < extra);
        let (nodes, tail) = rest.split_at(size);
        lanes.push(Lane {
            index: i as u32 + 1,
            nodes: nodes.to_vec(),
        });
        rest = tail;
    }
    lanes
}

/// Where each run goes: in a lane, or alone with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    Lane,
    Alone(String),
}

/// The placement of every run, for an invocation with `lanes` lanes of at least `lane_size`
/// nodes. With one lane (or none) every run is alone, without a reason: that is sequential.
pub fn place(
    runs: &[PlannedRun],
    lanes: usize,
    lane_size: usize,
    allow_control_plane: bool,
) -> Vec<Placement> {
    runs.iter()
        .map(|r| {
            if lanes <= 1 {
                return Placement::Alone(String::new());
            }
            if let Some(why) = alone_reason(r, allow_control_plane) {
                return Placement::Alone(why);
            }
            if nodes_needed(r) > lane_size {
                return Placement::Alone(format!(
                    "needs {} nodes, a lane has {lane_size}",
                    nodes_needed(r)
                ));
            }
            Placement::Lane
        })
        .collect()
}

/// How many nodes the runs need of a lane (the most any of them needs) and how many of them
/// can go in one at all.
pub fn demand(runs: &[PlannedRun], allow_control_plane: bool) -> (usize, usize) {
    let need = runs.iter().map(nodes_needed).max().unwrap_or(2);
    let laneable = place(runs, usize::MAX, need, allow_control_plane)
        .iter()
        .filter(|p| **p == Placement::Lane)
        .count();
    (need, laneable)
}

/// Whether the next run not started yet (`next`, with its placement) can start now, given how
/// many lanes are free and how many runs are going. A run that needs the cluster alone waits
/// for every lane to be idle and holds back the runs after it (the plan's order is kept, as an
/// exclusive test group in cargo-nextest keeps its place).
pub fn can_start(next: Option<&Placement>, free_lanes: usize, running: usize) -> bool {
    match next {
        Some(Placement::Alone(_)) => running == 0,
        Some(Placement::Lane) => free_lanes > 0,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workers(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("w{i}")).collect()
    }

    #[test]
    fn parallel_parses_numbers_and_auto() {
        assert_eq!("3".parse::<Parallel>(), Ok(Parallel::Lanes(3)));
        assert_eq!("auto".parse::<Parallel>(), Ok(Parallel::Auto));
        assert!("0".parse::<Parallel>().unwrap_err().contains("1 or more"));
        assert!("two".parse::<Parallel>().is_err());
    }

    #[test]
    fn lane_count_is_bounded_by_room_and_runs() {
        assert_eq!(lane_count(Parallel::Lanes(3), 6, 2, 13), 3);
        assert_eq!(
            lane_count(Parallel::Lanes(4), 6, 2, 13),
            3,
            "6 workers: room for 3"
        );
        assert_eq!(lane_count(Parallel::Auto, 6, 2, 13), 3);
        assert_eq!(lane_count(Parallel::Auto, 7, 2, 13), 3);
        assert_eq!(
            lane_count(Parallel::Auto, 6, 2, 2),
            2,
            "two runs need two lanes"
        );
        assert_eq!(
            lane_count(Parallel::Auto, 3, 2, 13),
            1,
            "3 workers: one lane"
        );
        assert_eq!(lane_count(Parallel::Lanes(1), 6, 2, 13), 1);
        assert_eq!(lane_count(Parallel::Auto, 0, 2, 13), 1);
    }

    #[test]
    fn split_is_disjoint_even_and_sorted() {
        let lanes = split(
            &["w3", "w1", "w5", "w2", "w4", "w6", "w7"].map(String::from),
            3,
        );
        assert_eq!(
            lanes.iter().map(|l| l.nodes.join(",")).collect::<Vec<_>>(),
            ["w1,w2,w3", "w4,w5", "w6,w7"]
        );
        assert_eq!(lanes.iter().map(|l| l.index).collect::<Vec<_>>(), [1, 2, 3]);
        let all: Vec<&String> = lanes.iter().flat_map(|l| &l.nodes).collect();
        assert_eq!(all.len(), 7);
        assert_eq!(
            split(&workers(6), 3)
                .iter()
                .map(|l| l.nodes.len())
                .collect::<Vec<_>>(),
            [2, 2, 2]
        );
    }

    fn run(remediation: RemediationSpec) -> PlannedRun {
        crate::plan::fixtures::planned(
            "node-shutdown",
            "v",
            1,
            remediation,
            std::time::Duration::from_secs(60),
            Default::default(),
        )
    }

    #[test]
    fn external_remediation_and_control_plane_faults_run_alone() {
        let runs = [run(RemediationSpec::None), run(RemediationSpec::External)];
        let p = place(&runs, 3, 2, false);
        assert_eq!(p[0], Placement::Lane);
        assert!(matches!(&p[1], Placement::Alone(why) if why.starts_with("remediation external")));
        let p = place(&runs, 3, 2, true);
        assert!(matches!(&p[0], Placement::Alone(why) if why.contains("control plane")));
        assert!(place(&runs, 1, 6, false)
            .iter()
            .all(|p| *p == Placement::Alone(String::new())));
        let p = place(&runs[..1], 3, 1, false);
        assert_eq!(p[0], Placement::Alone("needs 2 nodes, a lane has 1".into()));
    }

    #[test]
    fn a_run_alone_waits_for_idle_lanes_and_holds_back_the_rest() {
        let (lane, alone) = (Placement::Lane, Placement::Alone("x".into()));
        assert!(can_start(Some(&lane), 1, 2));
        assert!(!can_start(Some(&lane), 0, 3), "no free lane");
        assert!(!can_start(Some(&alone), 2, 1), "one run still going");
        assert!(can_start(Some(&alone), 3, 0));
        assert!(!can_start(None, 3, 0));
    }
}
