//! The ledger's on-disk record: 256 bytes, little-endian, checksummed.
//!
//! ```text
//! offset  len  field
//!      0    4  magic "NDLG"
//!      4    2  format version (1)
//!      6    2  reserved (0)
//!      8   36  pod UID, ASCII, zero-padded            ┐
//!     44    8  writer start time, ms since Unix epoch  │ the incarnation
//!     52   64  node name, UTF-8, zero-padded           │ (140 bytes)
//!    116   32  pod name, UTF-8, zero-padded            ┘
//!    148    8  sequence number (1-based, per ledger)
//!    156    8  write time, ms since Unix epoch (the writer's clock; informational)
//!    164    2  payload length (at most 86)
//!    166   86  payload, zero-padded
//!    252    4  CRC-32 (IEEE) of bytes 0..252
//! ```
//!
//! [`view`] validates a record without allocating; [`decode`] builds an owned [`Record`].

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::{Duration, UNIX_EPOCH};

/// Size of one record on disk.
pub const RECORD_LEN: usize = 256;
pub const MAGIC: [u8; 4] = *b"NDLG";
pub const FORMAT_VERSION: u16 = 1;

pub const POD_UID_LEN: usize = 36;
pub const NODE_LEN: usize = 64;
pub const POD_LEN: usize = 32;
/// Largest payload that fits.
pub const MAX_PAYLOAD: usize = OFF_CRC - OFF_PAYLOAD;

const OFF_VERSION: usize = 4;
const OFF_RESERVED: usize = 6;
const OFF_UID: usize = 8;
const OFF_STARTED: usize = OFF_UID + POD_UID_LEN; // 44
const OFF_NODE: usize = OFF_STARTED + 8; // 52
const OFF_POD: usize = OFF_NODE + NODE_LEN; // 116
const OFF_SEQ: usize = OFF_POD + POD_LEN; // 148
const OFF_WRITTEN: usize = OFF_SEQ + 8; // 156
const OFF_PAYLOAD_LEN: usize = OFF_WRITTEN + 8; // 164
const OFF_PAYLOAD: usize = OFF_PAYLOAD_LEN + 2; // 166
const OFF_CRC: usize = RECORD_LEN - 4; // 252

/// Bytes of the incarnation block inside a record (pod UID, start time, node, pod).
pub const INCARNATION_LEN: usize = OFF_SEQ - OFF_UID; // 140
/// The incarnation block as raw bytes: two records are by the same writer iff these are equal.
pub type IncarnationKey = [u8; INCARNATION_LEN];

/// One run of the writer process: a pod (by UID) started at a time on a node. A container
/// restart inside the same pod is a new incarnation (same UID, new start time).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Incarnation {
    pub pod_uid: String,
    /// Writer start time, milliseconds since the Unix epoch (the writer's clock).
    pub started_ms: u64,
    pub node: String,
    pub pod: String,
}

impl Incarnation {
    /// Builds an incarnation whose fields fit the record format (longer names are cut at a
    /// character boundary; a pod UID keeps its ASCII characters only), so that
    /// `decode(encode(r))` gives back exactly what was encoded.
    pub fn new(
        pod_uid: impl Into<String>,
        started_ms: u64,
        node: impl Into<String>,
        pod: impl Into<String>,
    ) -> Self {
        let uid: String = pod_uid
            .into()
            .chars()
            .filter(|c| c.is_ascii() && *c != '\0')
            .take(POD_UID_LEN)
            .collect();
        let clean = |s: String, n: usize| fit(&s.replace('\0', ""), n).to_string();
        Incarnation {
            pod_uid: uid,
            started_ms,
            node: clean(node.into(), NODE_LEN),
            pod: clean(pod.into(), POD_LEN),
        }
    }

    /// The 140 raw bytes this incarnation occupies in a record.
    pub fn key(&self) -> IncarnationKey {
        let mut k = [0u8; INCARNATION_LEN];
        put_text(&mut k[..POD_UID_LEN], &self.pod_uid);
        k[POD_UID_LEN..POD_UID_LEN + 8].copy_from_slice(&self.started_ms.to_le_bytes());
        let node = OFF_NODE - OFF_UID;
        put_text(&mut k[node..node + NODE_LEN], &self.node);
        let pod = OFF_POD - OFF_UID;
        put_text(&mut k[pod..pod + POD_LEN], &self.pod);
        k
    }

    /// The start time as RFC 3339 with milliseconds.
    pub fn started_rfc3339(&self) -> String {
        rfc3339_ms(self.started_ms)
    }
}

/// `writer-0/3f2a9c01…@node-x started 2026-05-01T12:00:00.000Z`
impl fmt::Display for Incarnation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short: String = self.pod_uid.chars().take(8).collect();
        let more = if self.pod_uid.chars().count() > 8 {
            "…"
        } else {
            ""
        };
        write!(
            f,
            "{}/{short}{more}@{} started {}",
            self.pod,
            self.node,
            self.started_rfc3339()
        )
    }
}

/// Milliseconds since the epoch as RFC 3339 (pure formatting, no clock).
pub fn rfc3339_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// One record, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub incarnation: Incarnation,
    /// 1-based, per ledger; each writer continues from the last durable one it found.
    pub seq: u64,
    /// The writer's clock when it wrote the record (informational).
    pub written_ms: u64,
    /// At most [`MAX_PAYLOAD`] bytes.
    pub payload: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Every byte is zero: the slot was never written (a preallocated or sparse region).
    #[error("all-zero (unwritten) record")]
    AllZero,
    #[error("bad magic \"{}\" (expected \"NDLG\")", .0.escape_ascii())]
    BadMagic([u8; 4]),
    #[error("unsupported format version {0} (this build reads version {FORMAT_VERSION})")]
    UnsupportedVersion(u16),
    #[error("checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    ChecksumMismatch { stored: u32, computed: u32 },
    #[error("bad length: {field} is {len}, at most {max}")]
    BadLength {
        field: &'static str,
        len: usize,
        max: usize,
    },
    #[error("bad field {field}: {reason}")]
    BadField {
        field: &'static str,
        reason: &'static str,
    },
}

impl RecordError {
    /// A short stable name for reports: `all-zero`, `bad-magic`, `unsupported-version`,
    /// `checksum-mismatch`, `bad-length`, `bad-field`.
    pub fn kind(&self) -> &'static str {
        match self {
            RecordError::AllZero => "all-zero",
            RecordError::BadMagic(_) => "bad-magic",
            RecordError::UnsupportedVersion(_) => "unsupported-version",
            RecordError::ChecksumMismatch { .. } => "checksum-mismatch",
            RecordError::BadLength { .. } => "bad-length",
            RecordError::BadField { .. } => "bad-field",
        }
    }
}

/// Encodes a record. Fields longer than the format allows are cut (names at a character
/// boundary, the payload at [`MAX_PAYLOAD`]); build incarnations with [`Incarnation::new`] to
/// avoid surprises.
pub fn encode(r: &Record) -> [u8; RECORD_LEN] {
    let mut b = [0u8; RECORD_LEN];
    b[..4].copy_from_slice(&MAGIC);
    b[OFF_VERSION..OFF_VERSION + 2].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    b[OFF_UID..OFF_SEQ].copy_from_slice(&r.incarnation.key());
    b[OFF_SEQ..OFF_SEQ + 8].copy_from_slice(&r.seq.to_le_bytes());
    b[OFF_WRITTEN..OFF_WRITTEN + 8].copy_from_slice(&r.written_ms.to_le_bytes());
    let n = r.payload.len().min(MAX_PAYLOAD);
    b[OFF_PAYLOAD_LEN..OFF_PAYLOAD_LEN + 2].copy_from_slice(&(n as u16).to_le_bytes());
    b[OFF_PAYLOAD..OFF_PAYLOAD + n].copy_from_slice(&r.payload[..n]);
    let crc = crc32fast::hash(&b[..OFF_CRC]);
    b[OFF_CRC..].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Validates and decodes a record.
pub fn decode(buf: &[u8; RECORD_LEN]) -> Result<Record, RecordError> {
    view(buf).map(|v| v.to_record())
}

/// Validates a record without allocating; the checker's per-record path.
///
/// Checks, in order: all-zero, magic, version, checksum, payload length, then the fields
/// (reserved = 0, seq ≥ 1, text zero-padded UTF-8, pod UID ASCII).
pub fn view(buf: &[u8; RECORD_LEN]) -> Result<RecordView<'_>, RecordError> {
    if buf.iter().all(|&b| b == 0) {
        return Err(RecordError::AllZero);
    }
    if buf[..4] != MAGIC {
        return Err(RecordError::BadMagic([buf[0], buf[1], buf[2], buf[3]]));
    }
    let version = u16_at(buf, OFF_VERSION);
    if version != FORMAT_VERSION {
        return Err(RecordError::UnsupportedVersion(version));
    }
    let stored = u32::from_le_bytes(buf[OFF_CRC..].try_into().unwrap());
    let computed = crc32fast::hash(&buf[..OFF_CRC]);
    if stored != computed {
        return Err(RecordError::ChecksumMismatch { stored, computed });
    }
    let len = u16_at(buf, OFF_PAYLOAD_LEN) as usize;
    if len > MAX_PAYLOAD {
        return Err(RecordError::BadLength {
            field: "payload length",
            len,
            max: MAX_PAYLOAD,
        });
    }
    if u16_at(buf, OFF_RESERVED) != 0 {
        return Err(RecordError::BadField {
            field: "reserved",
            reason: "not zero",
        });
    }
    if u64_at(buf, OFF_SEQ) == 0 {
        return Err(RecordError::BadField {
            field: "seq",
            reason: "zero (sequence numbers start at 1)",
        });
    }
    let uid = text(&buf[OFF_UID..OFF_STARTED], "pod UID")?;
    if !uid.is_ascii() {
        return Err(RecordError::BadField {
            field: "pod UID",
            reason: "not ASCII",
        });
    }
    text(&buf[OFF_NODE..OFF_POD], "node name")?;
    text(&buf[OFF_POD..OFF_SEQ], "pod name")?;
    Ok(RecordView { buf })
}

/// A validated record, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct RecordView<'a> {
    buf: &'a [u8; RECORD_LEN],
}

impl<'a> RecordView<'a> {
    pub fn incarnation_key(&self) -> &'a IncarnationKey {
        self.buf[OFF_UID..OFF_SEQ].try_into().unwrap()
    }
    pub fn pod_uid(&self) -> &'a str {
        text_unchecked(&self.buf[OFF_UID..OFF_STARTED])
    }
    pub fn started_ms(&self) -> u64 {
        u64_at(self.buf, OFF_STARTED)
    }
    pub fn node(&self) -> &'a str {
        text_unchecked(&self.buf[OFF_NODE..OFF_POD])
    }
    pub fn pod(&self) -> &'a str {
        text_unchecked(&self.buf[OFF_POD..OFF_SEQ])
    }
    pub fn seq(&self) -> u64 {
        u64_at(self.buf, OFF_SEQ)
    }
    pub fn written_ms(&self) -> u64 {
        u64_at(self.buf, OFF_WRITTEN)
    }
    pub fn payload(&self) -> &'a [u8] {
        let n = u16_at(self.buf, OFF_PAYLOAD_LEN) as usize;
        &self.buf[OFF_PAYLOAD..OFF_PAYLOAD + n]
    }
    /// Allocates: the owned incarnation.
    pub fn incarnation(&self) -> Incarnation {
        Incarnation {
            pod_uid: self.pod_uid().to_string(),
            started_ms: self.started_ms(),
            node: self.node().to_string(),
            pod: self.pod().to_string(),
        }
    }
    pub fn to_record(&self) -> Record {
        Record {
            incarnation: self.incarnation(),
            seq: self.seq(),
            written_ms: self.written_ms(),
            payload: self.payload().to_vec(),
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The longest prefix of `s` of at most `n` bytes that ends on a character boundary.
fn fit(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn put_text(dst: &mut [u8], s: &str) {
    let s = fit(s, dst.len());
    dst[..s.len()].copy_from_slice(s.as_bytes());
}

/// A zero-padded UTF-8 field: text up to the first zero byte, zeros after it.
fn text<'a>(field: &'a [u8], name: &'static str) -> Result<&'a str, RecordError> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    if field[end..].iter().any(|&b| b != 0) {
        return Err(RecordError::BadField {
            field: name,
            reason: "not zero-padded",
        });
    }
    std::str::from_utf8(&field[..end]).map_err(|_| RecordError::BadField {
        field: name,
        reason: "not UTF-8",
    })
}

/// Only on fields [`view`] has validated.
fn text_unchecked(field: &[u8]) -> &str {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    std::str::from_utf8(&field[..end]).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Record {
        Record {
            incarnation: Incarnation::new(
                "3f2a9c01-5b6d-4e7f-8a9b-0c1d2e3f4a5b",
                1_777_636_800_000,
                "nodedown-worker2",
                "ledger-0",
            ),
            seq: 42,
            written_ms: 1_777_636_801_234,
            payload: b"hello".to_vec(),
        }
    }

    #[test]
    fn layout_is_as_documented() {
        assert_eq!(OFF_STARTED, 44);
        assert_eq!(OFF_NODE, 52);
        assert_eq!(OFF_POD, 116);
        assert_eq!(OFF_SEQ, 148);
        assert_eq!(OFF_PAYLOAD, 166);
        assert_eq!(MAX_PAYLOAD, 86);
        let b = encode(&sample());
        assert_eq!(&b[..4], b"NDLG");
        assert_eq!(&b[4..6], &[1, 0]);
        assert_eq!(&b[6..8], &[0, 0]);
        assert_eq!(&b[8..12], b"3f2a");
        assert_eq!(u64_at(&b, 148), 42);
        assert_eq!(u16_at(&b, 164), 5);
        assert_eq!(
            u32::from_le_bytes(b[252..].try_into().unwrap()),
            crc32fast::hash(&b[..252])
        );
    }

    #[test]
    fn round_trip() {
        let r = sample();
        assert_eq!(decode(&encode(&r)).unwrap(), r);
        let v_buf = encode(&r);
        let v = view(&v_buf).unwrap();
        assert_eq!(v.incarnation_key(), &r.incarnation.key());
        assert_eq!(v.node(), "nodedown-worker2");
        let mut full = r.clone();
        full.payload = vec![0xab; MAX_PAYLOAD];
        assert_eq!(decode(&encode(&full)).unwrap(), full);
    }

    #[test]
    fn long_fields_are_cut_at_char_boundaries() {
        let node = "ü".repeat(40); // 80 bytes
        let inc = Incarnation::new("x".repeat(50), 1, node, "p".repeat(40));
        assert_eq!(inc.pod_uid.len(), 36);
        assert_eq!(inc.node.len(), 64);
        assert_eq!(inc.pod.len(), 32);
        let r = Record {
            incarnation: inc,
            seq: 1,
            written_ms: 0,
            payload: vec![],
        };
        assert_eq!(decode(&encode(&r)).unwrap(), r);
    }

    #[test]
    fn errors_are_told_apart() {
        assert_eq!(decode(&[0; RECORD_LEN]), Err(RecordError::AllZero));
        let good = encode(&sample());

        let mut b = good;
        b[0] = b'X';
        assert!(matches!(decode(&b), Err(RecordError::BadMagic(_))));

        let mut b = good;
        b[4] = 2;
        assert_eq!(decode(&b), Err(RecordError::UnsupportedVersion(2)));

        let mut b = good;
        b[200] ^= 1;
        assert!(matches!(
            decode(&b),
            Err(RecordError::ChecksumMismatch { .. })
        ));

        // A torn write: the first half made it, the rest is zero.
        let mut b = good;
        b[128..].fill(0);
        assert_eq!(decode(&b).unwrap_err().kind(), "checksum-mismatch");

        let reseal = |mut b: [u8; RECORD_LEN]| {
            let crc = crc32fast::hash(&b[..OFF_CRC]);
            b[OFF_CRC..].copy_from_slice(&crc.to_le_bytes());
            b
        };
        let mut b = good;
        b[OFF_PAYLOAD_LEN..OFF_PAYLOAD_LEN + 2].copy_from_slice(&200u16.to_le_bytes());
        assert!(matches!(
            decode(&reseal(b)),
            Err(RecordError::BadLength { len: 200, .. })
        ));

        let mut b = good;
        b[OFF_SEQ..OFF_SEQ + 8].fill(0);
        assert_eq!(decode(&reseal(b)).unwrap_err().kind(), "bad-field");

        let mut b = good;
        b[OFF_NODE + 60] = b'z'; // text after the padding started
        assert_eq!(decode(&reseal(b)).unwrap_err().kind(), "bad-field");
    }

    #[test]
    fn display_is_short() {
        let s = sample().incarnation.to_string();
        assert_eq!(
            s,
            "ledger-0/3f2a9c01…@nodedown-worker2 started 2026-05-01T12:00:00.000Z"
        );
    }

    #[test]
    fn incarnation_serde_is_camel_case() {
        let j = serde_json::to_value(&sample().incarnation).unwrap();
        assert_eq!(j["podUid"], "3f2a9c01-5b6d-4e7f-8a9b-0c1d2e3f4a5b");
        assert_eq!(j["startedMs"], 1_777_636_800_000u64);
        assert_eq!(j["node"], "nodedown-worker2");
        assert_eq!(j["pod"], "ledger-0");
    }
}
