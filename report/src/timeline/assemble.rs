//! The second pass over a journal, and the model built from both.
//!
//! The steps the first pass kept are the anchors: every other record belongs to the *slot*
//! after the last kept step at or before it in time (or to the leading setup slot, or to the gap
//! where steps were left out). Per slot the pass counts plumbing and failures exactly, keeps the
//! first few of each whole (bounded heaps by time), remembers the last page seen, and the
//! artifacts named; failures the tables and the jump list show are kept whole wherever they
//! are, with their exact number (a failure's number is its rank in the filmstrip: by slot, then
//! by time).
//!
//! A record naming an agent's tool call (`payload.toolCall`) the journal has belongs to that
//! call's slot, whatever its time: its action is one of the call's effects (the first few kept
//! whole, the rest counted), its plumbing, failures and frames sit beside the call. The effects
//! of a call left out in the gap are counted there.
//! Memory stays bounded by the caps, whatever the journal's size.

mod finish;

use super::select::{FailPick, Key, Selection, StepPick, TopN};
use super::*;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Artifacts named by records, remembered to attach each once (where it first appears).
const MAX_ARTIFACTS: usize = 50_000;
/// Target handles per slot whose last page is remembered (for pages inferred by handle).
const SLOT_HANDLES: usize = 8;

/// A kept step as its record says.
struct StepCore {
    what: What,
    at_ms: Option<u64>,
    time_known: bool,
    duration_ms: Option<u64>,
    outcome: Outcome,
    error: Option<String>,
    source: Option<String>,
    tool: Option<String>,
    handle: Option<Box<str>>,
    /// Its own page (title or URL in its target), if any.
    page: Option<Page>,
    fields: Vec<(String, String)>,
    withheld: Option<String>,
}

/// The effects of one kept tool call: the first few by time, and how many in all.
#[derive(Default)]
struct CallEffects {
    kept: Option<TopN<(Key, ByKey<mcp::Effect>)>>,
    count: usize,
    /// The page of its earliest effect that names one: the page the call acted on.
    page: Option<(Key, Page)>,
}

/// A failure kept whole.
struct FailItem {
    slot: usize,
    at_ms: Option<u64>,
    time_known: bool,
    what: FailWhat,
    is_error: bool,
    source: Option<String>,
    repeat: Option<Repeat>,
}

/// An artifact's first appearance.
struct ArtCand {
    key: Key,
    slot: usize,
    at_ms: Option<u64>,
    screencast: bool,
}

#[derive(Default)]
struct Slot {
    plumb_counts: BTreeMap<Category, (usize, usize)>,
    plumbs: Option<TopN<(Key, ByKey<Plumb>)>>,
    fail_count: usize,
    fails: Option<TopN<Key>>,
    /// Kept failures (table rows, jump list) in this slot, by key, and how many failures of
    /// the slot sort before each (a difference array, summed at the end).
    ranked: Vec<Key>,
    before: Vec<u64>,
    /// The last page seen in the slot, overall and per handle; the first a plumbing record
    /// gave (for a step that has none before it).
    last_page: Option<(Key, Page)>,
    by_handle: Vec<(Box<str>, Key, Page)>,
    first_plumb_page: Option<(Key, Page, bool)>,
    withheld: Option<(Key, String)>,
    /// The earliest record (the setup step's time).
    first: Option<(Key, Option<u64>, bool)>,
}

/// A value ordered by nothing, beside the key that orders the heap.
struct ByKey<T>(T);

impl<T> PartialEq for ByKey<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<T> Eq for ByKey<T> {}
impl<T> PartialOrd for ByKey<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for ByKey<T> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

/// Where a tool call's records go.
#[derive(Clone, Copy)]
struct CallSlot {
    slot: usize,
    /// The kept step of the call; `None` when it is in the gap.
    step: Option<usize>,
}

/// The second pass: the kept steps' slots filled from the records read again.
pub(super) struct Assembly {
    caps: Caps,
    seq: u64,
    /// Kept steps' keys in time order (head, then tail), and how many are the head.
    steps: Vec<StepPick>,
    head: usize,
    gap: Option<u64>,
    /// The first step left out: records before it still belong to the last head step.
    gap_from: Option<Key>,
    cores: Vec<Option<StepCore>>,
    slots: Vec<Slot>,
    tabs: BTreeMap<Box<str>, usize>,
    framed: HashSet<String>,
    /// Failures kept whole, by file position.
    fails: HashMap<u64, FailItem>,
    /// Positions of the failures the tables and the jump list show.
    wanted: HashSet<u64>,
    arts: HashMap<String, ArtCand>,
    /// Tool calls by action id (from the first pass), and the effects of each kept one.
    calls: HashMap<Box<str>, Key>,
    effects: Vec<CallEffects>,
    /// Effects of the calls left out in the gap.
    gap_effects: u64,
}

impl Assembly {
    pub(super) fn new(picked: &mut Selection, caps: Caps) -> Assembly {
        let steps_sel = picked.take_steps();
        let total = steps_sel.total;
        let (mut head, tail, between) = steps_sel.into_parts();
        // Over the cap, the head holds one more: the first step left out, where the gap begins.
        let mut gap_from = None;
        let mut gap = None;
        if total > (picked.steps_head + picked.steps_tail) as u64 {
            gap_from = head.pop().map(|s| s.key);
            gap = Some(between + 1);
        }
        let head_len = head.len();
        let mut steps = head;
        steps.extend(tail);
        // Slots: setup, one per head step, the gap, one per tail step.
        let n_slots = 1 + steps.len() + usize::from(gap.is_some());
        let mut slots: Vec<Slot> = (0..n_slots).map(|_| Slot::default()).collect();
        let mut wanted = HashSet::new();
        // Per-step lists shrink with the number of steps (the report's size stays bounded).
        let caps = Caps {
            failures_per_step: Caps::share(caps.failures_per_step, caps.failures_total, n_slots),
            plumbing_per_step: Caps::share(caps.plumbing_per_step, caps.plumbing_total, n_slots),
            effects_per_step: Caps::share(caps.effects_per_step, caps.effects_total, n_slots),
            frames_per_step: Caps::share(caps.frames_per_step, caps.frames_total, n_slots),
            ..caps
        };
        let mut pass = Assembly {
            caps,
            seq: 0,
            cores: (0..steps.len()).map(|_| None).collect(),
            head: head_len,
            gap,
            gap_from,
            steps,
            slots: Vec::new(),
            tabs: picked.tab_numbers(),
            framed: std::mem::take(&mut picked.framed),
            fails: HashMap::new(),
            wanted: HashSet::new(),
            arts: HashMap::new(),
            calls: std::mem::take(&mut picked.calls),
            effects: Vec::new(),
            gap_effects: 0,
        };
        pass.effects = (0..pass.steps.len())
            .map(|_| CallEffects::default())
            .collect();
        for sel in [&mut picked.requests, &mut picked.console, &mut picked.jump] {
            let (h, t, _) = std::mem::replace(sel, select::Edges::new(0, 0)).into_parts();
            for FailPick { key, call } in h.into_iter().chain(t) {
                let s = match pass.call_of(call.as_deref()) {
                    Some(c) => c.slot,
                    None => pass.slot_of(&key),
                };
                wanted.insert(key.seq());
                slots[s].ranked.push(key);
            }
        }
        for s in &mut slots {
            s.ranked.sort();
            s.ranked.dedup();
            s.before = vec![0; s.ranked.len() + 1];
        }
        pass.slots = slots;
        pass.wanted = wanted;
        pass
    }

    /// The slot of a record that is not a kept step.
    fn slot_of(&self, key: &Key) -> usize {
        let i = self.steps.partition_point(|s| s.key <= *key);
        if i == 0 {
            return 0;
        }
        if self.gap.is_some()
            && i == self.head
            && self.gap_from.as_ref().is_none_or(|from| key >= from)
        {
            return self.head + 1;
        }
        self.step_slot(i - 1)
    }

    /// Where the records naming tool call `id` go, when the journal has that call: its slot,
    /// and which kept step it is (`None` in the gap).
    fn call_of(&self, id: Option<&str>) -> Option<CallSlot> {
        let key = self.calls.get(id?)?;
        match self.steps.binary_search_by(|s| s.key.cmp(key)) {
            Ok(j) => Some(CallSlot {
                slot: self.step_slot(j),
                step: Some(j),
            }),
            Err(_) if self.gap.is_some() => Some(CallSlot {
                slot: self.head + 1,
                step: None,
            }),
            // Not read again (the journal changed): as if it named none.
            Err(_) => None,
        }
    }

    /// The slot of kept step `j`.
    fn step_slot(&self, j: usize) -> usize {
        if self.gap.is_some() && j >= self.head {
            j + 2
        } else {
            j + 1
        }
    }

    fn note_page(&mut self, slot: usize, key: &Key, handle: Option<&str>, page: &Option<Page>) {
        // Only a title or a URL makes a page known; a bare tab number does not.
        let Some(page) = page
            .as_ref()
            .filter(|p| p.title.is_some() || p.url.is_some())
        else {
            return;
        };
        let s = &mut self.slots[slot];
        if s.last_page.as_ref().is_none_or(|(k, _)| key > k) {
            s.last_page = Some((key.clone(), page.clone()));
        }
        if let Some(h) = handle {
            let room = s.by_handle.len() < SLOT_HANDLES;
            match s.by_handle.iter_mut().find(|(x, _, _)| &**x == h) {
                Some((_, k, p)) if key > k => {
                    *k = key.clone();
                    *p = page.clone();
                }
                Some(_) => {}
                None if room => s.by_handle.push((h.into(), key.clone(), page.clone())),
                None => {}
            }
        }
    }

    fn note_artifacts<'a>(
        &mut self,
        paths: impl Iterator<Item = &'a String>,
        key: &Key,
        slot: usize,
        at_ms: Option<u64>,
        screencast: bool,
    ) {
        for path in paths.take(MAX_RECORD_ARTIFACTS) {
            let room = self.arts.len() < MAX_ARTIFACTS;
            match self.arts.get_mut(path) {
                Some(c) if *key < c.key => {
                    *c = ArtCand {
                        key: key.clone(),
                        slot,
                        at_ms,
                        screencast,
                    };
                }
                Some(_) => {}
                None if room => {
                    self.arts.insert(
                        path.clone(),
                        ArtCand {
                            key: key.clone(),
                            slot,
                            at_ms,
                            screencast,
                        },
                    );
                }
                None => {}
            }
        }
    }

    /// An action done during a tool call: one of the call's effects, or counted in the gap
    /// with the call. Its artifacts and page go with the call.
    fn effect(&mut self, call: CallSlot, r: &StoredRecord, seen: Seen<'_>, what: What) {
        self.note_page(call.slot, &seen.key, seen.handle, &seen.page);
        self.note_artifacts(r.artifacts.iter(), &seen.key, call.slot, seen.at_ms, false);
        let Some(j) = call.step else {
            self.gap_effects += 1;
            return;
        };
        let cap = self.caps.effects_per_step;
        let e = &mut self.effects[j];
        e.count += 1;
        if let Some(p) = seen.page.filter(|p| p.title.is_some() || p.url.is_some()) {
            if e.page.as_ref().is_none_or(|(k, _)| seen.key < *k) {
                e.page = Some((seen.key.clone(), p));
            }
        }
        let effect = mcp::Effect {
            what,
            outcome: seen.status,
            error: seen.error,
            at_ms: seen.at_ms,
            duration_ms: r.duration_ms,
        };
        e.kept
            .get_or_insert_with(|| TopN::new(cap))
            .offer((seen.key, ByKey(effect)));
    }

    /// Places one record: a step kept (or an effect of its tool call), else plumbing, a
    /// failure or a frame in the slot it belongs to.
    pub(super) fn record(&mut self, r: &StoredRecord) {
        let seen = self.see(r);
        let (role, _) = role(r, r.typed_payload());
        // A tool call is a step, never another call's effect.
        let call = match &role {
            Role::Step(What::ToolCall(_)) => None,
            _ => self.call_of(r.tool_call()),
        };
        if let Role::Step(what) = role {
            return self.step(r, seen, what, call);
        }
        let slot = match call {
            Some(c) => c.slot,
            None => self.slot_of(&seen.key),
        };
        let first = &mut self.slots[slot].first;
        if first.as_ref().is_none_or(|(k, _, _)| seen.key < *k) {
            *first = Some((seen.key.clone(), seen.at_ms, seen.time_known));
        }
        self.note_page(slot, &seen.key, seen.handle, &seen.page);
        match role {
            Role::Step(_) | Role::Marker => {}
            Role::Plumb(Category::Frame, _) => self.frame(r, &seen, slot, call.is_some()),
            Role::Plumb(category, label) => self.plumbing(r, seen, slot, category, label),
            Role::Fail(what, is_error) => self.failure(r, seen, slot, what, is_error),
        }
    }

    /// Where a record sorts and what it says of itself, as every role needs it.
    fn see<'r>(&mut self, r: &'r StoredRecord) -> Seen<'r> {
        let seq = self.seq;
        self.seq += 1;
        let (key, at_ms, time_known) = Key::of(r, seq);
        let handle = handle_of(r.target.as_ref());
        let page = page_of(
            r.target.as_ref(),
            handle.and_then(|h| self.tabs.get(h).copied()),
        );
        Seen {
            key,
            at_ms,
            time_known,
            handle,
            page,
            source: r
                .source
                .as_deref()
                .filter(|_| !r.is_from(&Source::RELAY))
                .map(|s| line(s, MAX_WORD)),
            error: r.error.as_deref().map(|e| line(e, MAX_ERROR)),
            status: Outcome::of(r.status_word()),
        }
    }

    /// A step: kept whole when the first pass kept it, else an effect of its tool call, else
    /// left out with the gap.
    fn step(&mut self, r: &StoredRecord, seen: Seen<'_>, what: What, call: Option<CallSlot>) {
        let j = match (self.steps.binary_search_by(|s| s.key.cmp(&seen.key)), call) {
            // Kept as a step of its own: the first pass offered it as one (its call was not
            // seen in time to hold it).
            (Ok(j), _) => j,
            (Err(_), Some(c)) => return self.effect(c, r, seen, what),
            (Err(_), None) => return,
        };
        let slot = self.step_slot(j);
        self.note_page(slot, &seen.key, seen.handle, &seen.page);
        self.note_artifacts(r.artifacts.iter(), &seen.key, slot, seen.at_ms, false);
        let fields = super::mcp::step_fields(r, &what);
        self.cores[j] = Some(StepCore {
            what,
            at_ms: seen.at_ms,
            time_known: seen.time_known,
            duration_ms: r.duration_ms,
            outcome: seen.status,
            error: seen.error,
            source: seen.source,
            tool: r.tool.as_deref().map(|t| line(t, MAX_WORD)),
            handle: seen.handle.map(Box::from),
            page: seen.page,
            fields,
            withheld: withheld_reason(r),
        });
    }

    /// The relay's own picture: it belongs to the last step on its tab (another tab may have
    /// moved on meanwhile); in the gap it is left out with its steps. A frame taken for a tool
    /// call's effects is the call's.
    fn frame(&mut self, r: &StoredRecord, seen: &Seen<'_>, slot: usize, of_call: bool) {
        let in_gap = self.gap.is_some() && slot == self.head + 1;
        let target = if of_call || in_gap {
            slot
        } else {
            let i = self.steps.partition_point(|s| s.key <= seen.key);
            let same = seen.handle.and_then(|h| {
                self.steps[..i]
                    .iter()
                    .rposition(|s| s.handle.as_deref() == Some(h))
            });
            match same {
                // Not across the gap: that step's frames would show a later page.
                Some(j) if !(self.gap.is_some() && i > self.head && j < self.head) => {
                    self.step_slot(j)
                }
                _ => slot,
            }
        };
        self.note_artifacts(r.artifacts.iter(), &seen.key, target, seen.at_ms, false);
        if let Some(w) = withheld_reason(r) {
            let s = &mut self.slots[target];
            if s.withheld.as_ref().is_none_or(|(k, _)| seen.key < *k) {
                s.withheld = Some((seen.key.clone(), w));
            }
        }
    }

    /// Plumbing: counted by category in its slot, the first few kept whole.
    fn plumbing(
        &mut self,
        r: &StoredRecord,
        seen: Seen<'_>,
        slot: usize,
        category: Category,
        label: String,
    ) {
        let cap = self.caps.plumbing_per_step;
        let s = &mut self.slots[slot];
        let e = s.plumb_counts.entry(category).or_insert((0, 0));
        e.0 += 1;
        if seen.status == Outcome::Error {
            e.1 += 1;
        }
        if let Some(p) = &seen.page {
            if s.first_plumb_page
                .as_ref()
                .is_none_or(|(k, _, _)| seen.key < *k)
            {
                s.first_plumb_page = Some((seen.key.clone(), p.clone(), false));
            }
        }
        let plumb = Plumb {
            label,
            at_ms: seen.at_ms,
            duration_ms: r.duration_ms,
            outcome: seen.status,
            error: seen.error,
        };
        s.plumbs
            .get_or_insert_with(|| TopN::new(cap))
            .offer((seen.key.clone(), ByKey(plumb)));
        let screencast = category == Category::Screencast;
        self.note_artifacts(r.artifacts.iter(), &seen.key, slot, seen.at_ms, screencast);
    }

    /// A failure: counted in its slot (and ranked among the kept ones); kept whole when it is
    /// among the slot's first or a table row or jump-list entry.
    fn failure(
        &mut self,
        r: &StoredRecord,
        seen: Seen<'_>,
        slot: usize,
        what: FailWhat,
        is_error: bool,
    ) {
        let cap = self.caps.failures_per_step;
        let key = seen.key;
        let s = &mut self.slots[slot];
        s.fail_count += 1;
        let p = s.ranked.partition_point(|k| *k <= key);
        s.before[p] += 1;
        let evicted = s
            .fails
            .get_or_insert_with(|| TopN::new(cap))
            .offer(key.clone());
        let kept = evicted.as_ref() != Some(&key);
        if let Some(out) = evicted {
            if !self.wanted.contains(&out.seq()) {
                self.fails.remove(&out.seq());
            }
        }
        if kept || self.wanted.contains(&key.seq()) {
            let time = |t: &Option<String>| {
                t.as_deref()
                    .and_then(cdp_evidence::time::parse_rfc3339_millis)
            };
            let repeat = r.repeat.as_ref().map(|rep| Repeat {
                count: rep.count,
                first_ms: time(&rep.first_at),
                last_ms: time(&rep.last_at),
            });
            self.fails.insert(
                key.seq(),
                FailItem {
                    slot,
                    at_ms: seen.at_ms,
                    time_known: seen.time_known,
                    what,
                    is_error,
                    source: seen.source,
                    repeat,
                },
            );
        }
        // A frame the relay's own frame record carries is shown in the step it was taken in
        // (maybe a later page), not here: the failure links to it.
        let own: Vec<&String> = r
            .artifacts
            .iter()
            .filter(|p| !self.framed.contains(*p))
            .collect();
        self.note_artifacts(own.into_iter(), &key, slot, seen.at_ms, false);
    }
}

/// One record as the second pass sees it: where it sorts, its target and page, and its words.
struct Seen<'r> {
    key: Key,
    at_ms: Option<u64>,
    time_known: bool,
    handle: Option<&'r str>,
    page: Option<Page>,
    /// Another producer's name (never `relay`).
    source: Option<String>,
    error: Option<String>,
    status: Outcome,
}
