//! Small statistics for the tables.

/// The `p` quantile (0..=1) of `v`, nearest rank; NaN when empty.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return f64::NAN;
    }
    let idx = ((s.len() - 1) as f64 * p).round() as usize;
    s[idx]
}

/// `a / b` as `1.07×`.
pub fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}×", a / b)
}

/// `a` against `b` measured in the same rounds: the median of the per-round ratios with the
/// lowest and highest, as `0.97× (0.93–1.01)`. Pairing each round with itself cancels what drifts
/// between rounds on a shared machine (another tenant, a CPU frequency change), which a ratio of
/// two medians taken from different rounds keeps.
pub fn paired(a: &[f64], b: &[f64]) -> String {
    let per_round: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    format!(
        "{:.2}× ({:.2}–{:.2})",
        percentile(&per_round, 0.5),
        percentile(&per_round, 0.0),
        percentile(&per_round, 1.0)
    )
}

/// Path `i`'s samples against the peer's (same rounds), as a table cell: [`paired`], `1.00×`
/// for the peer itself, `—` when the peer does not run here.
pub fn against(samples: &[Vec<f64>], i: usize, peer: Option<usize>) -> String {
    match peer {
        Some(j) if j != i => paired(&samples[i], &samples[j]),
        Some(_) => "1.00×".into(),
        None => "—".into(),
    }
}

/// The order `n` paths run in during round `round`: each round starts one later, so no path
/// always runs first (or last).
pub fn rotation(round: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |k| (round + k) % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paired_ratio_cancels_what_drifts_between_rounds() {
        // The machine halves its speed halfway through; the relay is always 0.9× of its peer.
        let peer = [100.0, 100.0, 100.0, 50.0, 50.0, 50.0, 50.0];
        let relay: Vec<f64> = peer.iter().map(|p| p * 0.9).collect();
        assert_eq!(paired(&relay, &peer), "0.90× (0.90–0.90)");
        // The ratio of medians, from different rounds, would have said 0.90 only by luck.
        let shifted = [100.0, 100.0, 100.0, 100.0, 50.0, 50.0, 50.0];
        assert_eq!(
            ratio(percentile(&relay, 0.5), percentile(&shifted, 0.5)),
            "0.45×"
        );
        assert_eq!(
            paired(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.0; 5]),
            "3.00× (1.00–5.00)"
        );
    }
}
