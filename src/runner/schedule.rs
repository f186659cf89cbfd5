//! The invocation's real runs on its cluster: which lanes its nodes make ([`form_lanes`], pure
//! over the Nodes read), what decides whether a run may share the cluster ([`sharing`], read
//! from the runs' classes), and the loop that starts each run in the first free lane
//! ([`run_in_lanes`]). The rules themselves (how many lanes, which nodes, which run goes alone)
//! are `plan::lanes`'; this is where they meet the cluster and the clock. The CLI only hands
//! the runs over and prints.

use super::{heal, Interrupt, Progress, RunnerError};
use crate::plan::lanes::{self, can_start, place, Lane, Parallel, Placement, Sharing};
use crate::plan::PlannedRun;
use crate::timeline::Event;
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use std::collections::VecDeque;
use std::future::Future;

/// The lanes an invocation's nodes make for its runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lanes {
    /// `--parallel 1`: one run after the other, each with every node of the invocation.
    NotAsked,
    /// Asked, but the nodes make room for one lane only (said why): one after the other.
    One(String),
    /// Two lanes or more, each with its nodes.
    Formed(Vec<Lane>),
}

impl Lanes {
    /// The lanes to run in (none: one run after the other).
    pub fn into_lanes(self) -> Vec<Lane> {
        match self {
            Lanes::Formed(l) => l,
            _ => vec![],
        }
    }
}

/// The lanes of an invocation's runs on `nodes` (the cluster's Nodes as read): the schedulable
/// workers but the one nodedown runs on and any outside `scope` (`--nodes`), grouped by zone,
/// as many lanes as `parallel` asks and they make room for (pure).
pub fn form_lanes(
    nodes: &[Node],
    runs: &[PlannedRun],
    sharing: &Sharing,
    parallel: Parallel,
    runner_node: Option<&str>,
    scope: Option<&[String]>,
) -> Lanes {
    if parallel == Parallel::Lanes(1) {
        return Lanes::NotAsked;
    }
    let mut names = heal::schedulable_workers(nodes);
    // The node nodedown runs on is in no lane: nothing of a run goes there; nor is a node
    // outside the invocation's (`--nodes`).
    names.retain(|w| Some(w.as_str()) != runner_node && scope.is_none_or(|s| s.contains(w)));
    let workers: Vec<lanes::Worker> = names
        .iter()
        .map(|name| {
            let zone = nodes
                .iter()
                .find(|n| n.metadata.name.as_ref() == Some(name))
                .and_then(|n| n.metadata.labels.as_ref())
                .and_then(|l| l.get(crate::spec::ZONE_LABEL));
            lanes::Worker::new(name, zone.map(String::as_str))
        })
        .collect();
    let (need, laneable) = lanes::demand(runs, sharing);
    let count = lanes::lane_count(parallel, lanes::room(&workers, need), laneable);
    if count <= 1 {
        return Lanes::One(format!(
            "--parallel: {} schedulable worker(s) and {laneable} run(s) that can share the cluster make room for one lane; the runs go one after the other",
            workers.len()
        ));
    }
    Lanes::Formed(lanes::split(&workers, count, need))
}

/// What decides whether a run can share the cluster: `--allow-control-plane`, and the classes
/// of the runs that get their volumes' zones before their pods (read from each class and its
/// driver's CSINodes; a class not read is taken to be laneable). Nothing is read for
/// `--parallel 1` unless the invocation is `confined` to some nodes (`--nodes`), where such a
/// class cannot run at all ([`unconfinable`]).
pub async fn sharing(
    client: &Client,
    runs: &[PlannedRun],
    parallel: Parallel,
    allow_control_plane: bool,
    confined: bool,
) -> Sharing {
    let mut sharing = Sharing::new(allow_control_plane);
    if parallel == Parallel::Lanes(1) && !confined {
        return sharing;
    }
    let classes: std::collections::BTreeSet<&str> = runs
        .iter()
        .map(|r| r.workload.storage_class.as_str())
        .collect();
    let api = kube::Api::<k8s_openapi::api::storage::v1::StorageClass>::all(client.clone());
    for class in classes {
        let Ok(Some(sc)) = api.get_opt(class).await else {
            continue;
        };
        let mode = sc.volume_binding_mode.as_deref().unwrap_or("Immediate");
        let keys = super::driver_facts(client, &sc.provisioner)
            .await
            .map(|f| f.topology_keys)
            .unwrap_or_default();
        if let Some(why) = lanes::early_zone(class, Some(mode), &[], &keys) {
            sharing.early_zone.insert(class.to_string(), why);
        }
    }
    sharing
}

/// Why an invocation confined to `scope` (`--nodes`) cannot carry out its runs, if it cannot
/// (pure): a class whose volumes get their zone before their pods are placed may put a volume
/// in a zone none of those nodes is in, where no pod of the run may go — unless the scope holds
/// every schedulable worker of `nodes` (then it confines nothing).
pub fn unconfinable(
    sharing: &Sharing,
    runs: &[PlannedRun],
    nodes: &[Node],
    scope: &[String],
) -> Option<String> {
    let workers = heal::schedulable_workers(nodes);
    if workers.iter().all(|w| scope.contains(w)) {
        return None;
    }
    let why: Vec<String> = runs
        .iter()
        .filter_map(|r| sharing.early_zone.get(&r.workload.storage_class))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    (!why.is_empty()).then(|| {
        format!(
            "{}: a volume's zone is chosen before its pod is placed, and it may be a zone none of these nodes is in, where no pod of the run may go. Give the class volumeBindingMode: WaitForFirstConsumer, or run without --nodes",
            why.join("; ")
        )
    })
}

/// Runs every run: in plan order, each in the first free lane, a run that needs the cluster
/// alone once every lane is idle; `start` runs one (in its lane, or alone with none) with its
/// progress. Nothing starts once `interrupt` has stopped the invocation (the runs going heal
/// themselves); `said` is told each run's failure. Returns whether it was stopped.
pub async fn run_in_lanes<F, Fut>(
    runs: &[PlannedRun],
    lanes: Vec<Lane>,
    sharing: &Sharing,
    progress: &Progress,
    interrupt: &Interrupt,
    said: impl Fn(String),
    mut start: F,
) -> bool
where
    F: FnMut(&PlannedRun, Option<Lane>, Progress) -> Fut,
    Fut: Future<Output = Result<Vec<Event>, RunnerError>>,
{
    use futures::stream::{FuturesUnordered, StreamExt};
    let lane_size = lanes.iter().map(|l| l.nodes.len()).min().unwrap_or(0);
    let placements = place(runs, lanes.len(), lane_size, sharing);
    let parallel = lanes.len() > 1;
    for (run, p) in runs.iter().zip(&placements) {
        if let (true, Placement::Alone(why)) = (parallel, p) {
            progress.step(&format!("{} runs alone: {why}", run.id));
        }
    }
    let mut pending: VecDeque<(usize, &PlannedRun)> = runs.iter().enumerate().collect();
    let mut free = lanes;
    let mut going = FuturesUnordered::new();
    let total = runs.len();
    let (mut started, mut done) = (0usize, 0usize);
    let runs_start = std::time::Instant::now();
    let mut interrupted = false;
    loop {
        // Start what can start (nothing more once interrupted).
        loop {
            let next = pending.front().map(|(i, _)| &placements[*i]);
            if interrupted || !can_start(next, free.len(), going.len()) {
                break;
            }
            let (i, planned) = pending.pop_front().expect("can_start saw one");
            let lane = match placements[i] {
                Placement::Lane => Some(free.remove(0)),
                Placement::Alone(_) => None,
            };
            started += 1;
            let run_progress = if parallel {
                progress.for_lane()
            } else {
                progress.clone()
            };
            let eta = crate::units::eta(runs_start.elapsed(), done, total)
                .map(|left| format!(", ~{} left", crate::units::fmt_duration(left)))
                .unwrap_or_default();
            let where_ = match (&lane, parallel) {
                (Some(l), _) => format!("[lane {}] ", l.index),
                (None, true) => "[alone] ".to_string(),
                (None, false) => String::new(),
            };
            run_progress.set_run(&format!("{where_}[{started}/{total}{eta}] {}", planned.id));
            let run = start(planned, lane.clone(), run_progress);
            let id = planned.id.clone();
            going.push(async move { (lane, id, run.await) });
        }
        let Some((lane, id, result)) = going.next().await else {
            break;
        };
        done += 1;
        if let Some(lane) = lane {
            free.push(lane);
            free.sort_by_key(|l| l.index);
        }
        match result {
            Ok(_) => {}
            Err(RunnerError::Interrupted(stop)) => {
                if !interrupted {
                    said(format!(
                        "{stop}; healing every run going from its journal; stopping"
                    ));
                }
                said(format!("{id}: healed"));
                interrupted = true;
            }
            Err(e) => said(format!("run {id}: {e}")),
        }
        if interrupt.first().is_some() {
            interrupted = true;
        }
    }
    interrupted
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    // Synthetic Nodes: a name, a zone, Ready, and the control-plane role where asked.
    fn node(name: &str, zone: &str, control_plane: bool) -> Node {
        let mut labels = serde_json::Map::new();
        labels.insert(crate::spec::ZONE_LABEL.into(), zone.into());
        if control_plane {
            labels.insert("node-role.kubernetes.io/control-plane".into(), "".into());
        }
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap()
    }

    /// testenv's shape: a control plane and three zones of two workers.
    fn testenv() -> Vec<Node> {
        let mut nodes = vec![node("cp", "zone-a", true)];
        for (i, zone) in ["a", "a", "b", "b", "c", "c"].iter().enumerate() {
            nodes.push(node(&format!("w{}", i + 1), &format!("zone-{zone}"), false));
        }
        nodes
    }

    fn runs(n: usize) -> Vec<PlannedRun> {
        (0..n)
            .map(|i| {
                crate::plan::fixtures::planned(
                    "e",
                    &format!("v{i}"),
                    1,
                    crate::spec::RemediationSpec::None,
                    Duration::from_secs(60),
                    Default::default(),
                )
            })
            .collect()
    }

    #[test]
    fn lanes_are_formed_from_the_invocations_own_schedulable_workers() {
        let nodes = testenv();
        let runs = runs(3);
        let sharing = Sharing::new(false);
        let Lanes::Formed(all) = form_lanes(&nodes, &runs, &sharing, Parallel::Auto, None, None)
        else {
            panic!("three lanes on six workers")
        };
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].nodes, ["w1", "w2"]);
        // Confined to four workers: two lanes, of those four alone.
        let scope: Vec<String> = ["w3", "w4", "w5", "w6"].map(String::from).to_vec();
        let Lanes::Formed(mine) =
            form_lanes(&nodes, &runs, &sharing, Parallel::Auto, None, Some(&scope))
        else {
            panic!("two lanes on four workers")
        };
        let used: Vec<&String> = mine.iter().flat_map(|l| &l.nodes).collect();
        assert_eq!(used, ["w3", "w4", "w5", "w6"]);
        // Confined to two: room for one lane; and nodedown's own node is in none.
        assert!(matches!(
            form_lanes(&nodes, &runs, &sharing, Parallel::Auto, None, Some(&scope[..2])),
            Lanes::One(why) if why.contains("2 schedulable worker(s)")
        ));
        let Lanes::Formed(without) =
            form_lanes(&nodes, &runs, &sharing, Parallel::Auto, Some("w1"), None)
        else {
            panic!("lanes without w1")
        };
        assert!(without.iter().all(|l| !l.nodes.contains(&"w1".to_string())));
        assert_eq!(
            form_lanes(&nodes, &runs, &sharing, Parallel::Lanes(1), None, None),
            Lanes::NotAsked
        );
    }

    #[test]
    fn a_class_that_picks_its_zone_first_cannot_be_confined_to_some_nodes() {
        let nodes = testenv();
        let runs = runs(1);
        let mut sharing = Sharing::new(false);
        let pair: Vec<String> = ["w1", "w2"].map(String::from).to_vec();
        assert_eq!(unconfinable(&sharing, &runs, &nodes, &pair), None);
        sharing.early_zone.insert(
            runs[0].workload.storage_class.clone(),
            "StorageClass x binds Immediate and its driver publishes the topology keys topology.kubernetes.io/zone on its CSINodes".into(),
        );
        let why = unconfinable(&sharing, &runs, &nodes, &pair).unwrap();
        assert!(why.starts_with("StorageClass x binds Immediate"), "{why}");
        assert!(why.contains("WaitForFirstConsumer"), "{why}");
        // Every worker in scope: it confines nothing, so nothing to refuse.
        let all: Vec<String> = (1..=6).map(|i| format!("w{i}")).collect();
        assert_eq!(unconfinable(&sharing, &runs, &nodes, &all), None);
    }

    /// The loop over stand-in runs (futures that sleep): never two runs in one lane at once,
    /// every run once, and none started after a stop.
    #[tokio::test]
    async fn runs_share_no_lane_and_none_starts_after_a_stop() {
        let runs = runs(7);
        let lanes = vec![
            Lane {
                index: 1,
                nodes: vec!["w1".into(), "w2".into()],
            },
            Lane {
                index: 2,
                nodes: vec!["w3".into(), "w4".into()],
            },
        ];
        let busy: Arc<Mutex<Vec<u32>>> = Default::default();
        let log: Arc<Mutex<Vec<String>>> = Default::default();
        let interrupt = Interrupt::without_signals();
        let said: Arc<Mutex<Vec<String>>> = Default::default();
        let stopped = run_in_lanes(
            &runs,
            lanes,
            &Sharing::new(false),
            &Progress::new(true),
            &interrupt,
            |m| said.lock().unwrap().push(m),
            |run, lane, _progress| {
                let (busy, log, interrupt) = (busy.clone(), log.clone(), interrupt.clone());
                let id = run.id.clone();
                async move {
                    let lane = lane.expect("every run here shares the cluster").index;
                    {
                        let mut b = busy.lock().unwrap();
                        assert!(!b.contains(&lane), "two runs in lane {lane} at once");
                        b.push(lane);
                    }
                    log.lock().unwrap().push(id.clone());
                    // The run that stops the invocation ends well before the one beside it.
                    let ms = if id == "e/v2/1" { 5 } else { 60 };
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    busy.lock().unwrap().retain(|l| *l != lane);
                    if id == "e/v2/1" {
                        interrupt.stop(crate::runner::Stop::Signal("SIGINT"));
                        return Err(RunnerError::Interrupted(crate::runner::Stop::Signal(
                            "SIGINT",
                        )));
                    }
                    Ok(vec![])
                }
            },
        )
        .await;
        assert!(stopped);
        let log = log.lock().unwrap().clone();
        // v0 and v1 at once, then v2 and v3; v2's stop lets nothing more start.
        assert_eq!(log, ["e/v0/1", "e/v1/1", "e/v2/1", "e/v3/1"]);
        let said = said.lock().unwrap().clone();
        assert!(said[0].contains("interrupted by SIGINT"), "{said:?}");
        assert!(said.iter().any(|s| s == "e/v2/1: healed"), "{said:?}");
    }
}
