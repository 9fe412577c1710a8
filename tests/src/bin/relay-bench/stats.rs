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

/// The order `n` paths run in during round `round`: each round starts one later, so no path
/// always runs first (or last).
pub fn rotation(round: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |k| (round + k) % n)
}
