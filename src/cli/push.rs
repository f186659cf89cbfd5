//! Pushing the metrics to a Prometheus Pushgateway (`--pushgateway URL`, for `run` and
//! `report`), and annotations to Grafana (`--grafana-url URL`, at the end of this file): one PUT of the text format, which replaces what the group held before — the
//! gateway then shows the latest invocation's results. Through ureq: http, or https with
//! rustls (ring, as kube's client) and the webpki roots.

use std::time::Duration;

/// The push URL for `given`: as given when it names a group (`…/metrics/job/<job>[/<label>/
/// <value>…]`), else with `/metrics/job/nodedown` appended. Only `http://` and `https://`.
pub fn push_url(given: &str) -> Result<String, String> {
    let lower = given.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!(
            "--pushgateway {given}: not an http:// or https:// URL (e.g. http://pushgateway:9091)"
        ));
    }
    let trimmed = given.trim_end_matches('/');
    if trimmed.contains("/metrics/job/") {
        Ok(trimmed.to_string())
    } else if trimmed.ends_with("/metrics") || trimmed.contains("/metrics/") {
        Err(format!(
            "--pushgateway {given}: a push URL names its job: …/metrics/job/<job>, or give the gateway's address alone"
        ))
    } else {
        Ok(format!("{trimmed}/metrics/job/nodedown"))
    }
}

/// PUTs `text` (Prometheus text format) to the group at `url` ([`push_url`]'s); the gateway's
/// own words when it refuses.
pub fn push(url: &str, text: &str) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(20)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent
        .put(url)
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .send(text)
        .map_err(|e| format!("push to {url}: {e}"))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body = response
        .body_mut()
        .with_config()
        .limit(4096)
        .read_to_string()
        .unwrap_or_default();
    Err(format!("push to {url}: {status}: {}", body.trim()))
}

/// Pushes `text` to the group `given` names ([`push_url`]); says where on stderr unless
/// `quiet`.
pub fn push_to(given: &str, text: &str, quiet: bool) -> Result<(), String> {
    let url = push_url(given)?;
    push(&url, text)?;
    if !quiet {
        eprintln!("metrics pushed to {url}");
    }
    Ok(())
}

/// `--pushgateway`'s value checked before anything is done: `Err` is bad input (exit 2).
pub fn check(given: Option<&str>) -> Result<(), u8> {
    match given.map(push_url) {
        Some(Err(e)) => {
            super::error(e);
            Err(super::EXIT_BAD_INPUT)
        }
        _ => Ok(()),
    }
}

/// Where `--grafana-url` sends annotations: `<url>/api/annotations` (Grafana's annotation API).
/// Only `http://` and `https://`.
pub fn grafana_url(given: &str) -> Result<String, String> {
    let lower = given.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!(
            "--grafana-url {given}: not an http:// or https:// URL (e.g. http://grafana:3000)"
        ));
    }
    let base = given.trim_end_matches('/');
    Ok(match base.strip_suffix("/api/annotations") {
        Some(_) => base.to_string(),
        None => format!("{base}/api/annotations"),
    })
}

/// `--grafana-url`'s value checked before anything is done: `Err` is bad input (exit 2).
pub fn check_grafana(given: Option<&str>) -> Result<(), u8> {
    match given.map(grafana_url) {
        Some(Err(e)) => {
            super::error(e);
            Err(super::EXIT_BAD_INPUT)
        }
        _ => Ok(()),
    }
}

/// Posts each of `annotations` to the Grafana at `given`, with the service account token of
/// `NODEDOWN_GRAFANA_TOKEN` when set (`Authorization: Bearer …`); Grafana's own words when it
/// refuses one (then none after it is sent).
pub fn annotate(
    given: &str,
    annotations: &[crate::report::grafana::Annotation],
    quiet: bool,
) -> Result<(), String> {
    let url = grafana_url(given)?;
    let token = std::env::var("NODEDOWN_GRAFANA_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(20)))
        .http_status_as_error(false)
        .build()
        .into();
    for a in annotations {
        let body = serde_json::to_string(a).expect("an annotation serializes");
        let mut req = agent.post(&url).content_type("application/json");
        if let Some(t) = &token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        let mut response = req
            .send(body.as_str())
            .map_err(|e| format!("annotate at {url}: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            let text = response
                .body_mut()
                .with_config()
                .limit(4096)
                .read_to_string()
                .unwrap_or_default();
            return Err(format!("annotate at {url}: {status}: {}", text.trim()));
        }
    }
    if !quiet {
        eprintln!("{} annotations sent to {url}", annotations.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::push_url;

    #[test]
    fn a_gateway_address_gets_the_job_a_group_url_stays() {
        assert_eq!(
            push_url("http://pgw:9091").unwrap(),
            "http://pgw:9091/metrics/job/nodedown"
        );
        assert_eq!(
            push_url("http://pgw:9091/").unwrap(),
            "http://pgw:9091/metrics/job/nodedown"
        );
        assert_eq!(
            push_url("https://pgw/metrics/job/qualify/cluster/staging").unwrap(),
            "https://pgw/metrics/job/qualify/cluster/staging"
        );
        assert!(push_url("pgw:9091").unwrap_err().contains("not an http://"));
        assert!(push_url("http://pgw:9091/metrics")
            .unwrap_err()
            .contains("names its job"));
    }
}
