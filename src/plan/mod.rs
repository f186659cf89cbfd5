//! Expands experiments (variants × repetitions) into runs. Pure.

pub mod access;
pub mod bundle;
/// The fencing step before an action, for the dry run.
fn fenced_first(fence: Fence) -> &'static str {
    match fence {
        Fence::None => "",
        Fence::Power => "power it off and confirm it is off, then ",
        Fence::Storage => "fence it at its storage (a NetworkFence, until Succeeded), then ",
    }
}

#[cfg(test)]
pub(crate) mod fixtures;
pub mod lanes;
pub mod qualify;

use crate::spec::{
    ClusterSpec, Expectations, Experiment, FaultSpec, Fence, RemediationSpec, Timeouts,
    WorkloadSpec,
};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One execution of one variant of one experiment: one JUnit test case.
/// Written to `<run dir>/run.json` before the run starts; reports are recomputed from it and
/// `events.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedRun {
    /// `<experiment>/<variant>/<repetition>`; also the run's directory below the output dir.
    pub id: String,
    pub experiment: String,
    /// The experiment file it came from.
    pub file: PathBuf,
    pub variant: String,
    /// 1-based.
    pub repetition: u32,
    pub cluster: ClusterSpec,
    pub workload: WorkloadSpec,
    pub fault: FaultSpec,
    pub remediation: RemediationSpec,
    pub timeouts: Timeouts,
    pub expect: Expectations,
    /// The experiment's `description`, and its variant's (absent in run.json files of nodedown
    /// before reports showed them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_description: Option<String>,
}

/// Filters given on the command line.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Overrides every experiment's `repeat`.
    pub repeat: Option<u32>,
    /// Only these variant names (empty: all).
    pub only: Vec<String>,
}

pub use crate::spec::DEFAULT_VARIANT;

/// The `--only` values that name no variant of `experiments`, each with the variant name it is
/// most likely a typo of (when one is close): a value that matches nothing must not silently
/// shrink the invocation.
pub fn unmatched_only<'a>(
    experiments: impl IntoIterator<Item = &'a Experiment>,
    only: &[String],
) -> Vec<(String, Option<String>)> {
    let names: Vec<String> = experiments
        .into_iter()
        .flat_map(|e| {
            e.variant_specs()
                .iter()
                .map(|v| v.name.to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let candidates: Vec<&str> = names.iter().map(String::as_str).collect();
    only.iter()
        .filter(|o| !names.contains(o))
        .map(|o| {
            (
                o.clone(),
                crate::spec::closest(o, &candidates).map(String::from),
            )
        })
        .collect()
}

/// Expands one experiment into its runs, variants in file order, repetitions innermost.
pub fn expand(exp: &Experiment, file: &std::path::Path, opts: &PlanOptions) -> Vec<PlannedRun> {
    let repeat = opts.repeat.unwrap_or(exp.repeat).max(1);
    let mut runs = Vec::new();
    for variant in exp.variant_specs() {
        if !opts.only.is_empty() && !opts.only.iter().any(|o| o == variant.name) {
            continue;
        }
        for repetition in 1..=repeat {
            runs.push(PlannedRun {
                id: format!("{}/{}/{}", exp.name, variant.name, repetition),
                experiment: exp.name.clone(),
                file: file.to_path_buf(),
                variant: variant.name.to_string(),
                repetition,
                cluster: exp.cluster.clone(),
                workload: variant.workload.clone(),
                fault: variant.fault.clone(),
                remediation: variant.remediation.clone(),
                timeouts: variant.timeouts.clone(),
                expect: variant.expect.clone(),
                description: exp.description.clone(),
                variant_description: exp
                    .variants
                    .iter()
                    .find(|v| v.name == variant.name)
                    .and_then(|v| v.description.clone()),
            });
        }
    }
    runs
}

/// What a simulated run (`provider: kwok`) would do, in order, for `--dry-run`.
fn simulated_actions(run: &PlannedRun) -> Vec<String> {
    use crate::units::fmt_duration;
    let nodes = run
        .cluster
        .simulated_nodes
        .unwrap_or(crate::spec::simulated::DEFAULT_SIMULATED_NODES);
    let lost = if run.fault.target.nodes.is_empty() {
        format!("{} node(s)", run.fault.target.node_count())
    } else {
        run.fault.target.nodes.join(", ")
    };
    let w = &run.workload;
    let mut out = vec![
        format!("nodes: {nodes} simulated (kwok) nodes, made if missing, Ready (kwok renews their Leases)"),
        format!("create: namespace nd-{}-{}-{}-<random>, {} instances (a StatefulSet of 1 pod, a {} {} claim and a PersistentVolume of {} each), placed on the {lost} to be lost (the other simulated nodes tainted NoSchedule meanwhile)", run.experiment, run.variant, run.repetition, w.instances, w.size, w.access_mode.as_str(), w.storage_class),
        format!("wait: every instance's pod Running with its volume attached (at most {})", fmt_duration(run.timeouts.steady_state)),
        format!("inject: node-shutdown on {lost} at once: kwok stops their heartbeats (each heal journaled first)"),
    ];
    match &run.remediation {
        crate::spec::RemediationSpec::OutOfServiceTaint { after, .. } => out.push(format!(
            "remediate: out-of-service taint on each lost node {} it is seen NotReady",
            if after.is_zero() {
                "the moment".to_string()
            } else {
                format!("{} after", fmt_duration(*after))
            }
        )),
        _ => out.push("remediate: nothing (the control plane alone)".into()),
    }
    out.push(format!(
        "recover: wait for every instance's replacement Running with its volume attached (at most {})",
        fmt_duration(run.timeouts.recovery)
    ));
    out.push("heal: heartbeats back, taints removed, the namespace and its volumes deleted".into());
    out
}

/// Every action a run would take, in order, for `--dry-run` (pure: nothing is looked up; the
/// target node is known only when the run starts).
pub fn actions(run: &PlannedRun) -> Vec<String> {
    use crate::spec::{FaultKind, RemediationSpec, WorkloadKind};
    if run.cluster.provider == crate::spec::Provider::Kwok {
        return simulated_actions(run);
    }
    use crate::units::fmt_duration;
    let w = &run.workload;
    let app = match w.kind {
        WorkloadKind::Writer => "writer",
        WorkloadKind::Ledger => "ledger",
    };
    let target = &run.fault.target.pod(w.kind);
    let workers = if w.replicas > 1 {
        format!(
            "at least {} schedulable workers (a node for each replica and one for the replacement)",
            w.replicas + 1
        )
    } else {
        "at least two schedulable workers".to_string()
    };
    let replicas = if w.replicas > 1 {
        format!(
            "{} replicas, each on a node of its own (required pod anti-affinity), each its own claim and ledger",
            w.replicas
        )
    } else {
        "1 replica".to_string()
    };
    let mut out = vec![
        format!("check: the run's nodes Ready (all nodes; in a lane, the lane's nodes and the control plane), no out-of-service taint on them, {workers}"),
        format!(
            "create: namespace nd-{}-{}-{}-<random>, {} `{app}` ({replicas}, {} {} on storage class {}{})",
            run.experiment,
            run.variant,
            run.repetition,
            w.controller.as_str(),
            w.size,
            w.access_mode.as_str(),
            w.storage_class,
            if ["nodedown-shared", "nodedown-attach"].contains(&w.storage_class.as_str()) {
                ", PersistentVolumes made by nodedown"
            } else {
                ""
            }
        ),
        format!(
            "wait: {} Running and Ready (at most {})",
            if w.replicas > 1 {
                format!("{app}-0 to {app}-{}, each on a node of its own", w.replicas - 1)
            } else {
                target.to_string()
            },
            fmt_duration(run.timeouts.steady_state)
        ),
    ];
    if w.instances > 1 {
        out.insert(2, format!(
            "fleet: {} instances ({}, {}-i1, …), each its own StatefulSet, claim and volume, all started on {}",
            w.instances,
            app,
            app,
            match run.fault.target.several_in_words() {
                Some(nodes) => format!("{nodes}, spread"),
                None => "one node".to_string(),
            }
        ));
    }
    let node = match run.fault.target.several_in_words() {
        Some(nodes) => format!("{nodes} (at the same instant)"),
        None => format!("the node of {target}"),
    };
    if w.fill_attach_limit {
        out.push(format!(
            "fill: every other node the replacement may go to (the lane's, else the cluster's schedulable workers) up to the attach limit {}'s driver publishes on it (its CSINode allocatable count), with pods holding one claim each; wait until they are Running (at most {})",
            w.storage_class,
            fmt_duration(run.timeouts.steady_state)
        ));
    }
    out.push(match run.fault.kind {
        FaultKind::NodeShutdown if run.fault.graceful => {
            format!("fault: shut {node} down cleanly (systemctl poweroff in the node)")
        }
        FaultKind::NodeShutdown => format!("fault: power off {node} (hard)"),
        FaultKind::KubeletStop => format!("fault: stop the kubelet on {node}"),
        FaultKind::NetworkPartition => {
            format!("fault: cut {node} off from the control plane and the other nodes")
        }
        FaultKind::PodDelete => format!("fault: delete {target} (graceful; its node stays up)"),
        FaultKind::ContainerKill => {
            format!("fault: SIGKILL the main container of {target} in {node}'s runtime")
        }
        FaultKind::NodeFreeze => match run.fault.duration {
            Some(d) => format!(
                "fault: freeze {node}, thaw it {} later (its old pod resumes)",
                fmt_duration(d)
            ),
            None => format!("fault: freeze {node} until the heal"),
        },
    });
    if let Some(after) = run.remediation.after() {
        let what = match &run.remediation {
            RemediationSpec::OutOfServiceTaint {
                fence: Fence::Power,
                ..
            } => "power it off, confirm it is off, then add the out-of-service taint".to_string(),
            RemediationSpec::OutOfServiceTaint {
                fence: Fence::Storage,
                lift_after,
                ..
            } => format!(
                "fence it at its storage (a NetworkFence, until Succeeded), then add the out-of-service taint{}",
                lift_after.map_or(String::new(), |d| format!(
                    "; lift both {} later while the fault lasts (liftAfter)",
                    fmt_duration(d)
                ))
            ),
            RemediationSpec::OutOfServiceTaint { .. } => {
                "add the out-of-service taint (no fencing)".to_string()
            }
            RemediationSpec::ForceDeletePod { fence, .. } => {
                format!("{}force-delete {target} (grace period 0)", fenced_first(*fence))
            }
            RemediationSpec::DeleteNode { .. } => "delete the Node object".to_string(),
            RemediationSpec::DeleteVolumeattachment { fence, .. } => format!(
                "{}force-delete {target} (grace period 0), then delete the VolumeAttachments of its volumes on that node",
                fenced_first(*fence)
            ),
            RemediationSpec::None | RemediationSpec::External => {
                unreachable!("none and external have no delay")
            }
        };
        out.push(format!(
            "remediate: {} after the node is NotReady: {what}",
            fmt_duration(after)
        ));
    } else if run.remediation == RemediationSpec::External {
        out.push(
            "remediate: nothing; watch for a remediator that is not nodedown (an out-of-service taint, a deleted pod, Node or VolumeAttachment) and name who acted"
                .to_string(),
        );
    } else {
        out.push("remediate: nothing (observe only)".to_string());
    }
    out.push(format!(
        "observe: until a replacement is Ready, at most {} from the fault",
        fmt_duration(run.timeouts.recovery)
    ));
    if w.kind == WorkloadKind::Ledger {
        out.push(if w.replicas > 1 {
            "collect: each replica's ledger, then check it against that replica's acknowledged writes; the replicas the fault did not take are expected undisturbed".into()
        } else {
            "collect: the ledger, then check it against the acknowledged writes".into()
        });
    }
    let lift = match run.remediation.fence() {
        Fence::Storage => {
            ", lift the storage fence once the node is back and its kubelet runs no pod of the run"
        }
        _ => "",
    };
    out.push(format!(
        "heal: undo the fault{lift}, remove taints nodedown added, recreate a deleted Node, delete the namespace (at most {} for the node)",
        fmt_duration(run.timeouts.heal)
    ));
    out
}

#[cfg(test)]
mod action_tests {
    use super::*;

    #[test]
    fn dry_run_names_every_step_of_a_fenced_partition() {
        let mut run = crate::plan::fixtures::planned(
            "network-partition",
            "fenced",
            1,
            crate::spec::RemediationSpec::OutOfServiceTaint {
                after: std::time::Duration::ZERO,
                fence: crate::spec::Fence::Power,
                lift_after: None,
            },
            std::time::Duration::from_secs(120),
            Default::default(),
        );
        run.fault.kind = crate::spec::FaultKind::NetworkPartition;
        let a = actions(&run);
        assert!(a[1].starts_with("create: namespace nd-network-partition-fenced-1-"));
        assert!(a
            .iter()
            .any(|l| l.starts_with("fault: cut the node of writer-0 off")));
        assert!(a
            .iter()
            .any(|l| l == "remediate: 0s after the node is NotReady: power it off, confirm it is off, then add the out-of-service taint"));
        assert!(a.iter().any(|l| l.contains("at most 2m from the fault")));
        assert!(a.last().unwrap().starts_with("heal: "));
        assert!(!a.iter().any(|l| l.starts_with("fill: ")));
        // With fillAttachLimit: the fill between the steady state and the fault.
        run.workload.fill_attach_limit = true;
        let a = actions(&run);
        let at = |prefix: &str| a.iter().position(|l| l.starts_with(prefix)).unwrap();
        assert!(
            at("wait: ") < at("fill: ") && at("fill: ") < at("fault: "),
            "{a:?}"
        );
        assert!(a[at("fill: ")].contains("CSINode allocatable count"));
    }
}
