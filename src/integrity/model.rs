//! What the checker reads and what it reports (pure data): the acknowledgements the harness
//! recorded, the checker's limits, and the report with its bounded evidence.

use super::record::Incarnation;
use crate::outcome::Verdict;
use serde::{Deserialize, Serialize};
use std::io::Read;

/// One acknowledged sequence number, as the harness recorded it (a line of `acks.jsonl`).
/// Acked seq N means every seq ≤ N that this incarnation wrote is durable. Seq 0 means the
/// incarnation has made nothing durable yet and is ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack {
    /// When the harness saw it, ms since the Unix epoch (the harness's clock).
    pub at_ms: u64,
    /// The same instant as RFC 3339.
    pub wall: String,
    pub pod: String,
    pub incarnation: Incarnation,
    pub seq: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum AckError {
    #[error("reading acks: {0}")]
    Io(#[from] std::io::Error),
    #[error("acks line {line}: {detail} (each line must be one JSON ack: atMs, wall, pod, incarnation, seq)")]
    Parse { line: usize, detail: String },
}

/// Reads `acks.jsonl`: one [`Ack`] per line, by the JSON-lines rule of [`crate::jsonl`] (blank
/// lines skipped, a torn last line ignored, any other bad line an error).
pub fn read_acks(mut r: impl Read) -> Result<Vec<Ack>, AckError> {
    let mut text = String::new();
    r.read_to_string(&mut text)?;
    crate::jsonl::parse_strict(&text, "acks").map_err(|bad| AckError::Parse {
        line: bad.line,
        detail: bad.detail,
    })
}

/// Limits and tolerances of the checker.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// An incarnation whose first record comes after records of another incarnation is split
    /// brain if it started more than this many ms before that other one (clocks of different
    /// nodes may disagree by this much). Default 0.
    pub clock_skew_ms: u64,
    /// Examples kept per kind of finding. Default 20.
    pub max_examples: usize,
    /// Lost-acknowledged ranges listed (all are counted). Default 100.
    pub max_lost_ranges: usize,
    /// Distinct incarnations tracked; more make the verdict Unknown. Default 10 000.
    pub max_incarnations: usize,
    /// Sequence ranges tracked over all incarnations (one per in-order writer); more make the
    /// verdict Unknown. Default 262 144.
    pub max_seq_ranges: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            clock_skew_ms: 0,
            max_examples: 20,
            max_lost_ranges: 100,
            max_incarnations: 10_000,
            max_seq_ranges: 1 << 18,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntegrityReport {
    pub verdict: Verdict,
    /// Why the verdict is Fail or Unknown, most important first; empty on Pass.
    pub reasons: Vec<String>,
    pub bytes_read: u64,
    pub records_valid: u64,
    /// In order of first appearance in the ledger.
    pub incarnations: Vec<IncarnationSummary>,
    pub acks: AckSummary,
    /// Highest acked seq per incarnation, including incarnations absent from the ledger.
    pub max_acked: Vec<MaxAcked>,
    pub lost_acked: LostAcked,
    pub corrupt: Corruption,
    pub split_brain: SplitBrain,
    pub sequence: SequenceAnomalies,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits_exceeded: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IncarnationSummary {
    pub incarnation: Incarnation,
    /// Seq of its first and last record in file order.
    pub first_seq: u64,
    pub last_seq: u64,
    pub min_seq: u64,
    pub max_seq: u64,
    pub count: u64,
    pub first_offset: u64,
    pub last_offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_acked_seq: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AckSummary {
    /// Acks given.
    pub count: u64,
    /// Acks with seq 0 (nothing durable yet), ignored.
    pub ignored: u64,
    /// Sequence numbers covered by acks: per incarnation, first seq through highest ack.
    pub acknowledged_writes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MaxAcked {
    pub incarnation: Incarnation,
    pub seq: u64,
    pub acks: u64,
    pub in_ledger: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LostAcked {
    /// Acknowledged sequence numbers missing.
    pub count: u64,
    /// Ranges of them (at most `max_lost_ranges`), each with the ack that covered it.
    pub ranges: Vec<LostRange>,
    pub ranges_total: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LostRange {
    pub incarnation: Incarnation,
    pub first: u64,
    pub last: u64,
    /// The earliest ack that covered `first`: it acknowledged seq `acked_seq`.
    pub acked_seq: u64,
    pub acked_at_ms: u64,
    pub acked_wall: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Corruption {
    /// Corrupt slots that fail the verdict: before a later valid record, or in a torn tail that
    /// is not allowed.
    pub count: u64,
    /// Of `count`, those in a torn tail that is not allowed.
    pub in_bad_tail: u64,
    /// Torn slots (undecodable, or a short trailing fragment) in the allowed tail.
    pub allowed_tail: u64,
    /// All-zero slots in the tail: never written.
    pub unwritten_tail: u64,
    /// Bytes of a trailing fragment shorter than a record (0 when the file is aligned).
    pub partial_tail_bytes: u64,
    /// Offset where the tail (everything after the last valid record) starts, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_offset: Option<u64>,
    /// Undecodable slots seen before a read error: whether they were a tail is unknown.
    pub unclassified: u64,
    /// Runs of consecutive slots with the same error, at most `max_examples` per class.
    pub examples: Vec<CorruptRun>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CorruptRun {
    pub offset: u64,
    /// Offset of the last slot of the run.
    pub last_offset: u64,
    pub slots: u64,
    /// Bytes of the last slot (less than 256 for a trailing fragment).
    pub len: u64,
    /// [`RecordError::kind`](super::record::RecordError::kind) or `partial`.
    pub kind: String,
    pub error: String,
    pub in_allowed_tail: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SplitBrain {
    pub detected: bool,
    /// Times an incarnation wrote again after another had written (A … B … A).
    pub interleavings: u64,
    /// Incarnations that first wrote after a newer incarnation had written.
    pub older_after_newer: u64,
    /// Records whose seq another incarnation had already written.
    pub duplicate_seqs: u64,
    /// Acknowledged writes of a newer incarnation whose seqs the ledger holds as records of an
    /// older one: the older writer wrote over them (each also counted as a lost write).
    #[serde(default)]
    pub acked_overwritten: u64,
    /// The incarnations involved.
    pub writers: Vec<Incarnation>,
    pub evidence: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SequenceAnomalies {
    /// Inside one incarnation: a seq more than one above its previous.
    pub gaps: u64,
    /// Inside one incarnation: a seq not above its previous.
    pub regressions: u64,
    /// An incarnation whose first seq is not one above the highest seq before it.
    pub discontinuities: u64,
    pub evidence: Vec<String>,
}
