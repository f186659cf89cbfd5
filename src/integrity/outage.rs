//! The write outage: from the last acknowledged write before the fault to the first write
//! acknowledged after it (by any writer), on the harness's clock (ms since the run started).

use super::Ack;

/// The outage on the run's clock: the receive times of the two acknowledgements that bound it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// The last ack before the fault.
    pub from_ms: u64,
    /// The first ack after it that advanced the ledger.
    pub until_ms: u64,
}

impl Outage {
    pub fn duration_ms(&self) -> u64 {
        self.until_ms - self.from_ms
    }
}

/// `None` when there was no ack before the fault or none after it (the outage never ended
/// while the harness watched: then it is not a number).
pub fn write_outage(acks: &[Ack], fault_at_ms: u64) -> Option<Outage> {
    let before = acks
        .iter()
        .filter(|a| a.seq >= 1 && a.at_ms <= fault_at_ms)
        .max_by_key(|a| a.at_ms)?;
    let after = acks
        .iter()
        .filter(|a| a.seq >= 1 && a.at_ms > fault_at_ms)
        .filter(|a| a.incarnation != before.incarnation || a.seq > before.seq)
        .min_by_key(|a| a.at_ms)?;
    Some(Outage {
        from_ms: before.at_ms,
        until_ms: after.at_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrity::Incarnation;

    fn ack(at_ms: u64, who: &str, seq: u64) -> Ack {
        Ack {
            at_ms,
            wall: String::new(),
            pod: "ledger-0".into(),
            incarnation: Incarnation::new(who, 1, "n", "ledger-0"),
            seq,
        }
    }

    #[test]
    fn outage_spans_last_ack_before_to_first_new_ack_after() {
        let acks = vec![
            ack(100, "a", 5),
            ack(900, "a", 9),
            ack(20_000, "b", 10),
            ack(20_200, "b", 12),
        ];
        assert_eq!(
            write_outage(&acks, 1000).map(|o| o.duration_ms()),
            Some(19_100)
        );
        assert_eq!(
            write_outage(&acks, 1000),
            Some(Outage {
                from_ms: 900,
                until_ms: 20_000
            })
        );
        // a repeated poll of the old writer's last seq after the fault does not end the outage
        let acks2 = vec![ack(900, "a", 9), ack(1500, "a", 9), ack(5000, "b", 10)];
        assert_eq!(
            write_outage(&acks2, 1000).map(|o| o.duration_ms()),
            Some(4100)
        );
        assert_eq!(
            write_outage(&acks[..2], 1000),
            None,
            "never acknowledged again"
        );
        assert_eq!(
            write_outage(&acks[2..], 1000),
            None,
            "nothing before the fault"
        );
    }
}
