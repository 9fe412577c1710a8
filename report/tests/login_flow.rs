//! The realistic login flow renders as 13 steps with its failures in place.

mod support;

use support::*;

fn render_login() -> (tempfile::TempDir, cdp_report::Output) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(LOGIN_RUN_ID);
    let a = fake_screenshot(160, 100, 1);
    let b = fake_screenshot(160, 100, 2);
    login_flow(&dir, [&a, &b]);
    let out = cdp_report::render_to_memory(&dir, &cdp_report::Options::default()).unwrap();
    (tmp, out)
}

#[test]
fn login_flow_reads_as_thirteen_steps() {
    let (_tmp, out) = render_login();
    if let Some(dump) = std::env::var_os("CDP_REPORT_DUMP") {
        std::fs::write(std::path::Path::new(&dump).join("login.html"), &out.html).unwrap();
        std::fs::write(std::path::Path::new(&dump).join("login.md"), &out.summary).unwrap();
    }
    let f = &out.figures;
    assert_eq!(f.steps, 13, "{f:?}");
    assert_eq!(f.failed_requests, 3);
    assert_eq!(f.console_errors, 2);
    assert_eq!(f.frames_embedded, 2);
}
