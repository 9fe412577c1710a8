//! Building the model from what the second pass kept: the steps in time order with the gap,
//! their pages, each slot's plumbing, failures and artifacts, failure numbers, repeats merged.

use super::*;

impl Assembly {
    /// The model: the kept steps with their slots, the gap, numbers, pages, frames, failures.
    pub(in crate::timeline) fn finish(mut self, mut tl: Timeline) -> Timeline {
        let (mut steps, slot_step) = self.place_steps();
        let listed = self.fill_from_slots(&mut steps, &slot_step);
        self.number_failures(&mut tl, &mut steps, &slot_step, listed);
        self.attach_all_artifacts(&mut steps, &slot_step);
        cap_frames(&mut steps, self.caps.frames_per_step.max(1));
        tl.steps = merge_repeats(steps, &mut tl.failures);
        mcp::finish(&mut tl);
        number_steps(&mut tl.steps);
        tl.tabs = self.tabs.len();
        tl
    }

    /// The timeline's steps in time order (setup, head, gap, tail), and which step each slot's
    /// content goes to: a slot whose step is missing gives it to the step before.
    fn place_steps(&mut self) -> (Vec<Step>, Vec<Option<usize>>) {
        let n_slots = self.slots.len();
        let pages = self.resolve_pages();
        let mut steps: Vec<Step> = Vec::new();
        let mut slot_step: Vec<Option<usize>> = vec![None; n_slots];
        if let Some(setup) = self.setup_step() {
            steps.push(setup);
            slot_step[0] = Some(0);
        }
        let cores = std::mem::take(&mut self.cores);
        let effects = std::mem::take(&mut self.effects);
        let parts = cores.into_iter().zip(pages).zip(effects).enumerate();
        for (j, ((core, page), effects)) in parts {
            if self.gap.is_some() && j == self.head {
                slot_step[self.head + 1] = Some(steps.len());
                steps.push(self.gap_step());
            }
            // A kept step whose record was not read again (the journal changed): left out.
            let Some(core) = core else { continue };
            slot_step[self.step_slot(j)] = Some(steps.len());
            steps.push(kept_step(core, page, effects));
        }
        if self.gap.is_some() && slot_step[self.head + 1].is_none() {
            slot_step[self.head + 1] = Some(steps.len());
            steps.push(self.gap_step());
        }
        for i in 0..n_slots {
            if slot_step[i].is_none() {
                slot_step[i] = slot_step[..i].iter().rev().find_map(|s| *s);
            }
        }
        (steps, slot_step)
    }

    /// The step for what came before the first kept one, when anything did.
    fn setup_step(&self) -> Option<Step> {
        let setup = &self.slots[0];
        let used = setup.fail_count > 0
            || !setup.plumb_counts.is_empty()
            || self.arts.values().any(|a| a.slot == 0);
        if !used {
            return None;
        }
        let (at_ms, known) = setup
            .first
            .as_ref()
            .map_or((None, true), |(_, a, k)| (*a, *k));
        let page = setup
            .first_plumb_page
            .as_ref()
            .map(|(_, p, _)| p.clone())
            .or_else(|| setup.last_page.as_ref().map(|(_, p)| p.clone()));
        Some(setup_step(at_ms, known, page))
    }

    /// Each slot's plumbing, failure count, page and withheld frame into its step; the keys of
    /// the failures each slot lists.
    fn fill_from_slots(
        &mut self,
        steps: &mut [Step],
        slot_step: &[Option<usize>],
    ) -> Vec<(usize, Vec<Key>)> {
        let mut listed: Vec<(usize, Vec<Key>)> = Vec::new();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let Some(si) = slot_step[i] else { continue };
            let step = &mut steps[si];
            for (c, (n, f)) in &slot.plumb_counts {
                let e = step.plumb_counts.entry(*c).or_insert((0, 0));
                e.0 += n;
                e.1 += f;
            }
            if let Some(p) = slot.plumbs.take() {
                step.plumbing
                    .extend(p.into_sorted_vec().into_iter().map(|(_, ByKey(p))| p));
            }
            step.failure_count += slot.fail_count;
            if step.page.is_none() {
                if let Some((_, p, inferred)) = &slot.first_plumb_page {
                    step.page = Some(p.clone());
                    step.page_inferred = *inferred;
                }
            }
            if let Some((_, w)) = &slot.withheld {
                if step.withheld.is_none() {
                    step.withheld = Some(w.clone());
                }
            }
            let keys = slot
                .fails
                .take()
                .map(TopN::into_sorted_vec)
                .unwrap_or_default();
            listed.push((i, keys));
        }
        listed
    }

    /// Every listed or ranked failure's number: its rank in time over the whole run.
    fn failure_numbers(&self, listed: &[(usize, Vec<Key>)]) -> HashMap<u64, usize> {
        let n_slots = self.slots.len();
        let mut base = vec![0usize; n_slots + 1];
        for i in 0..n_slots {
            base[i + 1] = base[i] + self.slots[i].fail_count;
        }
        let mut ids: HashMap<u64, usize> = HashMap::new();
        for (i, keys) in listed {
            for (pos, k) in keys.iter().enumerate() {
                ids.insert(k.seq(), base[*i] + pos + 1);
            }
        }
        for (i, slot) in self.slots.iter().enumerate() {
            let mut before = 0;
            for (pos, k) in slot.ranked.iter().enumerate() {
                before += slot.before[pos];
                ids.insert(k.seq(), base[i] + before as usize + 1);
            }
        }
        ids
    }

    /// The kept failures, numbered, into the timeline and their steps; the tables' rows and the
    /// jump list.
    fn number_failures(
        &mut self,
        tl: &mut Timeline,
        steps: &mut [Step],
        slot_step: &[Option<usize>],
        listed: Vec<(usize, Vec<Key>)>,
    ) {
        let ids = self.failure_numbers(&listed);
        let mut kept: Vec<(usize, u64, FailItem)> = self
            .fails
            .drain()
            .filter_map(|(seq, f)| ids.get(&seq).map(|&id| (id, seq, f)))
            .collect();
        kept.sort_by_key(|(id, seq, _)| (*id, *seq));
        let mut index: HashMap<u64, usize> = HashMap::new();
        let mut seqs: Vec<u64> = Vec::new();
        for (id, seq, f) in kept {
            let Some(step) = slot_step[f.slot] else {
                continue;
            };
            index.insert(seq, tl.failures.len());
            seqs.push(seq);
            tl.failures.push(Failure {
                id,
                step,
                at_ms: f.at_ms,
                time_known: f.time_known,
                what: f.what,
                is_error: f.is_error,
                source: f.source,
                frame_after: None,
                repeat: f.repeat,
            });
        }
        for (i, keys) in listed {
            let Some(si) = slot_step[i] else { continue };
            let idx = keys.iter().filter_map(|k| index.get(&k.seq()).copied());
            steps[si].failures.extend(idx);
        }
        for s in steps.iter_mut() {
            s.failures.sort_unstable();
            s.more_failures = s.failure_count.saturating_sub(s.failures.len());
            let total: usize = s.plumb_counts.values().map(|(n, _)| n).sum();
            s.more_plumbing = total.saturating_sub(s.plumbing.len());
        }
        let wanted = |i: usize| self.wanted.contains(&seqs[i]);
        let kind = |i: usize| FailKind::of(&tl.failures[i].what);
        tl.request_rows = (0..seqs.len())
            .filter(|&i| wanted(i) && kind(i) == FailKind::Request)
            .collect();
        tl.console_rows = (0..seqs.len())
            .filter(|&i| wanted(i) && kind(i) == FailKind::Console)
            .collect();
        tl.jump = (0..seqs.len())
            .filter(|&i| wanted(i) && tl.failures[i].is_error)
            .take(self.caps.jump)
            .collect();
    }

    /// Artifacts, each where it first appeared, in time order per step.
    fn attach_all_artifacts(&mut self, steps: &mut [Step], slot_step: &[Option<usize>]) {
        let mut arts: Vec<(String, ArtCand)> = self.arts.drain().collect();
        arts.sort_by(|a, b| a.1.key.cmp(&b.1.key));
        let mut attached = HashSet::new();
        for (path, a) in arts {
            let Some(si) = slot_step[a.slot] else {
                continue;
            };
            attach_artifacts(
                &mut steps[si],
                [&path],
                a.at_ms,
                a.screencast,
                &mut attached,
            );
        }
    }

    /// The placeholder for the steps left out between the first and the last ones kept.
    fn gap_step(&self) -> Step {
        let after = self.gap_from.as_ref().and_then(Key::ms).or_else(|| {
            self.head
                .checked_sub(1)
                .and_then(|j| self.steps[j].key.ms())
        });
        let before = self.steps.get(self.head).and_then(|s| s.key.ms());
        let mut s = setup_step(after, true, None);
        s.what = What::Gap {
            steps: self.gap.unwrap_or(0),
            until_ms: before,
            effects: self.gap_effects,
        };
        s
    }

    /// Every kept step's page: its own, else (a tool call) the page its first effect acted on,
    /// else the last one known before it for its target, else the last one known at all. One
    /// pass over the slots in time order.
    fn resolve_pages(&self) -> Vec<(Option<Page>, bool)> {
        let mut last: Option<Page> = None;
        let mut by_handle: BTreeMap<&str, Page> = BTreeMap::new();
        let mut owner = vec![None; self.slots.len()];
        for j in 0..self.steps.len() {
            owner[self.step_slot(j)] = Some(j);
        }
        let mut out: Vec<(Option<Page>, bool)> = vec![(None, false); self.steps.len()];
        for (k, slot) in self.slots.iter().enumerate() {
            if let Some(j) = owner[k] {
                if let Some(core) = &self.cores[j] {
                    let own = core
                        .page
                        .as_ref()
                        .filter(|p| p.title.is_some() || p.url.is_some());
                    let acted_on = self.effects[j].page.as_ref().map(|(_, p)| p);
                    out[j] = match own.or(acted_on) {
                        Some(p) => (Some(p.clone()), false),
                        None => {
                            let known = core
                                .handle
                                .as_deref()
                                .and_then(|h| by_handle.get(h))
                                .or(last.as_ref());
                            match known {
                                Some(p) => (Some(p.clone()), true),
                                // Nothing known before: only its tab, if it has one.
                                None => (core.page.clone(), false),
                            }
                        }
                    };
                    if let Some(p) = own {
                        if let Some(h) = core.handle.as_deref() {
                            if by_handle.len() < select::MAX_TABS || by_handle.contains_key(h) {
                                by_handle.insert(h, p.clone());
                            }
                        }
                        last = Some(p.clone());
                    }
                }
            }
            for (h, _, p) in &slot.by_handle {
                if by_handle.len() < select::MAX_TABS || by_handle.contains_key(&**h) {
                    by_handle.insert(h, p.clone());
                }
            }
            if let Some((_, p)) = &slot.last_page {
                last = Some(p.clone());
            }
        }
        out
    }
}

/// A kept step as the timeline shows it: its core, its page (and whether that was inferred),
/// and, for a tool call, the effects kept.
fn kept_step(
    mut core: StepCore,
    (page, inferred): (Option<Page>, bool),
    effects: CallEffects,
) -> Step {
    if let What::ToolCall(call) = &mut core.what {
        let kept = effects.kept.map(TopN::into_sorted_vec).unwrap_or_default();
        call.more_effects = effects.count - kept.len();
        call.effects = kept.into_iter().map(|(_, ByKey(e))| e).collect();
    }
    Step {
        number: Some(0),
        what: core.what,
        repeat: 1,
        at_ms: core.at_ms,
        time_known: core.time_known,
        duration_ms: core.duration_ms,
        outcome: core.outcome,
        error: core.error,
        source: core.source,
        tool: core.tool,
        page,
        page_inferred: inferred,
        frames: Vec::new(),
        files: Vec::new(),
        plumbing: Vec::new(),
        failures: Vec::new(),
        fields: core.fields,
        withheld: core.withheld,
        plumb_counts: BTreeMap::new(),
        failure_count: 0,
        more_failures: 0,
        more_plumbing: 0,
        more_frames: 0,
    }
}

/// At most `cap` frames and files per step: the first ones, and the last screencast frame (the
/// state the step left).
fn cap_frames(steps: &mut [Step], cap: usize) {
    for s in steps {
        if s.frames.len() > cap {
            let last_cast = s
                .frames
                .iter()
                .rposition(|f| f.screencast && f.state == FrameState::Pending);
            let total = s.frames.len();
            let mut keep: Vec<Frame> = Vec::with_capacity(cap);
            for (i, f) in std::mem::take(&mut s.frames).into_iter().enumerate() {
                let room = keep.len() + usize::from(last_cast.is_some_and(|l| l > i)) < cap;
                if room || Some(i) == last_cast {
                    keep.push(f);
                }
            }
            s.more_frames = total - keep.len();
            s.frames = keep;
        }
        if s.files.len() > cap {
            s.more_frames += s.files.len() - cap;
            s.files.truncate(cap);
        }
    }
}

/// Step numbers: each step left out in the gap counts as one.
fn number_steps(steps: &mut [Step]) {
    let mut n = 0usize;
    for s in steps {
        match (&s.what, s.number) {
            (What::Gap { steps, .. }, _) => n += *steps as usize,
            (_, Some(_)) => {
                n += 1;
                s.number = Some(n);
            }
            _ => {}
        }
    }
}

/// Consecutive scrolls, and consecutive presses of the same key, on the same page and from the
/// same producer, become one step with a count.
fn merge_repeats(steps: Vec<Step>, failures: &mut [Failure]) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::with_capacity(steps.len());
    let mut moved: Vec<usize> = Vec::with_capacity(steps.len());
    for s in steps {
        if let Some(prev) = out.last_mut() {
            if prev.number.is_some()
                && s.number.is_some()
                && is_repeatable(&prev.what, &s.what)
                && prev.source == s.source
                && prev.page == s.page
            {
                prev.repeat += 1;
                prev.outcome = prev.outcome.clone().max(s.outcome);
                if prev.error.is_none() {
                    prev.error = s.error;
                }
                if let (Some(d), Some(more)) = (prev.duration_ms, s.duration_ms) {
                    prev.duration_ms = Some(d.saturating_add(more));
                }
                prev.frames.extend(s.frames);
                prev.files.extend(s.files);
                prev.plumbing.extend(s.plumbing);
                for (c, (n, f)) in s.plumb_counts {
                    let e = prev.plumb_counts.entry(c).or_insert((0, 0));
                    e.0 += n;
                    e.1 += f;
                }
                prev.failures.extend(s.failures);
                prev.failure_count += s.failure_count;
                prev.more_failures += s.more_failures;
                prev.more_plumbing += s.more_plumbing;
                prev.more_frames += s.more_frames;
                moved.push(out.len() - 1);
                continue;
            }
        }
        moved.push(out.len());
        out.push(s);
    }
    for f in failures.iter_mut() {
        f.step = moved[f.step];
    }
    out
}
