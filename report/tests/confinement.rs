//! Artifacts are read only from `artifacts/` of the run, never through a symlink, and embedded
//! only when their bytes are the image their name declares. Everything else is shown as refused.

mod support;

use serde_json::json;
use std::fs;
use std::os::unix::fs::symlink;
use support::*;

const SECRET: &[u8] = b"\x89PNG\r\n\x1a\nTOPSECRET-OUTSIDE-THE-RUN";

#[test]
fn artifacts_outside_the_run_or_not_images_are_refused_and_never_embedded() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside.png");
    fs::write(&outside, SECRET).unwrap();
    let dir = tmp.path().join("run");
    let mut b = RunBuilder::new(&dir);
    let good = b.artifact("screenshot", "png", &fake_screenshot(8, 8, 1));
    symlink(&outside, dir.join("artifacts/000010-out.png")).unwrap();
    fs::write(
        dir.join("artifacts/000011-real.png"),
        fake_screenshot(8, 8, 2),
    )
    .unwrap();
    symlink("000011-real.png", dir.join("artifacts/000012-inside.png")).unwrap();
    fs::write(
        dir.join("artifacts/000013-text.png"),
        b"<svg onload=alert(1)>",
    )
    .unwrap();
    fs::write(
        dir.join("artifacts/000014-jpeg.jpg"),
        fake_screenshot(8, 8, 3),
    )
    .unwrap();
    fs::write(dir.join("artifacts/000015-empty.webp"), b"").unwrap();
    nix::unistd::mkfifo(
        &dir.join("artifacts/000016-fifo.png"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    fs::create_dir(dir.join("artifacts/000017-dir.png")).unwrap();
    let paths = [
        good.as_str(),
        "../outside.png",
        "artifacts/../../outside.png",
        outside.to_str().unwrap(),
        "artifacts/000010-out.png",
        "artifacts/000012-inside.png",
        "artifacts/000013-text.png",
        "artifacts/000014-jpeg.jpg",
        "artifacts/000015-empty.webp",
        "artifacts/000016-fifo.png",
        "artifacts/000017-dir.png",
        "artifacts/missing.png",
        "artifacts/sub/x.png",
        "manifest.json",
        "artifacts/000011-real.pdf",
    ];
    for (i, p) in paths.iter().enumerate() {
        let r = b.action(10 + i as u64 * 10, "Page.captureScreenshot", 5);
        r["artifacts"] = json!([p]);
    }
    b.finish();
    b.finalized_manifest("confined", T0 + 500, json!({}));

    let out = cdp_report::render_to_memory(&dir, &cdp_report::Options::default()).unwrap();
    let f = &out.figures;
    assert_eq!(f.frames_embedded, 1, "{f:?}");
    // Every image path but the good one and the non-image (.pdf) is refused.
    assert_eq!(f.artifacts_refused, 13, "{f:?}");
    for text in [&out.html, &out.summary] {
        assert!(
            !text.contains("TOPSECRET"),
            "nothing outside the run was read"
        );
    }
    // Exactly one data: image, and it is the good PNG.
    assert_eq!(out.html.matches("src=\"data:").count(), 1);
    for why in [
        "is not a path under artifacts/",
        "is not a plain file name",
        "is a symlink",
        "its content is not a PNG image",
        "its content is not a WebP image",
        "is not a regular file",
        "is missing",
    ] {
        assert!(out.html.contains(why), "{why}");
    }
    assert!(out.html.contains("Artifact (not an image, not embedded)"));
    assert!(out
        .summary
        .contains("frame refused (is a symlink): `artifacts/000010-out.png`"));
}

#[test]
fn a_symlinked_artifacts_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::write(elsewhere.join("000001-s.png"), SECRET).unwrap();
    let dir = tmp.path().join("run");
    let mut b = RunBuilder::new(&dir);
    b.action(10, "Page.captureScreenshot", 5)["artifacts"] = json!(["artifacts/000001-s.png"]);
    b.finish();
    fs::remove_dir(dir.join("artifacts")).unwrap();
    symlink(&elsewhere, dir.join("artifacts")).unwrap();
    let out = cdp_report::render_to_memory(&dir, &cdp_report::Options::default()).unwrap();
    assert_eq!(out.figures.frames_embedded, 0);
    assert_eq!(out.figures.artifacts_refused, 1);
    assert!(out.html.contains("artifacts/ is not a real directory"));
    assert!(!out.html.contains("TOPSECRET"));
}

#[test]
fn outputs_replace_a_planted_symlink_instead_of_writing_through_it() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    fs::write(&victim, b"keep me").unwrap();
    let dir = tmp.path().join("run");
    let mut b = RunBuilder::new(&dir);
    b.action(10, "Page.reload", 5);
    b.finish();
    symlink(&victim, dir.join("report.html")).unwrap();
    let rendered = cdp_report::render(&dir).unwrap();
    assert_eq!(fs::read(&victim).unwrap(), b"keep me");
    assert!(fs::symlink_metadata(&rendered.html_path).unwrap().is_file());
}
