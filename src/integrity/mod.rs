//! Integrity (pure): the ledger's record format and the checker that proves, after failover,
//! that no acknowledged record is lost, none is corrupt, and no second writer ever wrote.
//!
//! The ledger writer (`workload::ledger`) appends fixed-size checksummed [`record`]s to one
//! file with an fdatasync after each and reports the last sequence number it has made durable;
//! the harness records each newly acknowledged number as an [`Ack`] (`acks.jsonl`). The
//! [`check()`] function reads the ledger as a stream (memory independent of its size) and
//! returns an [`IntegrityReport`] with a three-valued verdict and bounded evidence. No clock,
//! no network: only the bytes it is given.

pub mod check;
mod fence;
mod model;
mod outage;
pub mod record;
mod text;
pub mod wire;

pub use fence::{fence_efficacy, FenceEfficacy, FenceWindow};
pub use outage::{write_outage, Outage};

pub use check::{
    check, check_with, read_acks, Ack, AckError, CheckOptions, IntegrityReport, LostRange,
};
pub use record::{decode, encode, Incarnation, Record, RecordError, RECORD_LEN};

#[cfg(test)]
mod tests;
