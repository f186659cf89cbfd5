//! Grafana annotations of an invocation (`--grafana-url`, for `run` and `report`): per run a
//! region from the fault to the recovery (or the end of the watch) and a point at each key
//! phase, so the user's own dashboards show when nodedown struck and what followed. Pure: the
//! bodies of Grafana's annotation API (`POST /api/annotations`, documented in Grafana's HTTP
//! API reference: `dashboardUID`, `time`, `timeEnd` in epoch ms, `tags`, `text`); the CLI sends
//! them. A run whose time zero's wall clock is unknown (results of nodedown before it recorded
//! it) has none: a mark at a guessed time would mislead.

use super::{Report, RunResult};
use crate::timeline::Phase;
use crate::units::fmt_ms;
use serde::Serialize;

/// One annotation as Grafana's API takes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotation {
    /// The dashboard it belongs to; absent: an organization annotation (shown on any dashboard
    /// whose annotation query selects its tags).
    #[serde(rename = "dashboardUID", skip_serializing_if = "Option::is_none")]
    pub dashboard_uid: Option<String>,
    /// Epoch milliseconds.
    pub time: i64,
    /// A region's end, epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_end: Option<i64>,
    pub tags: Vec<String>,
    pub text: String,
}

/// The phases marked as points: the node gone, the fence and the remediation, the volume, the
/// workload back, and what must not happen.
const MARKED: [Phase; 9] = [
    Phase::NodeNotReady,
    Phase::FenceSucceeded,
    Phase::OutOfServiceTaint,
    Phase::RemediationApplied,
    Phase::Unfenced,
    Phase::VolumeDetached,
    Phase::MultiAttachError,
    Phase::TwoPodsRunning,
    Phase::ReplacementReady,
];

/// Epoch ms of time zero of `run`, from its recorded wall clock.
fn zero_ms(run: &RunResult) -> Option<i64> {
    let t = run.time_zero_at()?;
    let ms = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
    i64::try_from(ms).ok()
}

/// Every annotation of `report`, run by run: the region first, then its points in time order.
pub fn annotations(report: &Report, dashboard: Option<&str>) -> Vec<Annotation> {
    let mut out = Vec::new();
    for exp in &report.experiments {
        for r in &exp.runs {
            let Some(t0) = zero_ms(r) else { continue };
            let tags = vec![
                "nodedown".to_string(),
                format!("experiment:{}", exp.name),
                format!("variant:{}", r.variant),
                format!("verdict:{}", r.verdict.as_str()),
            ];
            let at = |p: Phase| r.phases.iter().find(|x| x.name == p).map(|x| x.at_ms);
            let end = at(Phase::ReplacementReady)
                .or_else(|| at(Phase::RecoveryTimeout))
                .or_else(|| at(Phase::FaultHealed))
                .unwrap_or(0);
            let outcome = r
                .outcome
                .clone()
                .unwrap_or_else(|| super::outcome::of(r))
                .summary;
            out.push(Annotation {
                dashboard_uid: dashboard.map(String::from),
                time: t0,
                time_end: Some(t0 + end as i64),
                tags: tags.clone(),
                text: format!(
                    "nodedown {} ({}): {} on {} — {}",
                    r.id,
                    r.verdict.as_str(),
                    r.fault.as_str(),
                    r.target_node.as_deref().unwrap_or("?"),
                    outcome
                ),
            });
            for p in r.phases.iter().filter(|p| MARKED.contains(&p.name)) {
                let mut tags = tags.clone();
                tags.push(format!("phase:{}", p.name.name()));
                out.push(Annotation {
                    dashboard_uid: dashboard.map(String::from),
                    time: t0 + p.at_ms as i64,
                    time_end: None,
                    tags,
                    text: format!(
                        "{}: {} {} after the fault",
                        r.id,
                        p.name.name(),
                        fmt_ms(p.at_ms)
                    ),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::recorded;

    /// The recorded node-shutdown invocation: a region per run from its time zero (its wall
    /// clock in results.json), the taint run's ending at Ready, the `none` run's at the
    /// recovery timeout; points at the key phases only.
    #[test]
    fn a_region_per_run_and_points_at_its_key_phases() {
        let report = recorded("node-shutdown");
        let a = annotations(&report, Some("abc"));
        let regions: Vec<&Annotation> = a.iter().filter(|x| x.time_end.is_some()).collect();
        assert_eq!(regions.len(), 2);
        let taint = regions
            .iter()
            .find(|x| {
                x.text
                    .starts_with("nodedown node-shutdown/out-of-service-taint/1")
            })
            .unwrap();
        assert_eq!(taint.time_end.unwrap() - taint.time, 25_735, "to Ready");
        assert!(taint.tags.contains(&"verdict:pass".to_string()));
        let none = regions.iter().find(|x| x.text.contains("/none/1")).unwrap();
        assert_eq!(
            none.time_end.unwrap() - none.time,
            90_222,
            "to the recovery timeout"
        );
        let ready: Vec<&Annotation> = a
            .iter()
            .filter(|x| x.tags.contains(&"phase:replacement-ready".to_string()))
            .collect();
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].time, taint.time + 25_735);
        assert!(a.iter().all(|x| x.dashboard_uid.as_deref() == Some("abc")));
        let body = serde_json::to_value(&a[0]).unwrap();
        let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["dashboardUID", "tags", "text", "time", "timeEnd"]);
    }
}
