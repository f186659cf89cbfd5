//! The ledger writer's wire protocol (pure data): the paths it serves and what `GET /status`
//! answers. The writer (`workload::ledger`) serves it; the harness (`observe`) polls it.

use super::record::Incarnation;
use serde::{Deserialize, Serialize};

/// The path of the status endpoint.
pub fn status_url_path() -> &'static str {
    "/status"
}

/// The path of the endpoint that serves the ledger file itself (a snapshot of its length at the
/// request), so the harness can collect it through the API server on any storage.
pub fn ledger_url_path() -> &'static str {
    "/ledger"
}

/// What `GET /status` answers; the harness deserializes it.
///
/// `lastDurableSeq` is the highest seq *this incarnation* has written and fdatasync'ed; 0 until
/// its first record is durable (records found at start belong to earlier incarnations and are
/// reported in `lastSeqAtStart`). The harness records an ack only for values ≥ 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub incarnation: Incarnation,
    pub last_durable_seq: u64,
    /// Valid records in the ledger when this incarnation started.
    pub records_at_start: u64,
    /// The highest seq among them (this incarnation's first seq is one more).
    pub last_seq_at_start: u64,
    /// A torn tail was cut off at start.
    pub torn_tail_truncated: bool,
}
