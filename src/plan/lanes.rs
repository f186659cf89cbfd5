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

/// The nodes an invocation is confined to (`--nodes`), checked against the cluster's: each
/// once, in name order; `None` when none were given (the whole cluster). A name that is no
/// node of the cluster is refused with the nearest one it may have meant.
pub fn scope(given: &[String], cluster: &[String]) -> Result<Option<Vec<String>>, String> {
    if given.is_empty() {
        return Ok(None);
    }
    if given.iter().any(|n| n.trim().is_empty()) {
        return Err("an empty node name (a stray comma?): name the nodes as `--nodes A,B`".into());
    }
    let mut nodes: Vec<String> = given.iter().map(|n| n.trim().to_string()).collect();
    nodes.sort();
    nodes.dedup();
    let unknown: Vec<String> = nodes
        .iter()
        .filter(|n| !cluster.contains(n))
        .map(|n| match closest(n, cluster) {
            Some(near) => format!("{n} (did you mean {near}?)"),
            None => n.clone(),
        })
        .collect();
    if !unknown.is_empty() {
        let mut all = cluster.to_vec();
        all.sort();
        return Err(format!(
            "no node {} in this cluster; its nodes are: {}",
            unknown.join(", "),
            all.join(", ")
        ));
    }
    Ok(Some(nodes))
}

/// The node of `names` `word` may have meant (nodedown's one "did you mean" rule).
fn closest<'a>(word: &str, names: &'a [String]) -> Option<&'a str> {
    let refs: Vec<&'a str> = names.iter().map(String::as_str).collect();
    crate::spec::closest(word, &refs)
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

/// What, beyond the runs themselves, decides whether a run can share the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sharing {
    /// `--allow-control-plane`: a fault may hit the control plane every lane shares.
    pub allow_control_plane: bool,
    /// The storage classes whose volumes get their zone before their pods are placed, each
    /// with why ([`early_zone`]): a lane (whole zones) may not reach such a volume.
    pub early_zone: std::collections::BTreeMap<String, String>,
}

impl Sharing {
    pub fn new(allow_control_plane: bool) -> Sharing {
        Sharing {
            allow_control_plane,
            ..Sharing::default()
        }
    }
}

/// Why a class's volumes may get their zone before their pods are placed: the class binds
/// `Immediate` (the provisioner picks the zone when the claim is made) and its driver has
/// topology — `declared` keys (a testdriver file's `TopologyKeys`), else the keys its node
/// plugins publish on their CSINodes. Never for the classes whose volumes nodedown makes
/// itself (without node affinity).
pub fn early_zone(
    class: &str,
    binding_mode: Option<&str>,
    declared: &[String],
    published: &[String],
) -> Option<String> {
    use crate::vocab::{ATTACH_CLASS, LOCAL_CLASS, SHARED_CLASS};
    if binding_mode != Some("Immediate")
        || [ATTACH_CLASS, SHARED_CLASS, LOCAL_CLASS].contains(&class)
    {
        return None;
    }
    let topology = if !declared.is_empty() {
        format!(
            "the testdriver file's TopologyKeys ({})",
            declared.join(", ")
        )
    } else if !published.is_empty() {
        format!(
            "its driver publishes the topology keys {} on its CSINodes",
            published.join(", ")
        )
    } else {
        return None;
    };
    Some(format!(
        "StorageClass {class} binds Immediate and {topology}"
    ))
}

/// Why `run` cannot share the cluster with other runs (it then runs alone, on every worker,
/// once the lanes are idle); `None` when a lane can contain it.
pub fn alone_reason(run: &PlannedRun, sharing: &Sharing) -> Option<String> {
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
    if sharing.allow_control_plane {
        return Some(
            "--allow-control-plane: the fault may hit the control plane, which every lane shares"
                .into(),
        );
    }
    if let Some(why) = sharing.early_zone.get(&run.workload.storage_class) {
        return Some(format!(
            "{why}: its volume's zone is chosen before its pod is placed, and a lane (whole zones) may not reach it"
        ));
    }
    None
}

/// A schedulable worker and its zone (`topology.kubernetes.io/zone`), if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    pub name: String,
    pub zone: Option<String>,
}

impl Worker {
    pub fn new(name: &str, zone: Option<&str>) -> Worker {
        Worker {
            name: name.to_string(),
            zone: zone.map(str::to_string),
        }
    }
}

/// The workers by zone (zones by name, workers without a zone last as one group of their own;
/// names sorted in each). A zone with fewer than `need` workers cannot hold a run and its
/// replacement: such zones are put together in one group after the others, or, when even
/// together they are fewer than `need`, added to the last group.
fn zone_groups(workers: &[Worker], need: usize) -> Vec<Vec<String>> {
    let mut by_zone: std::collections::BTreeMap<(bool, String), Vec<String>> = Default::default();
    for w in workers {
        let key = (w.zone.is_none(), w.zone.clone().unwrap_or_default());
        by_zone.entry(key).or_default().push(w.name.clone());
    }
    let (mut groups, mut small) = (Vec::new(), Vec::new());
    for (_, mut names) in by_zone {
        names.sort();
        if names.len() >= need.max(1) {
            groups.push(names);
        } else {
            small.extend(names);
        }
    }
    if small.len() >= need.max(1) || groups.is_empty() {
        if !small.is_empty() {
            groups.push(small);
        }
    } else if let Some(last) = groups.last_mut() {
        last.extend(small);
    }
    groups
}

/// How many lanes of `need` nodes the workers make room for, no lane mixing parts of zones
/// (see [`split`]).
pub fn room(workers: &[Worker], need: usize) -> usize {
    zone_groups(workers, need)
        .iter()
        .map(|g| g.len() / need.max(1))
        .sum()
}

/// How many lanes the invocation gets: what `parallel` asks for, at most the `room` the
/// workers make (see [`room`]) and as many as there are runs that can go in a lane. 1 means no
/// lanes: every run has the whole cluster.
pub fn lane_count(parallel: Parallel, room: usize, laneable: usize) -> usize {
    let asked = match parallel {
        Parallel::Lanes(n) => n,
        Parallel::Auto => room,
    };
    asked.min(room).min(laneable).max(1)
}

/// Splits `workers` into `count` lanes along their zones, so that a zonal volume can always
/// follow its pod: a lane is either whole zones, or a part of one zone of at least `need`
/// nodes — never a part of a zone together with other nodes, where a pod could start on the
/// zone's only node in the lane and its replacement find no node of the zone. With more
/// zones than lanes, consecutive zones share a lane (as even as they go); with fewer, each zone
/// gets a lane and the rest go to the zones with the most room left, a zone's lanes as even as
/// they go. Workers without a zone are one zone of their own, so on a cluster without zone
/// labels this is consecutive nodes by name, as even as they go.
pub fn split(workers: &[Worker], count: usize, need: usize) -> Vec<Lane> {
    let groups = zone_groups(workers, need);
    let count = count.max(1);
    let need = need.max(1);
    let mut lanes: Vec<Vec<String>> = Vec::new();
    if count < groups.len() {
        let (base, extra) = (groups.len() / count, groups.len() % count);
        let mut rest = groups.as_slice();
        for i in 0..count {
            let (chunk, tail) = rest.split_at(base + usize::from(i < extra));
            lanes.push(chunk.concat());
            rest = tail;
        }
    } else {
        let mut lanes_of = vec![1usize; groups.len()];
        for _ in groups.len()..count {
            let spare = |i: usize| (groups[i].len() / need).saturating_sub(lanes_of[i]);
            match (0..groups.len())
                .filter(|&i| spare(i) > 0)
                .max_by_key(|&i| (spare(i), std::cmp::Reverse(i)))
            {
                Some(i) => lanes_of[i] += 1,
                None => break,
            }
        }
        for (group, n) in groups.iter().zip(lanes_of) {
            let (base, extra) = (group.len() / n, group.len() % n);
            let mut rest = group.as_slice();
            for i in 0..n {
                let (nodes, tail) = rest.split_at(base + usize::from(i < extra));
                lanes.push(nodes.to_vec());
                rest = tail;
            }
        }
    }
    lanes
        .into_iter()
        .enumerate()
        .map(|(i, nodes)| Lane {
            index: i as u32 + 1,
            nodes,
        })
        .collect()
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
    sharing: &Sharing,
) -> Vec<Placement> {
    runs.iter()
        .map(|r| {
            if lanes <= 1 {
                return Placement::Alone(String::new());
            }
            if let Some(why) = alone_reason(r, sharing) {
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
pub fn demand(runs: &[PlannedRun], sharing: &Sharing) -> (usize, usize) {
    let need = runs.iter().map(nodes_needed).max().unwrap_or(2);
    let laneable = place(runs, usize::MAX, need, sharing)
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

    #[test]
    fn parallel_parses_numbers_and_auto() {
        assert_eq!("3".parse::<Parallel>(), Ok(Parallel::Lanes(3)));
        assert_eq!("auto".parse::<Parallel>(), Ok(Parallel::Auto));
        assert!("0".parse::<Parallel>().unwrap_err().contains("1 or more"));
        assert!("two".parse::<Parallel>().is_err());
    }

    fn unzoned(names: &[&str]) -> Vec<Worker> {
        names.iter().map(|n| Worker::new(n, None)).collect()
    }

    fn names(lanes: &[Lane]) -> Vec<String> {
        lanes.iter().map(|l| l.nodes.join(",")).collect()
    }

    /// testenv's fast profile: three zones of two workers.
    fn testenv() -> Vec<Worker> {
        [
            ("nodedown-worker", "zone-a"),
            ("nodedown-worker2", "zone-a"),
            ("nodedown-worker3", "zone-b"),
            ("nodedown-worker4", "zone-b"),
            ("nodedown-worker5", "zone-c"),
            ("nodedown-worker6", "zone-c"),
        ]
        .iter()
        .rev()
        .map(|(n, z)| Worker::new(n, Some(z)))
        .collect()
    }

    #[test]
    fn lane_count_is_bounded_by_room_and_runs() {
        let room6 = room(&unzoned(&["a", "b", "c", "d", "e", "f"]), 2);
        assert_eq!(room6, 3);
        assert_eq!(lane_count(Parallel::Lanes(3), room6, 13), 3);
        assert_eq!(
            lane_count(Parallel::Lanes(4), room6, 13),
            3,
            "6 workers: room for 3"
        );
        assert_eq!(lane_count(Parallel::Auto, room6, 13), 3);
        assert_eq!(room(&unzoned(&["a", "b", "c", "d", "e", "f", "g"]), 2), 3);
        assert_eq!(
            lane_count(Parallel::Auto, room6, 2),
            2,
            "two runs need two lanes"
        );
        assert_eq!(
            lane_count(Parallel::Auto, room(&unzoned(&["a", "b", "c"]), 2), 13),
            1,
            "3 workers: one lane"
        );
        assert_eq!(lane_count(Parallel::Lanes(1), room6, 13), 1);
        assert_eq!(lane_count(Parallel::Auto, room(&[], 2), 13), 1);
        assert_eq!(room(&testenv(), 2), 3);
        // Zones of one worker cannot hold a run and its replacement apart, but together can.
        let ones = [
            ("w1", "z1"),
            ("w2", "z2"),
            ("w3", "z3"),
            ("w4", "z4"),
            ("w5", "z4"),
        ]
        .map(|(n, z)| Worker::new(n, Some(z)));
        assert_eq!(room(&ones, 2), 2);
    }

    #[test]
    fn split_is_disjoint_even_and_sorted() {
        let lanes = split(&unzoned(&["w3", "w1", "w5", "w2", "w4", "w6", "w7"]), 3, 2);
        assert_eq!(names(&lanes), ["w1,w2,w3", "w4,w5", "w6,w7"]);
        assert_eq!(lanes.iter().map(|l| l.index).collect::<Vec<_>>(), [1, 2, 3]);
        let all: Vec<&String> = lanes.iter().flat_map(|l| &l.nodes).collect();
        assert_eq!(all.len(), 7);
        assert_eq!(
            names(&split(&unzoned(&["a", "b", "c", "d", "e", "f"]), 2, 2)),
            ["a,b,c", "d,e,f"],
            "without zones: consecutive nodes by name, as before"
        );
    }

    #[test]
    fn lanes_follow_zones_so_a_zonal_volume_can_follow_its_pod() {
        // One lane per zone.
        assert_eq!(
            names(&split(&testenv(), 3, 2)),
            [
                "nodedown-worker,nodedown-worker2",
                "nodedown-worker3,nodedown-worker4",
                "nodedown-worker5,nodedown-worker6"
            ]
        );
        // Two lanes: whole zones together, never a zone cut in two.
        assert_eq!(
            names(&split(&testenv(), 2, 2)),
            [
                "nodedown-worker,nodedown-worker2,nodedown-worker3,nodedown-worker4",
                "nodedown-worker5,nodedown-worker6"
            ]
        );
        // More lanes than zones: the big zone gets the extra lanes.
        let mut w = testenv();
        w.extend(["x1", "x2", "x3", "x4"].map(|n| Worker::new(n, Some("zone-a"))));
        let lanes = split(&w, 4, 2);
        assert_eq!(lanes.len(), 4);
        for lane in &lanes {
            let zones: std::collections::BTreeSet<_> = lane
                .nodes
                .iter()
                .map(|n| w.iter().find(|x| &x.name == n).unwrap().zone.clone())
                .collect();
            assert_eq!(
                zones.len(),
                1,
                "a lane cut from zones is in one zone: {lane:?}"
            );
            assert!(lane.nodes.len() >= 2, "{lane:?}");
        }
        assert_eq!(lanes.iter().map(|l| l.nodes.len()).sum::<usize>(), 10);
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
        let no = Sharing::new(false);
        let p = place(&runs, 3, 2, &no);
        assert_eq!(p[0], Placement::Lane);
        assert!(matches!(&p[1], Placement::Alone(why) if why.starts_with("remediation external")));
        let p = place(&runs, 3, 2, &Sharing::new(true));
        assert!(matches!(&p[0], Placement::Alone(why) if why.contains("control plane")));
        assert!(place(&runs, 1, 6, &no)
            .iter()
            .all(|p| *p == Placement::Alone(String::new())));
        let p = place(&runs[..1], 3, 1, &no);
        assert_eq!(p[0], Placement::Alone("needs 2 nodes, a lane has 1".into()));
    }

    #[test]
    fn a_class_that_picks_the_zone_before_the_pod_runs_alone() {
        let zone = vec!["topology.kubernetes.io/zone".to_string()];
        let why = early_zone("vendor", Some("Immediate"), &[], &zone).unwrap();
        assert!(
            why.contains("binds Immediate") && why.contains("on its CSINodes"),
            "{why}"
        );
        assert!(early_zone("vendor", Some("Immediate"), &zone, &[])
            .unwrap()
            .contains("TopologyKeys"));
        // Delayed binding, no topology, a mode not read, or volumes nodedown makes itself.
        assert_eq!(
            early_zone("vendor", Some("WaitForFirstConsumer"), &zone, &zone),
            None
        );
        assert_eq!(early_zone("vendor", Some("Immediate"), &[], &[]), None);
        assert_eq!(early_zone("vendor", None, &zone, &zone), None);
        assert_eq!(
            early_zone("nodedown-attach", Some("Immediate"), &[], &zone),
            None
        );
        // Only the runs of that class leave the lanes.
        let mut other = run(RemediationSpec::None);
        other.workload.storage_class = "vendor".into();
        let runs = [run(RemediationSpec::None), other];
        let mut sharing = Sharing::new(false);
        sharing.early_zone.insert("vendor".into(), why);
        let p = place(&runs, 3, 2, &sharing);
        assert_eq!(p[0], Placement::Lane);
        assert!(
            matches!(&p[1], Placement::Alone(w) if w.contains("binds Immediate") && w.contains("may not reach it")),
            "{p:?}"
        );
        assert_eq!(demand(&runs, &sharing), (2, 1));
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

    #[test]
    fn nodes_given_are_checked_against_the_cluster_sorted_and_deduplicated() {
        let cluster: Vec<String> = ["cp", "worker", "worker2", "worker3"]
            .map(String::from)
            .to_vec();
        let given = |g: &[&str]| g.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(scope(&[], &cluster), Ok(None));
        assert_eq!(
            scope(&given(&["worker3", "worker", "worker3"]), &cluster),
            Ok(Some(given(&["worker", "worker3"])))
        );
        let e = scope(&given(&["worker", "wroker9"]), &cluster).unwrap_err();
        assert!(e.contains("no node wroker9"), "{e}");
        assert!(e.contains("cp, worker, worker2, worker3"), "{e}");
        let e = scope(&given(&["worker4"]), &cluster).unwrap_err();
        assert!(e.contains("worker4 (did you mean worker"), "{e}");
        assert!(scope(&given(&["worker", ""]), &cluster)
            .unwrap_err()
            .contains("stray comma"));
    }
}
