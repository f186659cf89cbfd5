//! Whether two sets of measured times differ by more than noise: the Mann–Whitney U test
//! (Wilcoxon rank-sum), two-sided, as Go's benchstat uses it. It assumes nothing about the
//! distribution of the times — failover times are lumpy (a controller's 20 s PodGC period, a
//! 5 s node-monitor grace) and far from normal — only that runs are independent.
//!
//! Exact p-values from the distribution of U when there are no ties and the samples are small
//! (the usual case: a handful of repetitions); otherwise the normal approximation with the tie
//! correction and a continuity correction.

/// The smallest two-sided p-value samples of these sizes can reach: below `alpha` they can show
/// a difference; above it no result of theirs could, whatever the times (1 vs 1: 1.0; 3 vs 3:
/// 0.1; 4 vs 4: 0.029; 5 vs 5: 0.0079).
pub fn min_p_value(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    (2.0 / binomial(n1 + n2, n1)).min(1.0)
}

fn binomial(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The two-sided p-value of the Mann–Whitney U test of `a` against `b`; `None` when either is
/// empty. 1.0 when every value is equal.
pub fn mann_whitney_p(a: &[u64], b: &[u64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    // U of `a`: the pairs (x in a, y in b) with x > y, ties counting a half (twice that, to
    // stay in integers).
    let mut u2: u64 = 0;
    for x in a {
        for y in b {
            u2 += match x.cmp(y) {
                std::cmp::Ordering::Greater => 2,
                std::cmp::Ordering::Equal => 1,
                std::cmp::Ordering::Less => 0,
            };
        }
    }
    let mut all: Vec<u64> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    let ties = all.windows(2).any(|w| w[0] == w[1]);
    if !ties && n1 + n2 <= 50 {
        Some(exact_p(n1, n2, u2 / 2))
    } else {
        Some(normal_p(n1, n2, u2 as f64 / 2.0, &all))
    }
}

/// Exact two-sided p without ties: twice the smaller tail of U's distribution at `u`.
fn exact_p(n1: usize, n2: usize, u: u64) -> f64 {
    // counts[i][j][k]: orderings of i values of one sample and j of the other with U = k,
    // built one value at a time; only the last two rows are kept.
    let max_u = n1 * n2;
    let mut prev: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n2 + 1];
    // i = 0: no value of the first sample, U = 0 whatever j.
    for row in prev.iter_mut() {
        row[0] = 1.0;
    }
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n2 + 1];
        cur[0][0] = 1.0;
        for j in 1..=n2 {
            for k in 0..=i * j {
                // The largest value is the first sample's (beats all j of the second: +j) or
                // the second's (+0).
                let from_first = if k >= j { prev[j][k - j] } else { 0.0 };
                let from_second = cur[j - 1][k];
                cur[j][k] = from_first + from_second;
            }
        }
        prev = cur;
    }
    let dist = &prev[n2];
    let total: f64 = dist.iter().sum();
    let u = u as usize;
    let lower: f64 = dist[..=u.min(max_u)].iter().sum::<f64>() / total;
    let upper: f64 = dist[u.min(max_u)..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

/// Normal approximation with the tie correction of the variance and a continuity correction.
fn normal_p(n1: usize, n2: usize, u: f64, sorted: &[u64]) -> f64 {
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let n = n1f + n2f;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let mean = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * (1.0 - normal_cdf(z))).clamp(0.0, 1.0)
}

/// Φ(z) through erf (Abramowitz & Stegun 7.1.26, absolute error below 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    let erf = if x >= 0.0 { erf } else { -erf };
    0.5 * (1.0 + erf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    /// Values from the tables of the exact distribution (and R's `wilcox.test(exact = TRUE)`).
    #[test]
    fn exact_p_values_match_the_tables() {
        // Completely separated 4 vs 4: U = 0, p = 2/70.
        let p = mann_whitney_p(&[1, 2, 3, 4], &[5, 6, 7, 8]).unwrap();
        assert!(close(p, 2.0 / 70.0), "{p}");
        // Separated 5 vs 5: 2/252.
        let p = mann_whitney_p(&[10, 11, 12, 13, 14], &[1, 2, 3, 4, 5]).unwrap();
        assert!(close(p, 2.0 / 252.0), "{p}");
        // 3 vs 3, separated: 0.1 — never below 0.05.
        let p = mann_whitney_p(&[1, 2, 3], &[4, 5, 6]).unwrap();
        assert!(close(p, 0.1), "{p}");
        // Interleaved: no evidence.
        let p = mann_whitney_p(&[1, 3, 5, 7], &[2, 4, 6, 8]).unwrap();
        assert!(p > 0.6, "{p}");
        // wilcox.test(c(1,2,3,5), c(4,6,7,8)): W = 1, p-value = 0.05714
        let p = mann_whitney_p(&[1, 2, 3, 5], &[4, 6, 7, 8]).unwrap();
        assert!(close(p, 4.0 / 70.0), "{p}");
        // One sample each: p = 1 whatever they are.
        assert_eq!(mann_whitney_p(&[1000], &[9000]), Some(1.0));
        assert_eq!(mann_whitney_p(&[], &[1]), None);
    }

    #[test]
    fn the_smallest_reachable_p_value_decides_whether_samples_can_tell() {
        assert_eq!(min_p_value(1, 1), 1.0);
        assert!(close(min_p_value(3, 3), 0.1));
        assert!(close(min_p_value(4, 4), 2.0 / 70.0));
        assert!(close(min_p_value(5, 5), 2.0 / 252.0));
        assert!(min_p_value(2, 10) < 0.05);
        assert_eq!(min_p_value(0, 5), 1.0);
    }

    #[test]
    fn ties_use_the_normal_approximation() {
        // All equal: nothing to tell.
        assert_eq!(mann_whitney_p(&[5, 5, 5], &[5, 5, 5]), Some(1.0));
        // Well separated with ties inside each side: small p.
        let p = mann_whitney_p(&[1, 1, 2, 2, 3, 3], &[10, 10, 11, 11, 12, 12]).unwrap();
        assert!(p < 0.01, "{p}");
        // Large samples go to the approximation too; shifted by a lot: tiny p.
        let a: Vec<u64> = (0..40).collect();
        let b: Vec<u64> = (100..140).collect();
        assert!(mann_whitney_p(&a, &b).unwrap() < 1e-6);
        assert!(close(normal_cdf(0.0), 0.5));
        assert!(close(normal_cdf(1.959_964), 0.975));
    }
}
