//! The first pass over a journal: what the run holds in all (counts by kind, status, marker and
//! failure type; the time span; tabs), and *which* records the model keeps whole — the first
//! and last steps, table rows and jump-list entries by time. Memory stays bounded whatever the
//! journal's size: each selection holds at most its cap of sort keys.

use super::{role, sort_time, FailKind, Role};
use cdp_evidence::StoredRecord;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

/// Bytes of an `actionId` a sort key keeps (ids are ~45 bytes; a foreign one may be huge).
const ID_PREFIX: usize = 64;
/// Target handles remembered for tab numbers; more are not numbered.
pub(super) const MAX_TABS: usize = 10_000;
/// Artifacts named by the relay's own frame records, remembered to tell them from the frames
/// a failure waited for.
const MAX_FRAMED: usize = 100_000;
/// Tool calls remembered, so that the records naming one fold under it. The effects of calls
/// beyond this many show as steps of their own.
const MAX_CALLS: usize = 100_000;
/// Actions naming a call not (yet) seen, held until it is: a call's record is written when it
/// ends, after most of its effects. Past this many, they are offered as steps at once.
const MAX_PENDING: usize = 100_000;

/// Where a record sorts: time known first by time, then unknown; then `actionId`; then file
/// order (the sort used to be stable over file order).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key {
    unknown: bool,
    ms: u64,
    id: Box<str>,
    seq: u64,
}

impl Key {
    pub(super) fn of(r: &StoredRecord, seq: u64) -> (Key, Option<u64>, bool) {
        let (at_ms, known) = sort_time(r);
        let mut end = r.action_id.len().min(ID_PREFIX);
        while !r.action_id.is_char_boundary(end) {
            end -= 1;
        }
        let key = Key {
            unknown: at_ms.is_none(),
            ms: at_ms.unwrap_or(0),
            id: r.action_id[..end].into(),
            seq,
        };
        (key, at_ms, known)
    }

    /// The record's file position: unique per record.
    pub(super) fn seq(&self) -> u64 {
        self.seq
    }

    /// Its time, when known.
    pub(super) fn ms(&self) -> Option<u64> {
        (!self.unknown).then_some(self.ms)
    }
}

/// The `head` smallest and the `tail` largest items offered, and how many were offered.
/// Together they are every item while at most `head + tail` were offered.
#[derive(Debug)]
pub(super) struct Edges<T: Ord> {
    head_cap: usize,
    tail_cap: usize,
    head: BinaryHeap<T>,
    tail: BinaryHeap<Reverse<T>>,
    pub(super) total: u64,
}

impl<T: Ord + Clone> Edges<T> {
    pub(super) fn new(head_cap: usize, tail_cap: usize) -> Edges<T> {
        Edges {
            head_cap,
            tail_cap,
            head: BinaryHeap::new(),
            tail: BinaryHeap::new(),
            total: 0,
        }
    }

    pub(super) fn offer(&mut self, item: T) {
        self.total += 1;
        if self.tail_cap > 0 {
            self.tail.push(Reverse(item.clone()));
            if self.tail.len() > self.tail_cap {
                self.tail.pop();
            }
        }
        if self.head_cap > 0 {
            self.head.push(item);
            if self.head.len() > self.head_cap {
                self.head.pop();
            }
        }
    }

    /// (the first items, the last items not among the first, how many lie between), each in
    /// order.
    pub(super) fn into_parts(self) -> (Vec<T>, Vec<T>, u64) {
        let head = self.head.into_sorted_vec();
        let mut tail: Vec<T> = self.tail.into_iter().map(|Reverse(t)| t).collect();
        tail.sort();
        // Overlapping when few were offered: the tail keeps only what the head does not have.
        let tail: Vec<T> = match head.last() {
            Some(last) => tail.into_iter().filter(|t| t > last).collect(),
            None => tail,
        };
        let between = self.total - head.len() as u64 - tail.len() as u64;
        (head, tail, between)
    }
}

/// The `n` smallest items offered, in order.
#[derive(Debug)]
pub(super) struct TopN<T: Ord> {
    cap: usize,
    heap: BinaryHeap<T>,
}

impl<T: Ord> TopN<T> {
    pub(super) fn new(cap: usize) -> TopN<T> {
        TopN {
            cap,
            heap: BinaryHeap::new(),
        }
    }

    /// Offers `item`; returns the item that no longer fits (this one, or the largest kept).
    pub(super) fn offer(&mut self, item: T) -> Option<T> {
        if self.cap == 0 {
            return Some(item);
        }
        self.heap.push(item);
        if self.heap.len() > self.cap {
            return self.heap.pop();
        }
        None
    }

    pub(super) fn into_sorted_vec(self) -> Vec<T> {
        self.heap.into_sorted_vec()
    }
}

/// A failure the tables or the jump list may show, with the tool call it names (it sits beside
/// that call when the journal has it).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct FailPick {
    pub(super) key: Key,
    pub(super) call: Option<Box<str>>,
}

/// A step the model may keep, with its target handle (for frames that go to "the last step on
/// the same tab").
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct StepPick {
    pub(super) key: Key,
    pub(super) handle: Option<Box<str>>,
}

/// Failures in all, by what they are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FailureTotals {
    /// Every failure entry (errors and warnings).
    pub all: usize,
    /// Errors (the jump list's entries).
    pub errors: usize,
    /// Failed requests that are errors.
    pub requests: usize,
    /// Console errors, exceptions and failed assertions.
    pub console: usize,
    /// Console warnings.
    pub warnings: usize,
    /// Request entries (the requests table's rows), and console entries (its rows).
    pub request_rows: usize,
    pub console_rows: usize,
    /// Occurrences folded into `repeat` counts (beyond the entries themselves): errors only.
    pub repeated: u64,
}

impl FailureTotals {
    /// Counts one failure: the only place failures are counted. Everything that shows a number
    /// of failures (the figures, the jump list, the tables, the summary) reads these totals.
    fn add(&mut self, kind: FailKind, is_error: bool, repeats: u64) {
        self.all += 1;
        match kind {
            FailKind::Request => self.request_rows += 1,
            FailKind::Console => self.console_rows += 1,
            FailKind::Other => {}
        }
        if is_error {
            self.errors += 1;
            match kind {
                FailKind::Request => self.requests += 1,
                FailKind::Console => self.console += 1,
                FailKind::Other => {}
            }
            self.repeated += repeats;
        } else if kind == FailKind::Console {
            self.warnings += 1;
        }
    }

    /// Errors that are neither failed requests nor console errors (a lost connection, an
    /// unreadable failure record).
    pub(crate) fn other_errors(&self) -> usize {
        self.errors.saturating_sub(self.requests + self.console)
    }

    /// Rows of the two tables in all, listed or not.
    pub(crate) fn table_rows(&self) -> usize {
        self.request_rows + self.console_rows
    }

    /// Errors the jump list (`listed` entries long) does not name.
    pub(crate) fn errors_not_listed(&self, listed: usize) -> usize {
        self.errors.saturating_sub(listed)
    }
}

/// The first pass: what the run holds in all, and which steps and failures the model keeps.
pub(super) struct Selection {
    pub(super) seq: u64,
    pub(super) tl: super::Timeline,
    pub(super) first_known: Option<u64>,
    pub(super) last_end: Option<u64>,
    pub(super) steps: Edges<StepPick>,
    pub(super) steps_head: usize,
    pub(super) steps_tail: usize,
    pub(super) requests: Edges<FailPick>,
    pub(super) console: Edges<FailPick>,
    pub(super) jump: Edges<FailPick>,
    /// Earliest key per target handle: tab numbers are by first appearance.
    pub(super) tabs: HashMap<Box<str>, Key>,
    pub(super) framed: HashSet<String>,
    /// Tool calls by action id: where each sorts.
    pub(super) calls: HashMap<Box<str>, Key>,
    /// Actions naming a call not seen yet, by that call: steps of their own if it never comes.
    pending: HashMap<Box<str>, Vec<StepPick>>,
    pending_len: usize,
}

impl Selection {
    pub(super) fn new(caps: &super::Caps) -> Selection {
        let half = |n: usize| (n - n / 2, n / 2);
        let (sh, st) = half(caps.steps);
        let (th, tt) = half(caps.table_rows);
        Selection {
            seq: 0,
            tl: super::Timeline::default(),
            first_known: None,
            last_end: None,
            // One more at the head: the first step left out, where the gap begins.
            steps: Edges::new(sh + 1, st),
            steps_head: sh,
            steps_tail: st,
            requests: Edges::new(th, tt),
            console: Edges::new(th, tt),
            jump: Edges::new(caps.jump, 0),
            tabs: HashMap::new(),
            framed: HashSet::new(),
            calls: HashMap::new(),
            pending: HashMap::new(),
            pending_len: 0,
        }
    }

    /// The steps of the run once every record was seen: actions naming a call the journal does
    /// not have are steps of their own (as if they named none).
    pub(super) fn take_steps(&mut self) -> Edges<StepPick> {
        for (_, orphans) in self.pending.drain() {
            for pick in orphans {
                self.steps.offer(pick);
            }
        }
        self.pending_len = 0;
        std::mem::replace(&mut self.steps, Edges::new(0, 0))
    }

    /// A step record: a tool call (its effects seen so far are its own), an effect of a call,
    /// or a step.
    fn step(&mut self, r: &StoredRecord, key: Key, call: bool) {
        let handle = super::handle_of(r.target.as_ref()).map(Box::from);
        let pick = StepPick { key, handle };
        if call {
            if let Some(held) = self.pending.remove(r.action_id.as_str()) {
                self.pending_len -= held.len();
            }
            if self.calls.len() < MAX_CALLS {
                self.calls
                    .insert(r.action_id.as_str().into(), pick.key.clone());
            }
        } else if let Some(id) = r.tool_call() {
            if self.calls.contains_key(id) {
                return;
            }
            if self.pending_len < MAX_PENDING {
                self.pending_len += 1;
                self.pending.entry(id.into()).or_default().push(pick);
                return;
            }
        }
        self.steps.offer(pick);
    }

    pub(super) fn record(&mut self, r: &StoredRecord) {
        let seq = self.seq;
        self.seq += 1;
        let (key, at_ms, known) = Key::of(r, seq);
        let tl = &mut self.tl;
        tl.records += 1;
        *tl.kinds
            .entry(super::line(&r.kind, super::MAX_WORD))
            .or_insert(0) += 1;
        let status = super::Outcome::of(r.status_word());
        *tl.statuses.entry(status.word().to_owned()).or_insert(0) += 1;
        if !known {
            tl.bad_times += 1;
        } else if let Some(t) = at_ms {
            self.first_known = Some(self.first_known.map_or(t, |f| f.min(t)));
            let end = t.saturating_add(r.duration_ms.unwrap_or(0));
            self.last_end = Some(self.last_end.map_or(end, |e| e.max(end)));
        }
        if let Some(h) = super::handle_of(r.target.as_ref()) {
            if let Some(k) = self.tabs.get_mut(h) {
                if key < *k {
                    *k = key.clone();
                }
            } else if self.tabs.len() < MAX_TABS {
                self.tabs.insert(h.into(), key.clone());
            }
        }
        let typed = r.typed_payload();
        let (role, generic) = role(r, typed.clone());
        if generic {
            tl.generic += 1;
        }
        match role {
            Role::Marker => super::marker(&mut tl.markers, r, &typed),
            Role::Step(what) => {
                let call = matches!(what, super::What::ToolCall(_));
                self.step(r, key, call);
            }
            Role::Plumb(super::Category::Frame, _) => {
                for a in r.artifacts.iter().take(super::MAX_RECORD_ARTIFACTS) {
                    if self.framed.len() < MAX_FRAMED {
                        self.framed.insert(a.clone());
                    }
                }
            }
            Role::Plumb(..) => {}
            Role::Fail(what, is_error) => {
                let kind = FailKind::of(&what);
                let repeats = r.repeat.as_ref().map_or(0, |rep| rep.count);
                tl.totals.add(kind, is_error, repeats);
                let pick = || FailPick {
                    key: key.clone(),
                    call: r.tool_call().map(Box::from),
                };
                if is_error {
                    self.jump.offer(pick());
                }
                match kind {
                    FailKind::Request => self.requests.offer(pick()),
                    FailKind::Console => self.console.offer(pick()),
                    FailKind::Other => {}
                }
            }
        }
    }

    /// Tab numbers by first appearance, in a deterministic order.
    pub(super) fn tab_numbers(&self) -> BTreeMap<Box<str>, usize> {
        let mut order: Vec<(&Key, &Box<str>)> = self.tabs.iter().map(|(h, k)| (k, h)).collect();
        order.sort();
        order
            .into_iter()
            .enumerate()
            .map(|(i, (_, h))| (h.clone(), i + 1))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_by_kind_and_errors_apart_from_warnings() {
        let mut t = FailureTotals::default();
        t.add(FailKind::Request, true, 4);
        t.add(FailKind::Request, true, 0);
        t.add(FailKind::Console, true, 0);
        t.add(FailKind::Console, false, 7);
        t.add(FailKind::Other, true, 0);
        assert_eq!(
            t,
            FailureTotals {
                all: 5,
                errors: 4,
                requests: 2,
                console: 1,
                warnings: 1,
                request_rows: 2,
                console_rows: 2,
                // A warning's repeats are not errors.
                repeated: 4,
            }
        );
        assert_eq!(t.other_errors(), 1);
        assert_eq!(t.table_rows(), 4);
        assert_eq!(t.errors_not_listed(3), 1);
        assert_eq!(t.errors_not_listed(10), 0);
    }

    #[test]
    fn edges_keep_the_first_and_last_and_count_the_rest() {
        let mut e = Edges::new(3, 2);
        for i in [9, 1, 7, 3, 5, 2, 8, 4, 6, 0] {
            e.offer(i);
        }
        assert_eq!(e.into_parts(), (vec![0, 1, 2], vec![8, 9], 5));
        let mut few = Edges::new(3, 2);
        for i in [4, 1, 3] {
            few.offer(i);
        }
        assert_eq!(few.into_parts(), (vec![1, 3, 4], vec![], 0));
        let mut some = Edges::new(3, 2);
        for i in [4, 1, 3, 2] {
            some.offer(i);
        }
        assert_eq!(some.into_parts(), (vec![1, 2, 3], vec![4], 0));
    }

    #[test]
    fn top_n_keeps_the_smallest_and_gives_back_the_rest() {
        let mut t = TopN::new(2);
        assert_eq!(t.offer(5), None);
        assert_eq!(t.offer(3), None);
        assert_eq!(t.offer(9), Some(9));
        assert_eq!(t.offer(1), Some(5));
        assert_eq!(t.into_sorted_vec(), vec![1, 3]);
    }
}
