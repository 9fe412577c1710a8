//! The observer's sessions on its own connection, one per page, and what it reads on them.
//!
//! A synchronous state machine, like the traffic reader: the browser's messages in, each
//! named from the one method table, the events both observers read handed to the page model's
//! one handler (`pages/events.rs`); and work out ([`Work`]): sessions to set up or let go,
//! records to write, readings to answer. The async side (`browser/`) does the work. What is kept
//! per page here is the observer's own: the page agent's world, requests in flight (for failure
//! joining), dialog and crash state, a navigation waiting for its load, verifications queued.
//! Target ids are raw here, in memory only.

use super::left::{Left, Sealed};
use super::locate::{self, AgentLocator, Located, Moment, Options};
use super::verify::{field_kind, VerifyReply, VerifyRequest};
use super::{BINDING, TOOL, WORLD};
use crate::cdp::frame::{leading, Frame, Leading};
use crate::cdp::methods::{DirectEvent, Event};
use crate::cdp::params as cdp;
use crate::pages::events::{self, Effect, Source};
use crate::pages::reports::{console_record, By};
use crate::pages::requests::Requests;
use crate::pages::veto::FieldFacts;
use crate::pages::{After, Pages};
use crate::Emit;
use cdp_evidence::{Console, ConsoleLevel, Record};
use cdp_sanitize::SafeText;
use serde::Deserialize;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant, SystemTime};

/// Requests tracked per page for failure joining.
const MAX_REQUESTS: usize = 8192;

/// One page the observer is attached to.
pub(crate) struct Page {
    /// Raw target id (memory only).
    pub(crate) target_id: String,
    /// Domains enabled: the page's events are the observer's to record.
    pub(crate) ready: bool,
    /// The page agent's execution context in the main frame.
    pub(crate) world: Option<i64>,
    /// When that world was reported (the agent of the current document started then), and how
    /// many worlds the page has had: typing from before the current one went into a document
    /// the page has left.
    pub(crate) world_since: Option<SystemTime>,
    pub(crate) worlds: u32,
    /// The origin of the current world's document: a left document's handover goes only into a
    /// document of the same origin.
    pub(crate) world_origin: String,
    /// What the page's last left document handed over for its unread typing (`left.rs`).
    pub(crate) left: Option<Left>,
    /// The world before the current one: what it hands over as its document is left may
    /// arrive after the next document's world was reported.
    pub(crate) previous_world: Option<i64>,
    /// Readings wait for the next document's agent (`browser/readings.rs`); `waited`: the wait
    /// for a world ran out once already.
    pub(crate) hold: Option<Hold>,
    pub(crate) waited: bool,
    requests: Requests,
    pub(crate) dialog: bool,
    pub(crate) crashed: bool,
    /// A main-frame navigation committed and its load has not fired yet.
    pub(crate) loading_since: Option<Instant>,
    pub(crate) verifying: bool,
    pub(crate) verify_queue: VecDeque<VerifyRequest>,
}

impl Page {
    fn new(target_id: String) -> Page {
        Page {
            target_id,
            ready: false,
            world: None,
            world_since: None,
            worlds: 0,
            world_origin: String::new(),
            left: None,
            previous_world: None,
            hold: None,
            waited: false,
            requests: Requests::new(MAX_REQUESTS),
            dialog: false,
            crashed: false,
            loading_since: None,
            verifying: false,
            verify_queue: VecDeque::new(),
        }
    }
}

/// Readings of a page waiting for its next document's agent world: between documents, or after
/// a reading lost its document (and world `lost` with it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hold {
    pub(crate) until: Instant,
    pub(crate) lost: Option<i64>,
}

/// What the async side does next.
#[derive(Default)]
pub(crate) struct Work {
    /// Sessions attached to pages: set them up.
    pub(crate) setup: Vec<String>,
    /// Sessions that are no pages of ours (or one too many): detach from them.
    pub(crate) let_go: Vec<String>,
    /// Records to write now.
    pub(crate) emits: Vec<Emit>,
    /// Failures read (repeats too), to tell the tool calls of.
    pub(crate) failures: Vec<Record>,
    /// Readings answered without running.
    pub(crate) replies: Vec<VerifyReply>,
    /// Pages (sessions) whose waiting readings may go on: a world or a handover arrived.
    pub(crate) kick: Vec<String>,
    /// Pages (sessions) that committed a document the agent may have missed (`browser/`).
    pub(crate) ensure: Vec<String>,
    /// Evidence dropped (a request table full).
    pub(crate) dropped: u64,
}

/// A message from the page agent (`agent.js`), by its tag `t`; another tag is not read.
#[derive(Deserialize)]
#[serde(tag = "t", rename_all = "camelCase")]
enum AgentMessage {
    /// Focus moved to a field of this kind (`verify::field_kind`): which field, its group, and
    /// the field the page handed focus on from (opaque numbers, 0 for none).
    Focus {
        #[serde(default)]
        kind: String,
        #[serde(default)]
        field: u64,
        #[serde(default)]
        group: u64,
        #[serde(default)]
        from: u64,
    },
    /// A navigation away from the page's document started with typing not read yet: what a
    /// reading needs (`left.rs`).
    Sealed(Sealed),
    /// An element received a trusted `pointerdown` at `at` (wall-clock ms): its locator, and
    /// the element the pointer rested on first when the clicked one was shown by hovering it.
    Hit {
        #[serde(default)]
        at: f64,
        #[serde(default)]
        target: AgentLocator,
        #[serde(default)]
        hover: Option<AgentLocator>,
        /// The press never reached the document (stopped on the window).
        #[serde(default)]
        blocked: bool,
    },
    /// Typing started in an element at `at`: its locator; `continued` when it goes on in the
    /// element typed into just before (after a pause).
    Typed {
        #[serde(default)]
        at: f64,
        #[serde(default)]
        target: AgentLocator,
        #[serde(default)]
        continued: bool,
    },
    /// A `<select>` changed at `at`: its locator and the chosen options' labels.
    Chose {
        #[serde(default)]
        at: f64,
        #[serde(default)]
        target: AgentLocator,
        #[serde(default)]
        options: Option<Options>,
    },
    /// A file input's files were set at `at`: its locator and how many (never a file's name).
    Files {
        #[serde(default)]
        at: f64,
        #[serde(default)]
        target: AgentLocator,
        #[serde(default)]
        count: Option<u64>,
    },
}

/// A locator report of the page agent's, as the traffic reader takes it.
fn agent_report(target_id: String, message: AgentMessage, received: SystemTime) -> Located {
    let mut l = Located {
        target_id,
        at: received,
        moment: Moment::Hit,
        locator: AgentLocator::default(),
        hover: None,
        options: None,
        blocked: false,
        count: None,
        continued: false,
    };
    let ms = match message {
        AgentMessage::Focus { .. } | AgentMessage::Sealed(_) => 0.0,
        AgentMessage::Hit {
            at,
            target,
            hover,
            blocked,
        } => {
            (l.locator, l.hover, l.blocked) = (target, hover, blocked);
            at
        }
        AgentMessage::Typed {
            at,
            target,
            continued,
        } => {
            (l.moment, l.locator, l.continued) = (Moment::Typed, target, continued);
            at
        }
        AgentMessage::Chose {
            at,
            target,
            options,
        } => {
            (l.moment, l.locator, l.options) = (Moment::Chose, target, options);
            at
        }
        AgentMessage::Files { at, target, count } => {
            (l.moment, l.locator, l.count) = (Moment::Files, target, count);
            at
        }
    };
    l.at = locate::agent_time(ms, received);
    l
}

/// The observer's pages, by its session on each.
pub(crate) struct Sessions {
    pub(crate) pages: HashMap<String, Page>,
    pub(crate) by_target: HashMap<String, String>,
    max_pages: usize,
    /// A frame after a navigation is taken this long after its load event.
    after_load: Duration,
    out: Work,
}

impl Sessions {
    pub(crate) fn new(max_pages: usize, after_load: Duration) -> Sessions {
        Sessions {
            pages: HashMap::new(),
            by_target: HashMap::new(),
            max_pages,
            after_load,
            out: Work::default(),
        }
    }

    /// Everything to do since the last call.
    pub(crate) fn take(&mut self) -> Work {
        std::mem::take(&mut self.out)
    }

    /// One message from the browser (an event), received at `at`. Target events count on the
    /// browser's own session; a page's events on the observer's session on it.
    pub(crate) fn event(&mut self, pages: &Pages, text: &str, at: SystemTime) {
        let Some(frame) = Frame::parse(text) else {
            return;
        };
        let Some(event) = frame.method().and_then(Event::parse) else {
            return;
        };
        match (frame.session(), event) {
            (None, Event::Target(e)) => match events::target_event(pages, e, &frame) {
                Effect::Attached {
                    session,
                    target: Some(target),
                    page: true,
                } if self.pages.len() < self.max_pages => self.attach(pages, session, target),
                // Not ours to watch (or too many pages): let it go.
                Effect::Attached { session, .. } => self.out.let_go.push(session),
                Effect::Detached { session } => self.detached(pages, &session),
                _ => {}
            },
            (None, _) => {}
            (Some(session), event) => {
                let session = session.to_owned();
                self.page_event(pages, &session, event, &frame, at);
            }
        }
    }

    fn attach(&mut self, pages: &Pages, session: String, target: String) {
        pages.observe(&target);
        self.by_target.insert(target.clone(), session.clone());
        self.pages.insert(session.clone(), Page::new(target));
        self.out.setup.push(session);
    }

    /// The observer's setup on `session` is done: it records the page's events now.
    pub(crate) fn ready(&mut self, pages: &Pages, session: &str) {
        if let Some(page) = self.pages.get_mut(session) {
            page.ready = true;
            pages.cover(&page.target_id);
        }
    }

    /// The page behind `session` is gone (or the connection): readings queued for it are
    /// answered, failures waiting for its frame written.
    pub(crate) fn detached(&mut self, pages: &Pages, session: &str) {
        let Some(mut page) = self.pages.remove(session) else {
            return;
        };
        self.by_target.remove(&page.target_id);
        for req in page.verify_queue.drain(..) {
            self.out.replies.push(VerifyReply::unread(
                req.burst,
                req.chars,
                "the page closed before the reading",
            ));
        }
        if let Some(want) = pages.unobserve(&page.target_id) {
            self.out
                .emits
                .extend(want.group.into_iter().map(Emit::Record));
        }
    }

    /// The connection is gone: every page with it.
    pub(crate) fn lost(&mut self, pages: &Pages) {
        let sessions: Vec<String> = self.pages.keys().cloned().collect();
        for s in sessions {
            self.detached(pages, &s);
        }
    }

    /// The page agent's world and its focus reports, taken as soon as they arrive
    /// (`browser::received`): they carry no page text (a focus report is a kind word), so they
    /// need not wait for the keystrokes before them to be registered — and the traffic reader
    /// types a burst by the focus reported before it. `false`: not one of them, or not on a page
    /// this observer watches (the event then takes the ordinary way).
    pub(crate) fn bookkeeping(&mut self, pages: &Pages, text: &str, at: SystemTime) -> bool {
        let Leading::Method(method) = leading(text) else {
            return false;
        };
        let Some(Event::TrafficReader(e)) = Event::parse(method) else {
            return false;
        };
        let Some(frame) = Frame::parse(text) else {
            return false;
        };
        let Some(session) = frame.session() else {
            return false;
        };
        let Some(page) = self.pages.get_mut(session) else {
            return false;
        };
        agent_event(page, pages, e, &frame, at, (session, &mut self.out))
    }

    fn page_event(
        &mut self,
        pages: &Pages,
        session: &str,
        event: Event,
        frame: &Frame<'_>,
        at: SystemTime,
    ) {
        let Some(page) = self.pages.get_mut(session) else {
            return;
        };
        let e = match event {
            Event::Page(e) => {
                let src = Source {
                    by: By::Direct,
                    page: &page.target_id,
                    target: Some(&page.target_id),
                    requests: &mut page.requests,
                    // Requests are kept per page: one session, no session key.
                    session: None,
                };
                match events::page_event(pages, src, e, frame, at) {
                    Effect::Record(r) => self.out.emits.push(Emit::Record(r)),
                    Effect::Failure { now, failure } => {
                        self.out.failures.push(failure);
                        self.out.emits.extend(now.map(Emit::Record));
                    }
                    Effect::Committed => {
                        page.loading_since = Some(Instant::now());
                        if page.ready {
                            self.out.ensure.push(session.to_owned());
                        }
                    }
                    Effect::Dropped => self.out.dropped += 1,
                    Effect::None | Effect::Attached { .. } | Effect::Detached { .. } => {}
                }
                return;
            }
            // Targets are followed on the browser's session; screencasts are a client's.
            Event::Target(_) | Event::Passive(_) => return,
            Event::TrafficReader(e) => e,
        };
        let target = page.target_id.as_str();
        use DirectEvent as O;
        match e {
            O::RuntimeExecutionContextCreated
            | O::RuntimeExecutionContextDestroyed
            | O::RuntimeExecutionContextsCleared
            | O::RuntimeBindingCalled => {
                agent_event(page, pages, e, frame, at, (session, &mut self.out));
            }
            O::PageLoadEventFired => {
                if page.loading_since.take().is_some() {
                    pages.want_frame(target, After::Navigation, self.after_load);
                }
            }
            O::PageJavascriptDialogOpening => page.dialog = true,
            O::PageJavascriptDialogClosed => page.dialog = false,
            O::InspectorTargetCrashed => {
                page.crashed = true;
                page.world = None;
                let console = Console::new(
                    ConsoleLevel::Error,
                    SafeText::literal("the page crashed (its renderer process is gone)"),
                );
                let r = console_record(TOOL, console, at).target(pages.target(target));
                self.out.emits.push(Emit::Record(r));
            }
            O::InspectorTargetReloadedAfterCrash => page.crashed = false,
        }
    }
}

/// The page agent's world coming and going, and what it reports: which kind of field has focus,
/// where clicks and typing went (handed on, raw, to the traffic reader as replies), and the
/// typing of a document it left. `false`: not one of the agent's events (nothing done).
fn agent_event(
    page: &mut Page,
    pages: &Pages,
    e: DirectEvent,
    frame: &Frame<'_>,
    at: SystemTime,
    (session, out): (&str, &mut Work),
) -> bool {
    use DirectEvent as O;
    let target = page.target_id.as_str();
    match e {
        O::RuntimeExecutionContextCreated => {
            if let Some(p) = frame.params::<cdp::ContextCreated>() {
                if p.context.name == WORLD && p.context.aux_data.frame_id == target {
                    tracing::trace!("observer: page agent world {}", p.context.id);
                    page.previous_world = page.world.or(page.previous_world);
                    page.world = Some(p.context.id);
                    page.world_since = Some(at);
                    page.worlds = page.worlds.saturating_add(1);
                    page.world_origin = p.context.origin.to_string();
                    out.kick.push(session.to_owned());
                }
            }
        }
        O::RuntimeExecutionContextDestroyed => {
            if let Some(p) = frame.params::<cdp::ContextDestroyed>() {
                if page.world == Some(p.execution_context_id) {
                    page.previous_world = page.world.take();
                }
            }
        }
        O::RuntimeExecutionContextsCleared => {
            page.previous_world = page.world.take().or(page.previous_world);
        }
        O::RuntimeBindingCalled => {
            let Some(p) = frame.params::<cdp::BindingCalled>() else {
                return true;
            };
            let from = Some(p.execution_context_id);
            if p.name == BINDING && from == page.previous_world && from != page.world {
                // The world of the document the page just left: its handover only.
                if let Ok(AgentMessage::Sealed(sealed)) = serde_json::from_str(&p.payload) {
                    handed_over(page, sealed, at, (session, out));
                }
                return true;
            }
            if p.name != BINDING || page.world != from {
                tracing::trace!(
                    "observer: a binding call from context {} (the agent's world: {:?}) ignored",
                    p.execution_context_id,
                    page.world
                );
                return true;
            }
            let message = match serde_json::from_str(&p.payload) {
                Ok(AgentMessage::Focus {
                    kind: word,
                    field,
                    group,
                    from,
                }) => {
                    let kind = field_kind(&word);
                    tracing::trace!("observer: focus {}", kind.map_or("?", |_| word.as_str()));
                    let facts = FieldFacts { field, group, from };
                    pages.focused_field_at(target, kind, facts, at);
                    return true;
                }
                Ok(AgentMessage::Sealed(sealed)) => {
                    handed_over(page, sealed, at, (session, out));
                    return true;
                }
                Ok(m) => m,
                Err(_) => return true,
            };
            out.replies.push(VerifyReply::Located(agent_report(
                page.target_id.clone(),
                message,
                at,
            )));
        }
        O::PageLoadEventFired
        | O::PageJavascriptDialogOpening
        | O::PageJavascriptDialogClosed
        | O::InspectorTargetCrashed
        | O::InspectorTargetReloadedAfterCrash => return false,
    }
    true
}

/// The agent handed over the typing of the document the page is leaving: the page's readings
/// may go on.
fn handed_over(page: &mut Page, sealed: Sealed, at: SystemTime, (session, out): (&str, &mut Work)) {
    let left = Left::new(sealed, at);
    tracing::trace!("observer: a left document's typing handed over: {left:?}");
    page.left = Some(left);
    out.kick.push(session.to_owned());
}

#[cfg(test)]
mod tests {
    use super::AgentMessage;

    #[test]
    fn the_agents_messages_are_read_by_their_tag() {
        let m: AgentMessage =
            serde_json::from_str(r#"{"t":"focus","kind":"email","field":3,"group":2,"from":1}"#)
                .unwrap();
        let AgentMessage::Focus {
            kind,
            field,
            group,
            from,
        } = m
        else {
            panic!("a focus report");
        };
        assert_eq!((kind.as_str(), field, group, from), ("email", 3, 2, 1));
        let Ok(AgentMessage::Focus { kind, field, .. }) = serde_json::from_str(r#"{"t":"focus"}"#)
        else {
            panic!("a focus report");
        };
        assert_eq!((kind.as_str(), field), ("", 0));
        let m = serde_json::from_str(
            r#"{"t":"sealed","installedAt":1.5,"fields":[{"value":"x"}],"segs":[{"field":0}]}"#,
        )
        .unwrap();
        assert!(matches!(m, AgentMessage::Sealed(_)));
        let m = serde_json::from_str(r##"{"t":"hit","at":1.5,"target":{"css":"#a"}}"##).unwrap();
        assert!(matches!(m, AgentMessage::Hit { at, .. } if at == 1.5));
        let m = serde_json::from_str(r#"{"t":"typed","target":{"why":"no-locator"}}"#).unwrap();
        assert!(matches!(m, AgentMessage::Typed { at, .. } if at == 0.0));
        let m = serde_json::from_str(
            r#"{"t":"hit","at":2,"target":{"text":"Pricing"},"hover":{"role":"button","name":"Products"}}"#,
        )
        .unwrap();
        assert!(matches!(m, AgentMessage::Hit { hover: Some(_), .. }));
        let m = serde_json::from_str(
            r#"{"t":"chose","at":3,"target":{"label":"Colour"},"options":["Blue"]}"#,
        )
        .unwrap();
        assert!(matches!(
            m,
            AgentMessage::Chose {
                options: Some(_),
                ..
            }
        ));
        let m = serde_json::from_str(r##"{"t":"files","at":4,"target":{"css":"#f"}}"##).unwrap();
        assert!(matches!(m, AgentMessage::Files { .. }));
        for other in [r#"{"t":"blur"}"#, r#"{"kind":"email"}"#, "[]"] {
            assert!(
                serde_json::from_str::<AgentMessage>(other).is_err(),
                "{other}"
            );
        }
    }
}

#[cfg(test)]
mod handover_tests {
    use super::*;
    use cdp_sanitize::Sanitizer;
    use std::sync::Arc;

    const TARGET: &str = "T1";

    fn event(page: &mut Page, pages: &Pages, text: &str, out: &mut Work) {
        let frame = Frame::parse(text).expect("a frame");
        let e = match frame.method().and_then(Event::parse) {
            Some(Event::TrafficReader(e)) => e,
            _ => panic!("not an agent event: {text}"),
        };
        agent_event(page, pages, e, &frame, SystemTime::now(), ("S1", out));
    }

    fn binding(context: i64, payload: &str) -> String {
        serde_json::json!({"method": "Runtime.bindingCalled", "sessionId": "S1",
            "params": {"name": BINDING, "executionContextId": context, "payload": payload}})
        .to_string()
    }

    fn created(context: i64) -> String {
        serde_json::json!({"method": "Runtime.executionContextCreated", "sessionId": "S1",
            "params": {"context": {"id": context, "name": WORLD, "auxData": {"frameId": TARGET}}}})
        .to_string()
    }

    /// The document a page leaves hands over its unread typing from its own world, which may
    /// already be the previous one; nothing else is taken from a world that is not current.
    #[test]
    fn a_left_documents_handover_is_taken_from_its_world_only() {
        let pages = Pages::new(Arc::new(Sanitizer::new()), true);
        let mut page = Page::new(TARGET.into());
        let mut out = Work::default();
        event(&mut page, &pages, &created(3), &mut out);
        assert_eq!((page.world, page.worlds), (Some(3), 1));
        // The next document's world is reported before the old world's handover arrives.
        event(&mut page, &pages, &created(7), &mut out);
        assert_eq!((page.world, page.previous_world), (Some(7), Some(3)));
        let sealed = r#"{"t":"sealed","installedAt":1,"fields":[],"segs":[{"id":"a/1"}]}"#;
        event(&mut page, &pages, &binding(3, sealed), &mut out);
        assert!(page.left.is_some(), "the handover of the document left");
        assert_eq!(out.kick, ["S1", "S1", "S1"], "readings may go on");
        // A focus report from a world that is not the current one is not taken.
        page.left = None;
        pages.observe(TARGET);
        event(
            &mut page,
            &pages,
            &binding(7, r#"{"t":"focus","kind":"email"}"#),
            &mut out,
        );
        let email = Some(crate::pages::veto::FieldKind::Input(
            cdp_sanitize::InputType::Email,
        ));
        assert_eq!(pages.focused_kind_at(TARGET, SystemTime::now()), email);
        event(
            &mut page,
            &pages,
            &binding(3, r#"{"t":"focus","kind":"password"}"#),
            &mut out,
        );
        assert_eq!(pages.focused_kind_at(TARGET, SystemTime::now()), email);
        // Nor a handover from a world that is neither.
        event(&mut page, &pages, &binding(9, sealed), &mut out);
        assert!(page.left.is_none());
    }
}
