//! Measures what registering explicit secrets costs: time per registration after 1, 10 and 100
//! secrets are registered, and the process's resident memory, for BENCHMARKS.md.
//! Run it in release:
//!
//! ```text
//! cargo run --release -p cdp-sanitize --example registration_cost -- [BYTES] [COUNT]
//! ```
//!
//! BYTES is the size of each secret (default 8192), COUNT how many to register (default 100).
//! Secrets that the registry refuses (over its limits) are counted, not registered.

use cdp_sanitize::Sanitizer;
use std::time::Instant;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// A deterministic, unique, printable secret of `len` bytes.
fn secret(i: usize, len: usize) -> String {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_ /+=";
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(alphabet[(state % alphabet.len() as u64) as usize])
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bytes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(8192);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let s = Sanitizer::new();
    let text = format!("console: login failed for {} at step 3", secret(7, 64));
    let before = rss_kib();
    let mut refused = 0;
    println!("secret size {bytes} B, rss at start {before} KiB");
    for i in 1..=count {
        let literal = secret(i, bytes);
        let t = Instant::now();
        let ok = s.register_secret(&format!("S{i}"), &literal).is_ok();
        let took = t.elapsed();
        refused += usize::from(!ok);
        if matches!(i, 1 | 10 | 100 | 1000) || i == count {
            let t = Instant::now();
            for _ in 0..100 {
                std::hint::black_box(s.text(&text));
            }
            let scan = t.elapsed() / 100;
            println!(
                "registration #{i:>4}: {:>10.3} ms   rss {:>8} KiB   sanitize 100-byte text {:>8.3} µs   refused so far {refused}",
                took.as_secs_f64() * 1e3,
                rss_kib(),
                scan.as_secs_f64() * 1e6,
            );
        }
    }
}
