//! The write outage: from the last acknowledged write before the fault to the first write
//! acknowledged after it (by any writer) while the failover was watched, on the harness's clock
//! (ms since the run started). When no write was acknowledged again before the watch ended, the
//! outage is still open there: it lasted at least that long.

use super::Ack;

/// The outage on the run's clock: the receive times of the two acknowledgements that bound it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// The last ack before the fault.
    pub from_ms: u64,
    /// The first ack after it that advanced the ledger; when not `restored`, the end of the
    /// watch (the outage went on past it).
    pub until_ms: u64,
    /// A write was acknowledged again within the watch. When false the duration is a lower
    /// bound.
    pub restored: bool,
}

impl Outage {
    pub fn duration_ms(&self) -> u64 {
        self.until_ms - self.from_ms
    }
}

/// `None` when there was no ack before the fault (nothing to measure from). `watch_end_ms` is
/// when the harness stopped watching the failover (its window closed: recovery timeout or
/// fault healed); an ack after it is the teardown's doing and ends nothing. Without a new ack
/// by then the outage is open: `until_ms` is `watch_end_ms` and `restored` is false.
pub fn write_outage(acks: &[Ack], fault_at_ms: u64, watch_end_ms: u64) -> Option<Outage> {
    let before = acks
        .iter()
        .filter(|a| a.seq >= 1 && a.at_ms <= fault_at_ms)
        .max_by_key(|a| a.at_ms)?;
    let after = acks
        .iter()
        .filter(|a| a.seq >= 1 && a.at_ms > fault_at_ms && a.at_ms <= watch_end_ms)
        .filter(|a| a.incarnation != before.incarnation || a.seq > before.seq)
        .min_by_key(|a| a.at_ms);
    Some(match after {
        Some(after) => Outage {
            from_ms: before.at_ms,
            until_ms: after.at_ms,
            restored: true,
        },
        None => Outage {
            from_ms: before.at_ms,
            until_ms: watch_end_ms.max(fault_at_ms),
            restored: false,
        },
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
            write_outage(&acks, 1000, 60_000).map(|o| o.duration_ms()),
            Some(19_100)
        );
        assert_eq!(
            write_outage(&acks, 1000, 60_000),
            Some(Outage {
                from_ms: 900,
                until_ms: 20_000,
                restored: true,
            })
        );
        // a repeated poll of the old writer's last seq after the fault does not end the outage
        let acks2 = vec![ack(900, "a", 9), ack(1500, "a", 9), ack(5000, "b", 10)];
        assert_eq!(
            write_outage(&acks2, 1000, 60_000).map(|o| o.duration_ms()),
            Some(4100)
        );
        assert_eq!(
            write_outage(&acks[2..], 1000, 60_000),
            None,
            "nothing before the fault"
        );
    }

    #[test]
    fn an_outage_not_restored_by_the_end_of_the_watch_is_open_there() {
        let acks = vec![ack(100, "a", 5), ack(900, "a", 9)];
        assert_eq!(
            write_outage(&acks, 1000, 91_000),
            Some(Outage {
                from_ms: 900,
                until_ms: 91_000,
                restored: false,
            }),
            "never acknowledged again: at least 90.1 s, open"
        );
        // a write acknowledged only after the watch ended (the teardown healed the node) does
        // not close it
        let late = vec![ack(900, "a", 9), ack(95_000, "b", 10)];
        let o = write_outage(&late, 1000, 91_000).expect("an outage");
        assert!(!o.restored);
        assert_eq!(o.duration_ms(), 90_100);
        // the first new ack exactly at the end of the watch still counts
        let edge = vec![ack(900, "a", 9), ack(91_000, "b", 10)];
        assert!(
            write_outage(&edge, 1000, 91_000)
                .expect("an outage")
                .restored
        );
    }
}
