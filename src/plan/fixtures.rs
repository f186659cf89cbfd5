//! Test support shared by the pure modules' tests: planned runs as the verdict, report and
//! lane tests build them, and the recorded event fixtures (from the timeline's tests). Compiled
//! for tests only; production code never imports it.

use super::PlannedRun;
use crate::spec::Bound;
use crate::spec::{
    ClusterSpec, Expectations, FaultKind, FaultSpec, RemediationSpec, Target, Timeouts,
    WorkloadKind, WorkloadSpec,
};
use std::path::PathBuf;
use std::time::Duration;

// The recorded event fixtures and their parser live with the timeline's tests.
pub(crate) use crate::timeline::fixtures::{
    parse as events, FORCE_DELETE, NONE_TIMEOUT, OOS_TAINT,
};

pub(crate) fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

pub(crate) fn bound(s: u64) -> Option<Bound> {
    Some(Bound { max: secs(s) })
}

/// A planned run of the `writer` workload under a node shutdown.
pub(crate) fn planned(
    experiment: &str,
    variant: &str,
    repetition: u32,
    remediation: RemediationSpec,
    recovery: Duration,
    expect: Expectations,
) -> PlannedRun {
    PlannedRun {
        id: format!("{experiment}/{variant}/{repetition}"),
        experiment: experiment.into(),
        file: PathBuf::from(format!("experiments/{experiment}.yaml")),
        variant: variant.into(),
        repetition,
        cluster: ClusterSpec {
            config: Some(PathBuf::from("kind-configs/fast.yaml")),
            ..ClusterSpec::default()
        },
        workload: WorkloadSpec {
            kind: WorkloadKind::Writer,
            replicas: 1,
            instances: 1,
            storage_class: "nodedown-shared".into(),
            size: "1Gi".into(),
            image: None,
            access_mode: Default::default(),
            controller: Default::default(),
            strategy: None,
            volume_mode: Default::default(),
            fill_attach_limit: false,
        },
        fault: FaultSpec {
            kind: FaultKind::NodeShutdown,
            target: Target {
                node_of: "writer-0".into(),
                zone: None,
                nodes: vec![],
                count: None,
            },
            duration: None,
            graceful: false,
        },
        remediation,
        timeouts: Timeouts {
            recovery,
            ..Timeouts::default()
        },
        expect,
        description: None,
        variant_description: None,
    }
}
