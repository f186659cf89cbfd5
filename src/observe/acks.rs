//! Acknowledgements of the ledger workload: polls the writer's status through the API server's
//! pod proxy and appends every newly acknowledged sequence number, with its receive time on the
//! run's clock, to `acks.jsonl`. An ack that could not be observed is not an ack: nothing is
//! inferred (a partitioned writer's progress is simply not seen).

use super::Recorder;
use crate::integrity::wire::{status_url_path, Status};
use crate::integrity::Ack;
use crate::timeline::EventKind;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often each ledger's status is polled unless told otherwise (`--ack-interval`): the
/// resolution of the write outage.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// How often the ack pollers ask (`--ack-interval`), or `off`: no polling at all — for measuring
/// what the polling costs the API server; such a run collects no ledger evidence, so its
/// integrity verdicts are unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckInterval {
    Every(Duration),
    Off,
}

impl Default for AckInterval {
    fn default() -> Self {
        AckInterval::Every(POLL_INTERVAL)
    }
}

impl std::str::FromStr for AckInterval {
    type Err = String;
    fn from_str(s: &str) -> Result<AckInterval, String> {
        if s == "off" {
            return Ok(AckInterval::Off);
        }
        let d = crate::spec::duration::parse(s)
            .map_err(|e| format!("`{s}`: {e}; write a duration such as 200ms or 1s, or `off`"))?;
        if d < Duration::from_millis(50) || d > Duration::from_secs(60) {
            return Err(format!(
                "`{s}`: an ack interval is from 50ms to 1m (the write outage is measured to this resolution), or `off`"
            ));
        }
        Ok(AckInterval::Every(d))
    }
}

/// The running ack poller: stopped when dropped.
pub struct AckPoller {
    handle: tokio::task::JoinHandle<()>,
    recorded: Arc<AtomicU64>,
}

impl AckPoller {
    /// How many acks it has recorded so far.
    pub fn recorded(&self) -> u64 {
        self.recorded.load(Ordering::SeqCst)
    }

    /// Waits until it has recorded more than `count` acks, at most `within`; whether it has.
    pub async fn recorded_beyond(&self, count: u64, within: Duration) -> bool {
        let until = tokio::time::Instant::now() + within;
        while self.recorded() <= count {
            if tokio::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        true
    }

    /// Stops it; every ack it recorded is in the file when this returns.
    pub async fn stop(mut self) {
        self.handle.abort();
        let _ = (&mut self.handle).await;
    }
}

impl Drop for AckPoller {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

/// Polls the status port of `target` in `ns` (`pods/<name>`, or `services/<name>` whose
/// endpoints are the Ready pods) through the API server's proxy until stopped, appending acks
/// to `path`. Each ack names the pod of the writer that gave it (from its status).
pub fn spawn_ack_poller(
    client: kube::Client,
    ns: &str,
    target: &str,
    port: u16,
    path: &Path,
    recorder: Arc<Recorder>,
    interval: Duration,
) -> std::io::Result<AckPoller> {
    let recorded = Arc::new(AtomicU64::new(0));
    let count = recorded.clone();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let url = format!(
        "/api/v1/namespaces/{ns}/{target}:{port}/proxy{}",
        status_url_path()
    );
    let pod = target
        .split_once('/')
        .map_or(target, |(_, name)| name)
        .to_string();
    let handle = tokio::spawn(async move {
        // Highest acknowledged seq seen per incarnation (keyed by pod uid and start time).
        let mut seen: HashMap<(String, u64), u64> = HashMap::new();
        // Failures are expected while the node is down (the pod proxy answers 503): they are
        // recorded once as evidence when they begin and once when they end, never logged.
        let mut failures: u64 = 0;
        loop {
            let request = http::Request::get(&url)
                .body(Vec::new())
                .expect("valid request");
            let answer =
                match tokio::time::timeout(Duration::from_secs(2), client.request_text(request))
                    .await
                {
                    Err(_) => Err("no answer within 2s".to_string()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Ok(Ok(text)) => serde_json::from_str::<Status>(&text)
                        .map_err(|e| format!("not a ledger status: {e}")),
                };
            match answer {
                Err(error) => {
                    if failures == 0 {
                        recorder.record(EventKind::ProbeFailing {
                            pod: pod.clone(),
                            error,
                        });
                    }
                    failures += 1;
                }
                Ok(status) => {
                    if failures > 0 {
                        recorder.record(EventKind::ProbeRecovered {
                            pod: pod.clone(),
                            failures,
                        });
                        failures = 0;
                    }
                    let key = (
                        status.incarnation.pod_uid.clone(),
                        status.incarnation.started_ms,
                    );
                    let last = seen.get(&key).copied().unwrap_or(0);
                    if status.last_durable_seq >= 1 && status.last_durable_seq > last {
                        seen.insert(key, status.last_durable_seq);
                        let ack = Ack {
                            at_ms: recorder.elapsed_ms(),
                            wall: humantime::format_rfc3339_millis(std::time::SystemTime::now())
                                .to_string(),
                            pod: status.incarnation.pod.clone(),
                            incarnation: status.incarnation,
                            seq: status.last_durable_seq,
                        };
                        let mut line = serde_json::to_string(&ack).expect("ack serializes");
                        line.push('\n');
                        if let Err(e) = file.write_all(line.as_bytes()) {
                            tracing::error!("cannot append to acks.jsonl: {e}");
                        }
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
            tokio::time::sleep(interval).await;
        }
    });
    Ok(AckPoller { handle, recorded })
}

#[cfg(test)]
mod tests {
    use super::AckInterval;
    use std::time::Duration;

    #[test]
    fn ack_intervals_are_durations_in_range_or_off() {
        assert_eq!("off".parse(), Ok(AckInterval::Off));
        assert_eq!("1s".parse(), Ok(AckInterval::Every(Duration::from_secs(1))));
        assert_eq!(
            AckInterval::default(),
            AckInterval::Every(Duration::from_millis(200))
        );
        let e = "10ms".parse::<AckInterval>().unwrap_err();
        assert!(e.contains("from 50ms to 1m"), "{e}");
        let e = "often".parse::<AckInterval>().unwrap_err();
        assert!(e.contains("or `off`"), "{e}");
    }
}
