//! The size policy holds on long runs. Prints sizes and render times (not asserted: timings
//! belong to `cargo bench -p cdp-report`; this build may be unoptimized).

mod support;

use cdp_report::{render_to_memory, Options};
use std::time::Instant;
use support::*;

#[test]
fn a_long_run_stays_within_the_size_policy() {
    let tmp = tempfile::tempdir().unwrap();
    // ~90 KB frames, like real 1280x720 screenshots of simple pages.
    synthetic(tmp.path(), 500, 100, 90_000);
    let options = Options::default();
    let t = Instant::now();
    let out = render_to_memory(tmp.path(), &options).unwrap();
    let took = t.elapsed();
    let f = &out.figures;
    println!(
        "synthetic 500 steps / 100 screenshots: report.html {} bytes, summary.md {} bytes, {} frames embedded ({} image bytes), {} left out, {} records, rendered in {took:?}",
        f.html_bytes, f.summary_bytes, f.frames_embedded, f.embedded_bytes, f.frames_left_out, f.records
    );
    if let Some(dump) = std::env::var_os("CDP_REPORT_DUMP") {
        std::fs::write(
            std::path::Path::new(&dump).join("synthetic.html"),
            &out.html,
        )
        .unwrap();
    }
    assert_eq!(f.steps, 500);
    assert_eq!(f.frames_embedded + f.frames_left_out, 100);
    assert!(f.frames_embedded <= options.max_frames);
    assert!(f.embedded_bytes <= options.max_embedded_bytes);
    // base64 adds a third; the text of 500 steps and their folds stays under 2 MiB.
    assert!(
        f.html_bytes <= options.max_embedded_bytes * 4 / 3 + (2 << 20),
        "{f:?}"
    );
    assert!(out.html.contains("frames were left out"));

    // Frames next to failures are kept first: every failure's "frame after" link, when there is
    // a frame after it, points at an embedded frame.
    assert!(out.html.contains("frame after: step"));
}

#[test]
fn the_login_flow_is_small() {
    let tmp = tempfile::tempdir().unwrap();
    let a = fake_screenshot(200, 150, 1);
    let b = fake_screenshot(200, 150, 2);
    login_flow(tmp.path(), [&a, &b]);
    let t = Instant::now();
    let out = render_to_memory(tmp.path(), &Options::default()).unwrap();
    let took = t.elapsed();
    let f = &out.figures;
    println!(
        "login flow: report.html {} bytes ({} bytes of it frames before base64), summary.md {} bytes, rendered in {took:?}",
        f.html_bytes, f.embedded_bytes, f.summary_bytes
    );
    assert!(f.html_bytes < f.embedded_bytes * 4 / 3 + 200_000);
}

#[test]
fn tighter_options_leave_frames_out_with_failures_first() {
    let tmp = tempfile::tempdir().unwrap();
    synthetic(tmp.path(), 60, 20, 3_000);
    let mut options = Options::default();
    options.max_frames = 4;
    let out = render_to_memory(tmp.path(), &options).unwrap();
    assert_eq!(out.figures.frames_embedded, 4);
    assert_eq!(out.figures.frames_left_out, 16);
    assert!(out.html.contains("over the limit on the number of frames"));
    let mut tiny = Options::default();
    tiny.max_frame_bytes = 100;
    let out = render_to_memory(tmp.path(), &tiny).unwrap();
    assert_eq!(out.figures.frames_embedded, 0);
    assert!(out.html.contains("larger than the per-frame limit"));
}
