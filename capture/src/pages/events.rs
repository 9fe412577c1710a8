//! The events both observers read, handled once, the same way: target info (`Target.*`), a main
//! frame's navigations (the veto's documents, the page's URL) and what a page reports (console,
//! exceptions, `Log`, failed requests). An observer parses the message, names the event from the
//! one method table, says where it came from (a [`Source`]) and acts on what comes back (an
//! [`Effect`]); everything else about the event is decided here, so the same events leave the
//! same page state whichever observer read them.

use super::reports::{from_api, from_exception, from_log, By, Reported, Told};
use super::requests::{Failure, Requests};
use super::Pages;
use crate::cdp::frame::Frame;
use crate::cdp::methods::{PageEvent, TargetEvent};
use crate::cdp::params as cdp;
use crate::pages::dedup::EventKey;
use crate::pages::veto::NavigationKind;
use cdp_evidence::{Console, Record};
use serde_json::Value;
use std::time::SystemTime;

/// Where a page event came from, as the observer that read it knows.
pub(crate) struct Source<'a> {
    pub(crate) by: By,
    /// What the page is kept under: its raw target id or, for the traffic reader, a key for
    /// a session it cannot tie to a target.
    pub(crate) page: &'a str,
    /// The raw target id, when known.
    pub(crate) target: Option<&'a str>,
    /// The observer's request table for the events it reads this one with, and the event's
    /// session key in it.
    pub(crate) requests: &'a mut Requests,
    pub(crate) session: Option<&'a str>,
}

/// What the observer that read an event does next.
#[derive(Debug)]
// A record is moved once, to the writer's batch; boxing it would cost an allocation each.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Effect {
    /// Nothing.
    None,
    /// Write this record now.
    Record(Record),
    /// A failure: write `now`, if any, and tell the tool calls of `failure` (a repeat, or a
    /// failure waiting for a frame, has no record to write now).
    Failure {
        now: Option<Record>,
        failure: Record,
    },
    /// A flattened session attached to a target (`page`: of type page): the observer tracks
    /// it. Raw ids, memory only.
    Attached {
        session: String,
        target: Option<String>,
        page: bool,
    },
    /// A flattened session detached.
    Detached { session: String },
    /// The page's main frame committed a document.
    Committed,
    /// The request table is full: a request went untracked (evidence dropped, counted).
    Dropped,
}

/// An event about targets, on whatever session it came.
pub(crate) fn target_event(pages: &Pages, event: TargetEvent, frame: &Frame<'_>) -> Effect {
    use TargetEvent as E;
    match event {
        E::AttachedToTarget => {
            let Some(p) = frame.params::<cdp::AttachedToTarget>() else {
                return Effect::None;
            };
            let target = pages.learn(&p.target_info);
            let page = p.target_info.get("type").and_then(Value::as_str) == Some("page");
            Effect::Attached {
                session: p.session_id.into_owned(),
                target,
                page,
            }
        }
        E::DetachedFromTarget => match frame.params::<cdp::SessionRef>() {
            Some(p) => Effect::Detached {
                session: p.session_id.into_owned(),
            },
            None => Effect::None,
        },
        E::TargetCreated | E::TargetInfoChanged => {
            if let Some(p) = frame.params::<cdp::TargetInfoChanged>() {
                pages.learn(&p.target_info);
            }
            Effect::None
        }
        E::TargetDestroyed => {
            if let Some(p) = frame.params::<cdp::TargetId>() {
                pages.destroyed(&p.target_id);
            }
            Effect::None
        }
    }
}

/// An event the page behind `src` reported at `at`.
pub(crate) fn page_event(
    pages: &Pages,
    src: Source<'_>,
    event: PageEvent,
    frame: &Frame<'_>,
    at: SystemTime,
) -> Effect {
    use PageEvent as E;
    let s = pages.sanitizer();
    match event {
        E::NetworkRequestWillBeSent => match frame.params::<cdp::RequestWillBeSent>() {
            Some(p) if !src.requests.sent(src.session, &p, at) => Effect::Dropped,
            _ => Effect::None,
        },
        E::NetworkResponseReceived => {
            let Some(p) = frame.params::<cdp::ResponseReceived>() else {
                return Effect::None;
            };
            let failure = src.requests.response(src.session, &p, s);
            Effect::from(request_failed(pages, &src, &p.request_id, failure, at))
        }
        E::NetworkLoadingFailed => {
            let Some(p) = frame.params::<cdp::LoadingFailed>() else {
                return Effect::None;
            };
            let failure = src.requests.failed(src.session, &p, s);
            Effect::from(request_failed(pages, &src, &p.request_id, failure, at))
        }
        E::NetworkLoadingFinished => {
            if let Some(p) = frame.params::<cdp::RequestId>() {
                src.requests.finished(src.session, &p.request_id);
            }
            Effect::None
        }
        E::RuntimeConsoleApiCalled => {
            if !pages.records(src.by, src.page) {
                return Effect::None;
            }
            let Some(p) = frame.params::<cdp::ConsoleApiCalled>() else {
                return Effect::None;
            };
            let Some((console, key)) = from_api(s, src.page, &p) else {
                return Effect::None;
            };
            console_reported(pages, &src, console, key, at)
        }
        E::RuntimeExceptionThrown => {
            if !pages.records(src.by, src.page) {
                return Effect::None;
            }
            let Some(p) = frame.params::<cdp::ExceptionThrown>() else {
                return Effect::None;
            };
            let (console, key) = from_exception(s, src.page, &p);
            console_reported(pages, &src, console, key, at)
        }
        E::LogEntryAdded => {
            if !pages.records(src.by, src.page) {
                return Effect::None;
            }
            let Some(p) = frame.params::<cdp::EntryAdded>() else {
                return Effect::None;
            };
            // The relay's own observer always has Network on; the traffic reader knows the
            // client does once a request went by.
            let network_seen = src.by == By::Direct || src.requests.seen_any();
            let Some((console, key)) = from_log(s, src.page, &p, network_seen) else {
                return Effect::None;
            };
            console_reported(pages, &src, console, key, at)
        }
        E::PageFrameStartedNavigating => {
            // How a main-frame navigation began decides what its commit does to the veto (the
            // main frame's id is the target id).
            let (Some(target), Some(p)) =
                (src.target, frame.params::<cdp::FrameStartedNavigating>())
            else {
                return Effect::None;
            };
            if *p.frame_id == *target {
                let kind = NavigationKind::parse(&p.navigation_type);
                pages.navigation_started(target, &p.loader_id, kind);
            }
            Effect::None
        }
        E::PageFrameNavigated => {
            let Some(p) = frame.params::<cdp::FrameNavigated>() else {
                return Effect::None;
            };
            let Some((loader, commit)) = p.main_frame_commit() else {
                return Effect::None;
            };
            pages.committed(src.page, loader, commit, at);
            if let Some(target) = src.target {
                pages.navigated(target, &p.frame.url);
            }
            Effect::Committed
        }
    }
}

impl From<Told> for Effect {
    fn from(told: Told) -> Effect {
        match told {
            Told {
                now,
                failure: Some(failure),
            } => Effect::Failure { now, failure },
            Told { now, failure: None } => now.map_or(Effect::None, Effect::Record),
        }
    }
}

/// A console message, exception or log entry the page behind `src` reported.
fn console_reported(
    pages: &Pages,
    src: &Source<'_>,
    console: Console,
    key: EventKey,
    at: SystemTime,
) -> Effect {
    let what = Reported::Console(console, key);
    Effect::from(pages.report(src.by, src.page, src.target, what, at))
}

/// A request of the page behind `src` failed (`failure`, when the join says it is one):
/// recorded unless the relay's own observer records the page's events instead, or it was
/// already.
fn request_failed(
    pages: &Pages,
    src: &Source<'_>,
    request_id: &str,
    failure: Option<Failure>,
    at: SystemTime,
) -> Told {
    let (Some(failure), true) = (failure, pages.records(src.by, src.page)) else {
        return Told::nothing();
    };
    let key = EventKey::request(src.page, request_id);
    pages.report(
        src.by,
        src.page,
        src.target,
        Reported::Request(failure, key),
        at,
    )
}
