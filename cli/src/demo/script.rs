//! What the demo's agent does on the demo site, step by step: sign in (a screenshot of the
//! filled form is taken and withheld by the relay), look at the dashboard, search, open an
//! invoice in a second page. Each step waits for the failures the site is built to produce, so
//! the run records them all, deterministically.

use super::client::{Cdp, Event, Tab};
use super::site::{Site, INVOICE_PATH};
use super::{OTP, PASSWORD, SEARCH, USERNAME};
use anyhow::Context as _;
use serde_json::json;

/// Runs the script against the browser behind the relay at `endpoint`; `evidence`, when the
/// relay records, says when its observer is on a page.
pub(super) async fn run(
    endpoint: &str,
    site: &Site,
    evidence: Option<&cdp_capture::PipelineHandle>,
) -> anyhow::Result<()> {
    let mut cdp = Cdp::connect(endpoint).await?;
    // Titles and URLs of pages as they change, as automation libraries ask for them.
    cdp.call(
        None,
        "Target.setDiscoverTargets",
        json!({ "discover": true }),
    )
    .await?;
    let targets = cdp.call(None, "Target.getTargets", json!({})).await?;
    let first_page = targets["targetInfos"]
        .as_array()
        .and_then(|all| all.iter().find(|t| t["type"] == "page"))
        .and_then(|t| t["targetId"].as_str())
        .context("the browser has no page to drive")?
        .to_owned();
    let tab = cdp.attach(&first_page).await?;

    tracing::info!("demo: signing in to {}", site.url("/login"));
    cdp.navigate(&tab, &site.url("/login")).await?;
    cdp.screenshot(&tab).await?;
    for (field, text) in [("#user", USERNAME), ("#password", PASSWORD), ("#otp", OTP)] {
        cdp.click(&tab, field).await?;
        cdp.insert_text(&tab, text).await?;
    }
    // An agent checking its work: the relay keeps no picture of a page typed into.
    cdp.screenshot(&tab).await?;
    let mark = cdp.mark();
    cdp.click(&tab, "#sign-in").await?;
    let landed = cdp.landed(&tab, mark).await?;
    if !landed.starts_with(&site.url("/dashboard")) {
        anyhow::bail!("the demo site did not accept the sign-in (the typed text did not arrive)");
    }
    cdp.wait_for(mark, "the refused live-updates request", |e| {
        e.is(&tab, "Network.loadingFailed")
    })
    .await?;
    cdp.wait_for(mark, "the dashboard's console error", |e| {
        console_error(e, &tab)
    })
    .await?;
    cdp.screenshot(&tab).await?;

    tracing::info!("demo: searching");
    cdp.navigate(&tab, &site.url("/search")).await?;
    cdp.click(&tab, "#q").await?;
    cdp.insert_text(&tab, SEARCH).await?;
    let mark = cdp.mark();
    cdp.press_enter(&tab).await?;
    cdp.landed(&tab, mark).await?;
    cdp.wait_for(mark, "the search's HTTP 500", |e| status(e, &tab, 500))
        .await?;
    cdp.wait_for(mark, "the search's console error", |e| {
        console_error(e, &tab)
    })
    .await?;
    cdp.screenshot(&tab).await?;

    tracing::info!("demo: opening an invoice in a second page");
    // In a window of its own: a tab opened beside the first would hide it, and a hidden page
    // gives the observer no frame for a failure it may still be waiting to picture.
    let created = cdp
        .call(
            None,
            "Target.createTarget",
            json!({ "url": "about:blank", "newWindow": true }),
        )
        .await?;
    let second = created["targetId"]
        .as_str()
        .context("Target.createTarget answered without a target")?
        .to_owned();
    let invoice = cdp.attach(&second).await?;
    // The relay's observer must be on the new window before it loads, as on the first page:
    // else, on a busy machine, the receipt's failure is recorded with no frame to show it.
    super::observer_on(evidence, 2).await;
    let mark = cdp.mark();
    cdp.navigate(&invoice, &site.url(INVOICE_PATH)).await?;
    cdp.wait_for(mark, "the invoice's missing receipt image", |e| {
        status(e, &invoice, 404) && e.params["type"] == "Image"
    })
    .await?;
    cdp.screenshot(&invoice).await?;
    cdp.close().await;
    Ok(())
}

fn console_error(e: &Event, tab: &Tab) -> bool {
    e.is(tab, "Runtime.consoleAPICalled") && e.params["type"] == "error"
}

fn status(e: &Event, tab: &Tab, code: u64) -> bool {
    e.is(tab, "Network.responseReceived") && e.params["response"]["status"].as_u64() == Some(code)
}
