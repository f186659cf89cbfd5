//! kube-controller-manager's counters that say *which path* freed a volume or a pod: the
//! attach/detach controller's forced detaches (`reason` timeout or out-of-service) and PodGC's
//! force deletes. Read through the API server's pod proxy from the controller-manager's
//! `/metrics` (its port 10257 must be reachable and `/metrics` allowed without a token: testenv's
//! kind configs do both; elsewhere the run notes that they could not be read).

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use std::collections::BTreeMap;

/// The metric families kept, by prefix.
pub const COUNTER_PREFIXES: [&str; 2] = [
    "attach_detach_controller_attachdetach_controller_forced_detaches",
    "pod_gc_collector_force_delete_pod",
];

/// The samples of the [`COUNTER_PREFIXES`] families in a Prometheus text exposition, keyed by
/// series (`name{labels}` as written). Comments and other families are skipped; a value that
/// is not a whole non-negative number is skipped.
pub fn parse_counters(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || !COUNTER_PREFIXES.iter().any(|p| line.starts_with(p)) {
            continue;
        }
        // The value follows the series (whose labels may contain spaces inside quotes).
        let series_end = match line.find('}') {
            Some(i) => i + 1,
            None => line.find(' ').unwrap_or(line.len()),
        };
        let (series, rest) = line.split_at(series_end);
        // Counters are whole numbers (Prometheus writes them as floats, e.g. `1` or `1e+06`).
        let value = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0 && v.fract() == 0.0);
        let Some(value) = value else {
            continue;
        };
        out.insert(series.to_string(), value as u64);
    }
    out
}

/// Why kube-controller-manager's counters could not be read (evidence, not a requirement).
#[derive(Debug, thiserror::Error)]
pub enum CountersError {
    #[error("listing kube-controller-manager pods: {0}")]
    List(kube::Error),
    #[error("no pod labelled component=kube-controller-manager in kube-system (a managed control plane?)")]
    NoPod,
    #[error("GET {url}: {source}")]
    Get { url: String, source: kube::Error },
    #[error("no answer within {}s", .0.as_secs())]
    Timeout(std::time::Duration),
}

/// Reads the counters from the kube-controller-manager pod (label
/// `component=kube-controller-manager` in kube-system). Returns the pod read and the samples.
pub async fn read_controller_counters(
    client: &Client,
) -> Result<(String, BTreeMap<String, u64>), CountersError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let list = pods
        .list(&kube::api::ListParams::default().labels("component=kube-controller-manager"))
        .await
        .map_err(CountersError::List)?;
    let pod = list
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .next()
        .ok_or(CountersError::NoPod)?;
    let url = format!("/api/v1/namespaces/kube-system/pods/https:{pod}:10257/proxy/metrics");
    let request = http::Request::get(&url)
        .body(Vec::new())
        .expect("valid request");
    let text = client
        .request_text(request)
        .await
        .map_err(|source| CountersError::Get { url, source })?;
    Ok((pod, parse_counters(&text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic, in the format kube-controller-manager v1.34 writes (families and labels as in
    /// its source: pkg/controller/volume/attachdetach/metrics, pkg/controller/podgc/metrics).
    const TEXT: &str = r#"# HELP attach_detach_controller_attachdetach_controller_forced_detaches [ALPHA] Number of times the A/D Controller performed a forced detach
# TYPE attach_detach_controller_attachdetach_controller_forced_detaches counter
attach_detach_controller_attachdetach_controller_forced_detaches{reason="out-of-service"} 1
# TYPE pod_gc_collector_force_delete_pods_total counter
pod_gc_collector_force_delete_pods_total{namespace="nd-x",reason="out-of-service"} 2
go_gc_cycles_forced_gc_cycles_total 0
attach_detach_controller_total_volumes{plugin_name="kubernetes.io/csi",state="actual_state_of_world"} 3
"#;

    #[test]
    fn keeps_only_the_counters_that_name_a_path() {
        let c = parse_counters(TEXT);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(
            c[r#"attach_detach_controller_attachdetach_controller_forced_detaches{reason="out-of-service"}"#],
            1
        );
        assert_eq!(
            c[r#"pod_gc_collector_force_delete_pods_total{namespace="nd-x",reason="out-of-service"}"#],
            2
        );
    }

    #[test]
    fn skips_values_that_are_not_counts() {
        let c = parse_counters("pod_gc_collector_force_delete_pods_total{a=\"b c\"} 1.5\npod_gc_collector_force_delete_pod_errors_total NaN\npod_gc_collector_force_delete_pods_total{a=\"x y\"} 3\n");
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c["pod_gc_collector_force_delete_pods_total{a=\"x y\"}"], 3);
    }
}
