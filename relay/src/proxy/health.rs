//! Whether the browser answers: probed in the background and on every failed dial, so
//! `/relay/v1/status` tells a supervisor that the browser behind a live relay died, and since
//! when.

use super::upstream;
use crate::config::Upstream;
use serde::Serialize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// How often the browser is probed while nothing else talks to it.
pub(crate) const PROBE_EVERY: Duration = Duration::from_secs(2);

/// The browser's reachability, as the status API reports it.
#[derive(Debug, Default)]
pub(crate) struct Health {
    state: Mutex<Option<Observed>>,
}

#[derive(Debug, Clone)]
struct Observed {
    reachable: bool,
    since: SystemTime,
    checked: SystemTime,
    reason: Option<String>,
}

/// What `/relay/v1/status` shows under `upstreamHealth`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HealthView {
    /// `null` until the first probe answered.
    reachable: Option<bool>,
    /// When it last changed (RFC 3339).
    since: Option<String>,
    /// When it was last checked (RFC 3339).
    last_checked: Option<String>,
    /// Why it is unreachable (free of capability ids).
    reason: Option<String>,
}

impl Health {
    /// Records an outcome of talking to the browser.
    pub(crate) fn observe(&self, reachable: bool, reason: Option<String>) {
        let now = SystemTime::now();
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let since = match &*s {
            Some(o) if o.reachable == reachable => o.since,
            _ => {
                if !reachable {
                    tracing::warn!(
                        "the browser stopped answering ({}); the relay keeps serving and answers 502 until it is back",
                        reason.as_deref().unwrap_or("unknown reason")
                    );
                } else if s.is_some() {
                    tracing::info!("the browser answers again");
                }
                now
            }
        };
        *s = Some(Observed {
            reachable,
            since,
            checked: now,
            reason: if reachable { None } else { reason },
        });
    }

    /// Whether the browser answered the last probe; `None` before the first.
    pub(crate) fn reachable(&self) -> Option<bool> {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.as_ref().map(|o| o.reachable)
    }

    pub(crate) fn view(&self) -> HealthView {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let time = cdp_evidence::time::format_rfc3339_millis;
        match &*s {
            None => HealthView {
                reachable: None,
                since: None,
                last_checked: None,
                reason: None,
            },
            Some(o) => HealthView {
                reachable: Some(o.reachable),
                since: Some(time(o.since)),
                last_checked: Some(time(o.checked)),
                reason: o.reason.clone(),
            },
        }
    }
}

/// Probes `up` every [`PROBE_EVERY`] until `stop`, on a thread of its own: the relay's runtime
/// keeps no timer armed while it forwards (a pending timer makes every park read the clock).
pub(crate) fn watch_in_background(health: &Arc<Health>, up: &Upstream, stop: &CancellationToken) {
    let (health, up, stop) = (health.clone(), up.clone(), stop.clone());
    let spawned = std::thread::Builder::new()
        .name("cdp-relay-health".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                loop {
                    match upstream::probe(&up).await {
                        Ok(()) => health.observe(true, None),
                        Err(crate::Error::Upstream { reason, .. }) => {
                            health.observe(false, Some(reason))
                        }
                        Err(other) => health.observe(false, Some(other.to_string())),
                    }
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(PROBE_EVERY) => {}
                    }
                }
            });
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the browser health probe ({e}); status will not report it");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_moves_only_when_reachability_changes() {
        let h = Health::default();
        assert_eq!(h.view().reachable, None);
        h.observe(true, None);
        let first = h.view().since;
        h.observe(true, None);
        assert_eq!(h.view().since, first);
        h.observe(false, Some("connection refused".into()));
        let v = h.view();
        assert_eq!(v.reachable, Some(false));
        assert_eq!(v.reason.as_deref(), Some("connection refused"));
        h.observe(true, None);
        assert_eq!(h.view().reason, None);
    }
}
