//! Units for humans and for files (pure): durations and the one statistic the reports share.
//!
//! One definition each: every renderer and every verdict formats a duration with
//! [`fmt_duration`] (the form the experiment loader accepts back) or a measured time with
//! [`fmt_ms`], and takes a median with [`median`].

use std::time::Duration;

/// A measured time in milliseconds for humans, always in seconds and up: `0.031s` below a
/// second (every millisecond shown: nodedown's own reaction, a short write outage), `41.2s`
/// below a minute (rounded to tenths), then `2m03s`, `1h02m03s` (rounded to seconds).
pub fn fmt_ms(ms: u64) -> String {
    if ms < 1000 {
        return format!("0.{ms:03}s");
    }
    let tenths = (ms + 50) / 100;
    if tenths < 600 {
        return format!("{}.{}s", tenths / 10, tenths % 10);
    }
    let secs = (ms + 500) / 1000;
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    if h > 0 {
        format!("{h}h{m:02}m{s:02}s")
    } else {
        format!("{m}m{s:02}s")
    }
}

/// A lower bound: `≥ 1m30s` (an outage still open when the watch ended).
pub fn fmt_at_least(ms: u64) -> String {
    format!("≥ {}", fmt_ms(ms))
}

/// A duration as the user writes it in an experiment, without spaces: `2m`, `1m30s`, `7m5s`,
/// `1h`, `250ms`, `0s` (units h, m, s, ms, us, ns, each at most once, largest first). The spec loader reads every output of this function back as the same
/// duration (tested in `spec`).
pub fn fmt_duration(d: Duration) -> String {
    let mut rest = d.as_nanos();
    if rest == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, nanos) in [
        ("h", 3_600_000_000_000u128),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ] {
        let n = rest / nanos;
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
            rest -= n * nanos;
        }
    }
    out
}

/// [`fmt_ms`] of a figure that may be absent: `—` for none (nothing observed is not zero).
pub fn fmt_opt_ms(ms: Option<u64>) -> String {
    ms.map(fmt_ms).unwrap_or_else(|| "—".into())
}

/// Milliseconds of a duration, saturating.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The median of `values` — nodedown's one p50 rule, the nearest-rank 50th percentile
/// ([`percentile`]`(values, 50)`): the middle value, or the lower of the two middle values when
/// their number is even. Always a value that was observed (the mean of two middle values is a
/// time no run took), and the same number in every report: run summaries, `compare`,
/// qualification sheets, fleets and simulated curves. `None` for no values.
pub fn median(values: &[u64]) -> Option<u64> {
    percentile(values, 50)
}

/// The nearest-rank percentile `p` (0 < p ≤ 100) of `values`: the smallest value with at least
/// p % of the values at or below it. `None` for no values.
pub fn percentile(values: &[u64], p: u32) -> Option<u64> {
    let mut v = values.to_vec();
    v.sort_unstable();
    if v.is_empty() {
        return None;
    }
    let rank = (u64::from(p.clamp(1, 100)) * v.len() as u64).div_ceil(100) as usize;
    Some(v[rank.clamp(1, v.len()) - 1])
}

/// How a duration spread over what measured it — a variant's runs, a sheet row's runs, a
/// fleet's instances, a simulated run's nodes or instances: nodedown's one distribution type,
/// every figure by the one percentile rule ([`percentile`], nearest rank; the p50 is
/// [`median`]), all in milliseconds, made by [`spread`] alone. `p50Ms` and `maxMs` are in every
/// record; `minMs`, `p90Ms` and `p99Ms` are absent only in records written before this type
/// kept them all (qualification sheets had no min or p99, simulated curves' taint reaction no
/// min or p90, run summaries no p99), never zero for "not kept".
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Spread {
    /// How many values it is over.
    pub count: usize,
    #[serde(default, alias = "min", skip_serializing_if = "Option::is_none")]
    pub min_ms: Option<u64>,
    #[serde(alias = "median")]
    pub p50_ms: u64,
    #[serde(default, alias = "p90", skip_serializing_if = "Option::is_none")]
    pub p90_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<u64>,
    #[serde(alias = "max")]
    pub max_ms: u64,
}

/// The spread of `values`; `None` for no values (nothing measured is not zero).
pub fn spread(values: &[u64]) -> Option<Spread> {
    Some(Spread {
        count: values.len(),
        min_ms: Some(*values.iter().min()?),
        p50_ms: median(values)?,
        p90_ms: percentile(values, 90),
        p99_ms: percentile(values, 99),
        max_ms: *values.iter().max()?,
    })
}

/// The first `shown` of `names` joined by commas, and how many more there are
/// (`a, b, c and 197 more`): a list a person can read however long it is.
pub fn some_of<S: AsRef<str>>(names: &[S], shown: usize) -> String {
    let join = |n: &[S]| n.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", ");
    if names.len() <= shown + 1 {
        return join(names);
    }
    format!("{} and {} more", join(&names[..shown]), names.len() - shown)
}

/// An estimate of the time left after `done` of `total` runs took `elapsed` (their mean per
/// run, times the runs left, rounded to whole seconds); `None` before the first run ends.
pub fn eta(elapsed: std::time::Duration, done: usize, total: usize) -> Option<std::time::Duration> {
    if done == 0 || done >= total {
        return None;
    }
    let per_run = elapsed.as_secs_f64() / done as f64;
    Some(std::time::Duration::from_secs(
        (per_run * (total - done) as f64).round() as u64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn some_of_names_the_first_and_counts_the_rest() {
        let names: Vec<String> = (1..=5).map(|i| format!("n{i}")).collect();
        assert_eq!(some_of(&names, 8), "n1, n2, n3, n4, n5");
        assert_eq!(some_of(&names, 4), "n1, n2, n3, n4, n5");
        assert_eq!(some_of(&names, 2), "n1, n2 and 3 more");
        assert_eq!(some_of::<&str>(&[], 2), "");
    }

    #[test]
    fn eta_is_the_mean_run_times_the_runs_left() {
        use std::time::Duration;
        assert_eq!(eta(Duration::from_secs(100), 0, 4), None);
        assert_eq!(
            eta(Duration::from_secs(100), 2, 5),
            Some(Duration::from_secs(150))
        );
        assert_eq!(eta(Duration::from_secs(100), 5, 5), None);
    }

    #[test]
    fn fmt_ms_for_humans() {
        assert_eq!(fmt_ms(0), "0.000s");
        assert_eq!(fmt_ms(31), "0.031s");
        assert_eq!(fmt_ms(449), "0.449s");
        assert_eq!(fmt_ms(999), "0.999s");
        assert_eq!(fmt_ms(1000), "1.0s");
        assert_eq!(fmt_ms(41_249), "41.2s");
        assert_eq!(fmt_ms(41_250), "41.3s");
        assert_eq!(fmt_ms(59_949), "59.9s");
        assert_eq!(fmt_ms(59_950), "1m00s");
        assert_eq!(fmt_ms(123_000), "2m03s");
        assert_eq!(fmt_ms(422_740), "7m03s");
        assert_eq!(fmt_ms(3_723_000), "1h02m03s");
    }

    #[test]
    fn fmt_duration_is_compact_and_round_trips_through_the_spec_grammar() {
        let cases = [
            (0, "0s"),
            (250, "250ms"),
            (90_000, "1m30s"),
            (120_000, "2m"),
            (425_000, "7m5s"),
            (3_600_000, "1h"),
            (3_723_004, "1h2m3s4ms"),
        ];
        for (ms, text) in cases {
            let d = Duration::from_millis(ms);
            assert_eq!(fmt_duration(d), text);
            assert_eq!(crate::spec::duration::parse(text).unwrap(), d, "{text}");
        }
    }

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[7]), Some(7));
        assert_eq!(median(&[9, 1, 5]), Some(5));
        // Even counts: the lower middle value, one that was observed (not 2.5 nor 2).
        assert_eq!(median(&[1, 2, 3, 10]), Some(2));
        assert_eq!(median(&[1, 4]), Some(1));
        assert_eq!(median(&[4, 3]), Some(3));
        assert_eq!(median(&[u64::MAX, u64::MAX]), Some(u64::MAX));
        // One rule: the median is the p50 the sheets and curves print.
        for v in [vec![5, 1], vec![8, 2, 6, 4], (1..=11).collect::<Vec<u64>>()] {
            assert_eq!(median(&v), percentile(&v, 50), "{v:?}");
        }
    }

    #[test]
    fn nearest_rank_percentiles_and_spread() {
        assert_eq!(percentile(&[], 90), None);
        assert_eq!(percentile(&[5], 90), Some(5));
        let ten: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&ten, 90), Some(9));
        assert_eq!(percentile(&ten, 100), Some(10));
        assert_eq!(percentile(&ten, 50), Some(5));
        assert_eq!(percentile(&[3, 1, 2], 90), Some(3));
        assert_eq!(
            spread(&[30, 10, 20, 40]),
            Some(Spread {
                count: 4,
                min_ms: Some(10),
                p50_ms: 20,
                p90_ms: Some(40),
                p99_ms: Some(40),
                max_ms: 40
            })
        );
        assert_eq!(spread(&[]), None);
        let hundred: Vec<u64> = (1..=100).rev().collect();
        let s = spread(&hundred).unwrap();
        assert_eq!((s.p50_ms, s.p90_ms, s.p99_ms), (50, Some(90), Some(99)));
    }

    /// Synthetic records in the shapes nodedown wrote before the one distribution type: a run
    /// summary's (`min`, `median`, `p90`, `max`), a sheet row's (no min, no p99) and a curve's
    /// taint reaction (no min, no p90) all read, the figures they lack absent.
    #[test]
    fn spreads_written_before_the_one_type_read_with_what_they_lack_absent() {
        let summary: Spread =
            serde_json::from_str(r#"{"count":3,"min":1,"median":2,"p90":3,"max":3}"#).unwrap();
        assert_eq!(
            (
                summary.min_ms,
                summary.p50_ms,
                summary.p90_ms,
                summary.p99_ms
            ),
            (Some(1), 2, Some(3), None)
        );
        let row: Spread =
            serde_json::from_str(r#"{"count":3,"p50Ms":2,"p90Ms":3,"maxMs":3}"#).unwrap();
        assert_eq!((row.min_ms, row.p99_ms, row.max_ms), (None, None, 3));
        let reaction: Spread =
            serde_json::from_str(r#"{"count":20,"p50Ms":31,"p99Ms":127,"maxMs":127}"#).unwrap();
        assert_eq!((reaction.p90_ms, reaction.p99_ms), (None, Some(127)));
        assert_eq!(
            serde_json::to_string(&row).unwrap(),
            r#"{"count":3,"p50Ms":2,"p90Ms":3,"maxMs":3}"#,
            "written back as it was read"
        );
    }
}
