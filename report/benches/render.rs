//! Render time of the report for a realistic login flow (13 steps, 40 folded evaluations,
//! 5 failures, 2 frames) and for a long synthetic run (500 steps, 100 screenshots of ~90 KB,
//! 2,000 evaluations), each from files on disk to both outputs in memory.
//!
//! `cargo bench -p cdp-report --bench render`; sizes are printed once before the timings.

#[path = "../tests/support/mod.rs"]
mod support;

use cdp_report::{render_to_memory, Options};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let login = tmp.path().join("login");
    let a = support::fake_screenshot(200, 150, 1);
    let b = support::fake_screenshot(200, 150, 2);
    support::login_flow(&login, [&a, &b]);
    let long = tmp.path().join("long");
    support::synthetic(&long, 500, 100, 90_000);
    let options = Options::default();
    for (name, dir) in [
        ("login flow", &login),
        ("500 steps, 100 screenshots", &long),
    ] {
        let f = render_to_memory(dir, &options).expect("render").figures;
        eprintln!(
            "{name}: report.html {} bytes, summary.md {} bytes, {} frames embedded, {} left out",
            f.html_bytes, f.summary_bytes, f.frames_embedded, f.frames_left_out
        );
    }
    let mut g = c.benchmark_group("render");
    g.sample_size(20);
    g.bench_function("login_flow", |bench| {
        bench.iter(|| black_box(render_to_memory(&login, &options).expect("render")))
    });
    g.bench_function("synthetic_500_steps_100_frames", |bench| {
        bench.iter(|| black_box(render_to_memory(&long, &options).expect("render")))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
