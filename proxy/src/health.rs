//! Whether the browser answers: probed in the background and on every failed dial, so
//! `/relay/v1/status` tells a supervisor that the browser behind a live relay died, and since
//! when.

use crate::upstream;
use crate::Upstream;
use serde::Serialize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// How often the browser is probed while it answers: a probe is a connection and a few wake-ups
/// of the probe's thread, and an idle relay wakes each thread about once a second at most.
pub(crate) const PROBE_EVERY: Duration = Duration::from_secs(5);
/// How often while it does not: its return is news a supervisor waits for, and a refused
/// connection costs one wake-up.
pub(crate) const PROBE_DOWN_EVERY: Duration = Duration::from_secs(2);

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
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthView {
    /// `null` until the first probe answered.
    pub reachable: Option<bool>,
    /// When it last changed (RFC 3339).
    pub since: Option<String>,
    /// When it was last checked (RFC 3339).
    pub last_checked: Option<String>,
    /// Why it is unreachable (free of capability ids).
    pub reason: Option<String>,
}

impl Health {
    /// Records an outcome of talking to the browser.
    pub(crate) fn observe(&self, reachable: bool, reason: Option<String>) {
        self.observe_at(reachable, reason, SystemTime::now());
    }

    fn observe_at(&self, reachable: bool, reason: Option<String>, now: SystemTime) {
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

    pub(crate) fn view(&self) -> HealthView {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let time = |t: SystemTime| humantime::format_rfc3339_millis(t).to_string();
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

/// Probes `up` every [`PROBE_EVERY`] ([`PROBE_DOWN_EVERY`] while it does not answer) until
/// `stop`, on a thread of its own: the relay's runtime
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
                    let next = match upstream::probe(&up).await {
                        Ok(()) => {
                            health.observe(true, None);
                            PROBE_EVERY
                        }
                        Err(crate::Error::Upstream { reason, .. }) => {
                            health.observe(false, Some(reason));
                            PROBE_DOWN_EVERY
                        }
                        Err(other) => {
                            health.observe(false, Some(other.to_string()));
                            PROBE_DOWN_EVERY
                        }
                    };
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(next) => {}
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
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s);
        let stamp = |s: u64| Some(humantime::format_rfc3339_millis(at(s)).to_string());
        let h = Health::default();
        assert_eq!(h.view().reachable, None);
        h.observe_at(true, None, at(0));
        assert_eq!(h.view().since, stamp(0));
        h.observe_at(true, None, at(5));
        let v = h.view();
        assert_eq!((v.since, v.last_checked), (stamp(0), stamp(5)));
        h.observe_at(false, Some("connection refused".into()), at(7));
        let v = h.view();
        assert_eq!(v.reachable, Some(false));
        assert_eq!(v.since, stamp(7), "the flip to unreachable moves since");
        assert_eq!(v.reason.as_deref(), Some("connection refused"));
        h.observe_at(false, Some("connection refused".into()), at(9));
        assert_eq!(h.view().since, stamp(7));
        h.observe_at(true, None, at(12));
        let v = h.view();
        assert_eq!((v.since, v.reason), (stamp(12), None), "and back");
    }
}
