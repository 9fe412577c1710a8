//! Which agent tool call a record happened during: the one place that links CDP records to the
//! MCP tool call that caused them (`payload.toolCall`, or `payload.toolCallCandidates` when more
//! than one could have).
//!
//! A producer of tool calls (the MCP gateway) says when each call begins and ends; the run
//! writer, which sees every record of the run, asks [`ToolCalls::link`] about each record
//! before appending it. Matching is by time and page, never by arrival order (a frame or a typing
//! verdict reaches the writer seconds after the fact):
//!
//! - a client command (an `action`) may belong to a call that was in flight at its `startedAt`;
//! - an effect (a failed request, a console entry, a frame) also to a call that ended at most
//!   [`AFTERMATH`] before it, unless another call started between that end and the effect;
//! - of those, a call seen acting on the record's page (or maybe acting on it), or not yet seen
//!   acting on any page, could have caused it (a call seen acting only on other pages did not),
//!   and when that leaves none, any of them could have. A call is "seen acting on" a page when
//!   one of its commands carried that page's handle while it was the only call that could have
//!   sent it, and "maybe" when another call could have sent that command too.
//! - One call left: the record names it. Several: the record names them all as candidates and
//!   binds no page, because the calls share one CDP connection and nothing in a command says
//!   which of them sent it. Guessing linked page A's failure to the page-B call of two sent in
//!   the same tick: the record says what is known instead.
//!
//! Never looks at payloads beyond the kind and method, never persists anything itself, and is
//! bounded ([`MAX_CALLS`] calls remembered, each for [`REMEMBER`] after it ended).
//!
//! Each call also collects what the evidence learned about it ([`CallFacts`]): its typing steps,
//! and failures as soon as they are seen ([`ToolCalls::note_failure`]: a failure waits for a
//! frame before it is written), for the producer to tell the agent when the call is answered.
//!
//! Typing is tracked per call, not by counting the whole process's typing: the traffic reader
//! tags each typing burst at its first key with the calls that could have typed it
//! ([`ToolCalls::burst_began`], by the same rules as a command), and the burst's step, once
//! written with its verdict or without one, is linked to exactly those calls
//! ([`BurstCalls::step`]). Each call counts its bursts begun and those still without a step, so
//! a producer can wait until the typing of *its* call is told ([`ToolCalls::typing_settled`])
//! and knows when a call that should have typed saw no typing at all.
//!
//! A producer that knows from the tool's own words which page a call acts on (an MCP server's
//! page id) says so ([`ToolCalls::acts_on`]): overlapping calls are then told apart by their
//! pages from their first record on.

use crate::facts::{is_browser_action, is_typing, CallFacts};
use cdp_evidence::{ActionId, ActionMethod, Record, RecordKind, Source};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// How long after a call ended its effects (failures, frames) are still its own.
pub const AFTERMATH: Duration = Duration::from_secs(2);
/// How long an ended call is remembered for records that reach the writer late.
pub const REMEMBER: Duration = Duration::from_secs(60);
/// Calls remembered at most; the oldest ended ones are forgotten first.
pub const MAX_CALLS: usize = 256;
/// Pages one call is remembered acting on, at most.
const MAX_PAGES: usize = 16;

struct Call {
    id: ActionId,
    start: SystemTime,
    end: Option<SystemTime>,
    /// Page handles its commands carried.
    pages: Vec<String>,
    /// Page handles of commands it may have sent (another call could have).
    maybe: Vec<String>,
    /// What the evidence learned about it so far.
    facts: CallFacts,
    /// Keys (typing commands) that reached a page while it could have sent them.
    keys: u32,
    /// Typing bursts tagged with it.
    bursts: u32,
    /// Of those, bursts whose step is not linked yet.
    open: u32,
}

impl Call {
    /// Whether it could have caused a record on `page`: seen acting on it, or maybe, or seen
    /// acting on no page at all.
    fn could_act_on(&self, page: &str) -> bool {
        let has = |pages: &[String]| pages.iter().any(|p| p == page);
        (self.pages.is_empty() && self.maybe.is_empty()) || has(&self.pages) || has(&self.maybe)
    }
}

fn remember(pages: &mut Vec<String>, page: &str) {
    if !pages.iter().any(|p| p == page) && pages.len() < MAX_PAGES {
        pages.push(page.to_owned());
    }
}

/// The tool calls in flight and recently ended. Cheap to clone; clones share the table.
#[derive(Clone, Default)]
pub struct ToolCalls {
    calls: Arc<Mutex<VecDeque<Call>>>,
    /// Woken whenever a burst's step is linked (or a burst ends without one).
    stepped: Arc<tokio::sync::Notify>,
    /// A call was ever begun: until then the readers' per-command questions cost one load.
    used: Arc<std::sync::atomic::AtomicBool>,
}

/// How far the typing of one call has got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallTyping {
    /// Keys (typing commands: keystrokes, insertions) that reached a page while the call could
    /// have sent them; 0 when no key of its reached the browser.
    pub keys: u32,
    /// Typing bursts whose first key came while the call could have sent it.
    pub bursts: u32,
    /// Of those, bursts whose step is not linked to the call yet (still being typed, or waiting
    /// for its verdict).
    pub open: u32,
}

impl std::fmt::Debug for ToolCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCalls").finish_non_exhaustive()
    }
}

impl ToolCalls {
    fn table(&self) -> std::sync::MutexGuard<'_, VecDeque<Call>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a call was ever begun (a run without a producer of tool calls never has one).
    pub fn used(&self) -> bool {
        self.used.load(std::sync::atomic::Ordering::Acquire)
    }

    /// A call started at `at` (call before the call reaches the browser).
    pub fn begin(&self, id: ActionId, at: SystemTime) {
        self.used.store(true, std::sync::atomic::Ordering::Release);
        let mut calls = self.table();
        forget_old(&mut calls, at);
        // Kept in start order: usually a push at the back.
        let pos = calls.partition_point(|c| c.start <= at);
        calls.insert(
            pos,
            Call {
                id,
                start: at,
                end: None,
                pages: Vec::new(),
                maybe: Vec::new(),
                facts: CallFacts::default(),
                keys: 0,
                bursts: 0,
                open: 0,
            },
        );
    }

    /// Call `id` acts on page `page` (a target handle, as records carry it): the tool's own
    /// arguments or answer say so. Records on other pages are then not its own, however they
    /// overlap with it.
    pub fn acts_on(&self, id: &ActionId, page: &str) {
        if let Some(call) = self.table().iter_mut().find(|c| &c.id == id) {
            remember(&mut call.pages, page);
        }
    }

    /// The pages (target handles) call `id` was seen acting on, or may have: its own first.
    pub fn pages_of(&self, id: &ActionId) -> Vec<String> {
        self.table()
            .iter()
            .find(|c| &c.id == id)
            .map(|c| c.pages.iter().chain(&c.maybe).cloned().collect())
            .unwrap_or_default()
    }

    /// The call ended at `at` (its result, an error, or no answer).
    pub fn end(&self, id: &ActionId, at: SystemTime) {
        if let Some(call) = self.table().iter_mut().find(|c| &c.id == id) {
            call.end = Some(at.max(call.start));
        }
    }

    /// Calls not ended yet.
    pub fn in_flight(&self) -> usize {
        self.table().iter().filter(|c| c.end.is_none()).count()
    }

    /// Names the call `record` happened during, if any (see the module docs). Records of the
    /// calls' own producer and markers are left alone, as is a record already linked.
    pub fn link(&self, record: &mut Record) {
        if record.tool_call().is_some()
            || !record.tool_call_candidates().is_empty()
            || record.source_override() == Some(&Source::MCP)
        {
            return;
        }
        let effect = match record.kind() {
            RecordKind::Network(_) | RecordKind::Console(_) => true,
            RecordKind::Action(a) => a.method == ActionMethod::Frame,
            RecordKind::Lifecycle(_) | RecordKind::Custom(_) => false,
            // Markers, and kinds added later: not something a call did.
            _ => return,
        };
        let mut calls = self.table();
        if calls.is_empty() {
            return;
        }
        let t = record.start_time().unwrap_or_else(SystemTime::now);
        let grace = if effect { AFTERMATH } else { Duration::ZERO };
        let page = record.target_handle();
        let typing = is_typing(record);
        match choose(&calls, t, grace, page) {
            Choice::None => {}
            Choice::One(index) => {
                let call = &mut calls[index];
                if let (Some(page), false) = (page, effect) {
                    remember(&mut call.pages, page);
                }
                record.link_tool_call(call.id.clone());
                if typing {
                    call.facts.add_typing(record, false);
                } else if is_browser_action(record) {
                    call.facts.add_action(record);
                }
            }
            Choice::Several(indices) => {
                if let (Some(page), false) = (page, effect) {
                    for &i in &indices {
                        remember(&mut calls[i].maybe, page);
                    }
                }
                if typing {
                    for &i in &indices {
                        calls[i].facts.add_typing(record, true);
                    }
                }
                record.link_tool_call_candidates(
                    indices.into_iter().map(|i| calls[i].id.clone()).collect(),
                );
            }
        }
    }
}

impl ToolCalls {
    /// A failure (a failed request, a console error) seen now, before it waits for a frame:
    /// noted with the calls it may belong to, by the same rules as [`ToolCalls::link`], so the
    /// call's producer hears of it when the call is answered. The record is linked for the
    /// journal later, by the writer.
    pub fn note_failure(&self, record: &Record) {
        let mut calls = self.table();
        if calls.is_empty() {
            return;
        }
        let t = record.start_time().unwrap_or_else(SystemTime::now);
        match choose(&calls, t, AFTERMATH, record.target_handle()) {
            Choice::None => {}
            Choice::One(i) => calls[i].facts.add_failure(record, false),
            Choice::Several(indices) => {
                for i in indices {
                    calls[i].facts.add_failure(record, true);
                }
            }
        }
    }

    /// What the evidence learned about call `id` so far; `None` once it is forgotten (or was
    /// never begun).
    pub fn facts(&self, id: &ActionId) -> Option<CallFacts> {
        self.table()
            .iter()
            .find(|c| &c.id == id)
            .map(|c| c.facts.clone())
    }
}

impl ToolCalls {
    /// A typing burst's first key reached page `page` at `at`: the burst is tagged with the
    /// calls that could have sent it (by the rules of [`ToolCalls::link`] for a command), each
    /// of which now waits for its step. `None` when no call could have.
    pub fn burst_began(&self, at: SystemTime, page: Option<&str>) -> Option<BurstCalls> {
        let mut calls = self.table();
        if calls.is_empty() {
            return None;
        }
        let ids: Vec<usize> = match choose(&calls, at, Duration::ZERO, page) {
            Choice::None => return None,
            Choice::One(i) => {
                if let Some(page) = page {
                    remember(&mut calls[i].pages, page);
                }
                vec![i]
            }
            Choice::Several(indices) => {
                if let Some(page) = page {
                    for &i in &indices {
                        remember(&mut calls[i].maybe, page);
                    }
                }
                indices
            }
        };
        for &i in &ids {
            calls[i].keys += 1;
            calls[i].bursts += 1;
            calls[i].open += 1;
        }
        Some(BurstCalls {
            calls: self.clone(),
            ids: ids.into_iter().map(|i| calls[i].id.clone()).collect(),
        })
    }

    /// A client command reached page `page` at `at`: the calls that could have sent it act on
    /// that page (or may), as [`ToolCalls::link`] will say when its record is written.
    pub fn commanded(&self, at: SystemTime, page: Option<&str>) {
        let Some(page) = page else {
            return;
        };
        let mut calls = self.table();
        if calls.is_empty() {
            return;
        }
        match choose(&calls, at, Duration::ZERO, Some(page)) {
            Choice::None => {}
            Choice::One(i) => remember(&mut calls[i].pages, page),
            Choice::Several(indices) => {
                for i in indices {
                    remember(&mut calls[i].maybe, page);
                }
            }
        }
    }

    /// A key that continues an open burst reached page `page` at `at`: counted for the calls
    /// that could have sent it (its step stays the burst's first key's call's).
    pub fn typed(&self, at: SystemTime, page: Option<&str>) {
        let mut calls = self.table();
        if calls.is_empty() {
            return;
        }
        let ids = match choose(&calls, at, Duration::ZERO, page) {
            Choice::None => return,
            Choice::One(i) => vec![i],
            Choice::Several(indices) => indices,
        };
        for i in ids {
            calls[i].keys = calls[i].keys.saturating_add(1);
        }
    }

    /// Closes the bursts `ids` hold for; links `step` to them first, if there is one.
    fn burst_ended(&self, ids: &[ActionId], step: Option<&mut Record>) {
        {
            let mut calls = self.table();
            let shared = ids.len() > 1;
            if let Some(record) = step {
                match ids {
                    [one] => record.link_tool_call(one.clone()),
                    _ => record.link_tool_call_candidates(ids.to_vec()),
                }
                for c in calls.iter_mut().filter(|c| ids.contains(&c.id)) {
                    c.facts.add_typing(record, shared);
                }
            }
            for c in calls.iter_mut().filter(|c| ids.contains(&c.id)) {
                c.open = c.open.saturating_sub(1);
            }
        }
        self.stepped.notify_waiters();
    }

    /// How far call `id`'s typing has got; `None` once it is forgotten (or was never begun).
    pub fn typing_of(&self, id: &ActionId) -> Option<CallTyping> {
        self.table()
            .iter()
            .find(|c| &c.id == id)
            .map(|c| CallTyping {
                keys: c.keys,
                bursts: c.bursts,
                open: c.open,
            })
    }

    /// Waits until every typing burst tagged with call `id` so far has its step linked, or
    /// `deadline`; true when none is left open. Tags come as the traffic reader handles the
    /// keys: wait for it to catch up first.
    pub async fn typing_settled(&self, id: &ActionId, deadline: tokio::time::Instant) -> bool {
        loop {
            let stepped = self.stepped.notified();
            tokio::pin!(stepped);
            stepped.as_mut().enable();
            if self.typing_of(id).is_none_or(|t| t.open == 0) {
                return true;
            }
            if tokio::time::timeout_at(deadline, stepped).await.is_err() {
                return self.typing_of(id).is_none_or(|t| t.open == 0);
            }
        }
    }
}

/// The calls a typing burst was tagged with at its first key. Its step is linked to them
/// ([`BurstCalls::step`]); a burst that ends without a step of its own still closes its place
/// in their count when this is dropped.
pub struct BurstCalls {
    calls: ToolCalls,
    ids: Vec<ActionId>,
}

impl std::fmt::Debug for BurstCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BurstCalls")
            .field("calls", &self.ids.len())
            .finish()
    }
}

impl BurstCalls {
    /// Whether call `id` (its action id, as text) is among them.
    pub(crate) fn has(&self, id: &str) -> bool {
        self.ids.iter().any(|c| c.as_str() == id)
    }

    /// The burst's step: linked to the calls (`toolCall`, or `toolCallCandidates` when more than
    /// one could have typed it) and added to their facts.
    pub fn step(mut self, record: &mut Record) {
        let ids = std::mem::take(&mut self.ids);
        self.calls.burst_ended(&ids, Some(record));
    }
}

impl Drop for BurstCalls {
    fn drop(&mut self) {
        if !self.ids.is_empty() {
            let ids = std::mem::take(&mut self.ids);
            self.calls.burst_ended(&ids, None);
        }
    }
}

/// Which calls a record may belong to.
#[derive(Debug, PartialEq, Eq)]
enum Choice {
    None,
    One(usize),
    /// More than one, in start order.
    Several(Vec<usize>),
}

/// The calls a record at `t` on `page` may belong to (see the module docs).
fn choose(calls: &VecDeque<Call>, t: SystemTime, grace: Duration, page: Option<&str>) -> Choice {
    // Calls are in start order: those before `started` had started by `t`.
    let started = calls.partition_point(|c| c.start <= t);
    // In flight at `t`; or ended, within the grace, and no call started since it ended.
    let candidates: Vec<usize> = (0..started)
        .filter(|&i| match calls[i].end {
            None => true,
            Some(end) if t <= end => true,
            Some(end) => t <= end + grace && !calls.iter().any(|c| c.start > end && c.start <= t),
        })
        .collect();
    let possible: Vec<usize> = match page {
        Some(page) if !candidates.is_empty() => {
            let here: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&i| calls[i].could_act_on(page))
                .collect();
            if !here.is_empty() {
                here
            } else {
                // No call in flight acts on that page: a call that did and ended within the
                // grace is the likelier cause, even if another call started since (a frame of a
                // failure on page B, taken as a call on page A begins). Else the page is one the
                // calls were not seen on yet (a popup a click opened): theirs.
                let ended_there: Vec<usize> = (0..started)
                    .filter(|&i| {
                        calls[i].end.is_some_and(|end| t <= end + grace)
                            && calls[i]
                                .pages
                                .iter()
                                .chain(&calls[i].maybe)
                                .any(|p| p == page)
                    })
                    .collect();
                if ended_there.is_empty() {
                    candidates
                } else {
                    ended_there
                }
            }
        }
        _ => candidates,
    };
    match possible.as_slice() {
        [] => Choice::None,
        [one] => Choice::One(*one),
        _ => Choice::Several(possible),
    }
}

/// Forgets calls that ended long ago, and the oldest ended ones beyond [`MAX_CALLS`].
fn forget_old(calls: &mut VecDeque<Call>, now: SystemTime) {
    calls.retain(|c| c.end.is_none_or(|end| end + REMEMBER >= now));
    while calls.len() >= MAX_CALLS {
        match calls.iter().position(|c| c.end.is_some()) {
            Some(i) => {
                calls.remove(i);
            }
            // Every remembered call is in flight: forget the oldest rather than grow.
            None => {
                calls.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_evidence::{Action, Console, ConsoleLevel};
    use cdp_sanitize::{SafeText, Sanitizer};
    use std::time::UNIX_EPOCH;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
    }

    fn action(s: &Sanitizer, method: &'static str, ms: u64, page: Option<&str>) -> Record {
        let mut r = Record::new(
            SafeText::literal("cdp"),
            RecordKind::Action(Action::new(SafeText::literal(method))),
        )
        .started_at(at(ms));
        if let Some(p) = page {
            r = r.target(s.target_info(&serde_json::json!({"targetId": p, "type": "page"})));
        }
        r
    }

    fn console(s: &Sanitizer, ms: u64, page: Option<&str>) -> Record {
        let mut r = Record::new(
            SafeText::literal("cdp"),
            RecordKind::Console(Console::new(ConsoleLevel::Error, SafeText::literal("x"))),
        )
        .started_at(at(ms));
        if let Some(p) = page {
            r = r.target(s.target_info(&serde_json::json!({"targetId": p, "type": "page"})));
        }
        r
    }

    fn linked(calls: &ToolCalls, mut r: Record) -> Option<ActionId> {
        calls.link(&mut r);
        r.tool_call().cloned()
    }

    const PAGE_A: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    const PAGE_B: &str = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

    #[test]
    fn actions_belong_to_the_call_in_flight_and_effects_to_its_aftermath() {
        let s = Sanitizer::new();
        let calls = ToolCalls::default();
        assert_eq!(linked(&calls, action(&s, "Page.navigate", 0, None)), None);
        let a = ActionId::at(at(100));
        calls.begin(a.clone(), at(100));
        assert_eq!(calls.in_flight(), 1);
        assert_eq!(
            linked(&calls, action(&s, "Page.navigate", 99, None)),
            None,
            "before it"
        );
        assert_eq!(
            linked(&calls, action(&s, "Page.navigate", 100, None)),
            Some(a.clone())
        );
        calls.end(&a, at(500));
        assert_eq!(calls.in_flight(), 0);
        assert_eq!(
            linked(&calls, action(&s, "Input.insertText", 500, None)),
            Some(a.clone())
        );
        assert_eq!(
            linked(&calls, action(&s, "Input.insertText", 501, None)),
            None,
            "a command after the call ended is not the call's"
        );
        // A failure or a frame shortly after is the call's effect.
        assert_eq!(linked(&calls, console(&s, 900, None)), Some(a.clone()));
        assert_eq!(
            linked(&calls, action(&s, "frame", 2400, None)),
            Some(a.clone())
        );
        assert_eq!(linked(&calls, console(&s, 2501, None)), None, "too late");
        // Once another call started, later effects are that call's.
        let b = ActionId::at(at(1000));
        calls.begin(b.clone(), at(1000));
        calls.end(&b, at(1100));
        assert_eq!(linked(&calls, console(&s, 900, None)), Some(a.clone()));
        assert_eq!(linked(&calls, console(&s, 1200, None)), Some(b.clone()));
        // The gateway's own records and markers are never linked.
        let own = action(&s, "click", 1050, None).source(Source::MCP);
        assert_eq!(linked(&calls, own), None);
        let mut marker = Record::new(
            SafeText::literal("cdp-evidence"),
            RecordKind::Marker(cdp_evidence::Marker::evidence_dropped(1)),
        )
        .started_at(at(1050));
        calls.link(&mut marker);
        assert!(marker.tool_call().is_none());
    }

    #[test]
    fn each_call_collects_its_typing_steps_and_failures() {
        let s = Sanitizer::new();
        let calls = ToolCalls::default();
        let a = ActionId::at(at(100));
        calls.begin(a.clone(), at(100));
        calls.note_failure(&console(&s, 150, None));
        assert_eq!(
            linked(&calls, action(&s, "type", 120, None)),
            Some(a.clone())
        );
        // Another page's click is not typing, and a failure before any call is no call's.
        linked(&calls, action(&s, "click", 130, Some(PAGE_A)));
        calls.note_failure(&console(&s, 50, None));
        let facts = calls.facts(&a).expect("remembered");
        assert_eq!((facts.typing.len(), facts.failures.len()), (1, 1));
        assert!(!facts.typing[0].shared && !facts.failures[0].shared);
        // Two calls in flight: a failure either could have caused is both calls', shared.
        let b = ActionId::at(at(200));
        calls.begin(b.clone(), at(200));
        calls.note_failure(&console(&s, 250, None));
        assert_eq!(calls.facts(&a).expect("a").failures.len(), 2);
        let of_b = calls.facts(&b).expect("b");
        assert!(of_b.failures.len() == 1 && of_b.failures[0].shared);
        assert!(calls.facts(&ActionId::at(at(5))).is_none());
    }

    #[test]
    fn a_call_keeps_its_own_actions_but_not_its_typing_frames_or_shared_ones() {
        let s = Sanitizer::new();
        let calls = ToolCalls::default();
        let a = ActionId::at(at(100));
        calls.begin(a.clone(), at(100));
        linked(&calls, action(&s, "Page.navigate", 110, None));
        linked(&calls, action(&s, "click", 120, None));
        linked(&calls, action(&s, "type", 130, None));
        linked(&calls, action(&s, "frame", 140, None));
        let facts = calls.facts(&a).expect("remembered");
        let methods: Vec<&str> = facts
            .actions
            .iter()
            .map(|l| match l.record.kind() {
                RecordKind::Action(x) => x.method.as_str(),
                _ => "not an action",
            })
            .collect();
        assert_eq!(methods, ["Page.navigate", "click"]);
        assert_eq!(facts.typing.len(), 1);
        // Beyond the bound, counted.
        for i in 0..crate::facts::MAX_ACTIONS {
            linked(&calls, action(&s, "click", 150 + i as u64, None));
        }
        let facts = calls.facts(&a).expect("remembered");
        assert_eq!(facts.actions.len(), crate::facts::MAX_ACTIONS);
        assert_eq!(facts.more_actions, 2);
        // Two calls in flight: an action either could have made is neither's alone.
        let b = ActionId::at(at(300));
        calls.begin(b.clone(), at(300));
        linked(&calls, action(&s, "click", 310, None));
        assert_eq!(calls.facts(&b).expect("b").actions.len(), 0);
    }

    #[test]
    fn overlapping_calls_are_told_apart_by_the_page_they_act_on() {
        let s = Sanitizer::new();
        let calls = ToolCalls::default();
        let a = ActionId::at(at(0));
        let b = ActionId::at(at(10));
        calls.begin(a.clone(), at(0));
        // The first command of the only call in flight binds it to page A.
        assert_eq!(
            linked(
                &calls,
                action(&s, "Input.dispatchMouseEvent", 5, Some(PAGE_A))
            ),
            Some(a.clone())
        );
        calls.begin(b.clone(), at(10));
        // A command on page B: the call not yet acting on a page takes it.
        assert_eq!(
            linked(&calls, action(&s, "Page.navigate", 20, Some(PAGE_B))),
            Some(b.clone())
        );
        // From now on each page's records go to its own call, whichever started last.
        assert_eq!(
            linked(&calls, action(&s, "Input.insertText", 30, Some(PAGE_A))),
            Some(a.clone())
        );
        assert_eq!(
            linked(&calls, console(&s, 31, Some(PAGE_A))),
            Some(a.clone())
        );
        assert_eq!(
            linked(&calls, console(&s, 32, Some(PAGE_B))),
            Some(b.clone())
        );
        // A record without a page could be either's: it says so.
        let mut r = action(&s, "Target.getTargets", 33, None);
        calls.link(&mut r);
        assert_eq!(r.tool_call(), None);
        assert_eq!(r.tool_call_candidates(), [a.clone(), b.clone()]);
        // The ids a record names are sanitizer handles, as the record carries them.
        let mut r = action(&s, "Input.insertText", 40, Some(PAGE_A));
        calls.link(&mut r);
        assert_eq!(r.tool_call(), Some(&a));
    }

    /// Round after round on two pages: a frame of B's failure, taken as the next round's call
    /// on page A began (B's own next call not begun yet), is B's: A is known to act elsewhere.
    #[test]
    fn an_effect_on_a_page_no_call_in_flight_acts_on_is_the_ended_call_that_did() {
        let s = Sanitizer::new();
        let calls = ToolCalls::default();
        let b = ActionId::at(at(0));
        calls.begin(b.clone(), at(0));
        // Each call's first command binds it to its page.
        linked(&calls, action(&s, "Runtime.evaluate", 5, Some(PAGE_B)));
        calls.end(&b, at(10));
        let a = ActionId::at(at(20));
        calls.begin(a.clone(), at(20));
        linked(&calls, action(&s, "Runtime.evaluate", 21, Some(PAGE_A)));
        assert_eq!(
            linked(&calls, console(&s, 25, Some(PAGE_B))),
            Some(b.clone())
        );
        // A page neither was seen on (a popup A's click opened): A's, in flight.
        assert_eq!(
            linked(&calls, console(&s, 26, Some("target:popup"))),
            Some(a.clone())
        );
        // Past B's grace, A in flight is all there is.
        let late = 10 + AFTERMATH.as_millis() as u64 + 1;
        assert_eq!(linked(&calls, console(&s, late, Some(PAGE_B))), Some(a));
    }

    fn candidates(calls: &ToolCalls, mut r: Record) -> Vec<ActionId> {
        calls.link(&mut r);
        r.tool_call_candidates().to_vec()
    }

    /// Two calls sent in the same tick, on pages A and B, run one after the other by
    /// the server. Nothing of A's may be linked to B, nor B's to A.
    #[test]
    fn calls_sent_in_the_same_tick_are_never_linked_to_each_others_records() {
        let s = Sanitizer::new();
        let calls = ToolCalls::default();
        let a = ActionId::at(at(0));
        let b = ActionId::at(at(1));
        calls.begin(a.clone(), at(0));
        calls.begin(b.clone(), at(1));
        // The server runs A first: its command and its page's failures could be either call's.
        let both = vec![a.clone(), b.clone()];
        assert_eq!(
            candidates(&calls, action(&s, "Runtime.evaluate", 5, Some(PAGE_A))),
            both
        );
        assert_eq!(linked(&calls, console(&s, 6, Some(PAGE_A))), None);
        assert_eq!(candidates(&calls, console(&s, 6, Some(PAGE_A))), both);
        // A's answer arrives; B runs on page B: only B was in flight.
        calls.end(&a, at(10));
        assert_eq!(
            linked(&calls, action(&s, "Runtime.evaluate", 12, Some(PAGE_B))),
            Some(b.clone())
        );
        // A failure of page A after A ended: A's aftermath, or B's (it may have sent page A's
        // command): both named. One of page B is B's: A was never seen near page B.
        assert_eq!(candidates(&calls, console(&s, 13, Some(PAGE_A))), both);
        assert_eq!(
            linked(&calls, console(&s, 14, Some(PAGE_B))),
            Some(b.clone())
        );
        calls.end(&b, at(20));
        // After both: B's aftermath on page B (B started before A ended, so it did not
        // supersede A's aftermath, but A was never near page B).
        assert_eq!(
            linked(&calls, console(&s, 30, Some(PAGE_B))),
            Some(b.clone())
        );
        assert_eq!(candidates(&calls, console(&s, 31, Some(PAGE_A))), both);
        // A call that starts later supersedes both for what follows.
        let c = ActionId::at(at(40));
        calls.begin(c.clone(), at(40));
        assert_eq!(
            linked(&calls, console(&s, 41, Some(PAGE_A))),
            Some(c.clone())
        );
    }

    /// What the traffic reader tells as it sees keys and commands: a burst tagged with the call
    /// in flight (and its page remembered), keys counted, a command's page known before its
    /// record is written; a burst that ends without a step still closes its place.
    #[test]
    fn typing_and_commands_are_counted_per_call_as_they_are_seen() {
        let s = Sanitizer::new();
        let calls = ToolCalls::default();
        assert!(!calls.used());
        assert!(
            calls.burst_began(at(5), Some(PAGE_A)).is_none(),
            "no call yet"
        );
        let a = ActionId::at(at(10));
        calls.begin(a.clone(), at(10));
        assert!(calls.used());
        calls.commanded(at(11), Some(PAGE_B));
        assert_eq!(calls.pages_of(&a), [PAGE_B]);
        let burst = calls.burst_began(at(12), Some(PAGE_A)).expect("a's");
        calls.typed(at(13), Some(PAGE_A));
        let t = calls.typing_of(&a).expect("remembered");
        assert_eq!((t.keys, t.bursts, t.open), (2, 1, 1));
        let mut step = action(&s, "type", 12, Some(PAGE_A));
        burst.step(&mut step);
        assert_eq!(step.tool_call(), Some(&a));
        assert_eq!(calls.typing_of(&a).expect("a").open, 0);
        assert_eq!(calls.facts(&a).expect("a").typing_steps(), 1);
        // A burst dropped without a step (its connection gone) is not waited for.
        drop(calls.burst_began(at(14), None).expect("a's"));
        assert_eq!(calls.typing_of(&a).expect("a").open, 0);
        assert_eq!(calls.typing_of(&a).expect("a").bursts, 2);
        calls.end(&a, at(20));
        // After the call: nobody's.
        assert!(calls.burst_began(at(21), Some(PAGE_A)).is_none());
    }

    #[test]
    fn the_table_stays_bounded() {
        let s = Sanitizer::new();
        let calls = ToolCalls::default();
        for i in 0..(MAX_CALLS as u64 * 2) {
            let id = ActionId::at(at(i * 10));
            calls.begin(id.clone(), at(i * 10));
            calls.end(&id, at(i * 10 + 5));
        }
        assert!(calls.table().len() <= MAX_CALLS);
        // Calls ended longer ago than REMEMBER are forgotten at the next begin.
        let late = at(MAX_CALLS as u64 * 20) + REMEMBER + Duration::from_secs(1);
        calls.begin(ActionId::at(late), late);
        assert_eq!(calls.table().len(), 1);
        let _ = s;
    }
}
