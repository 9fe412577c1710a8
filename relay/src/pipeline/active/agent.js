// The relay's page agent. Runs in an isolated world of every page the active observer attaches
// to (never in the page's own world: page scripts cannot see or call it). It
//
//  - reports which kind of field has focus (a word, never a value) through a binding that
//    exists only in this world;
//  - keeps, per run of trusted insertions into one element, the element, its value before the
//    first insertion, the selection then, and the inserted data — in this page's memory only;
//  - answers verify(literal): did the typed literal land in the field the burst started in?
//    The literal arrives as a call argument from the relay; the answer is a reason word and
//    counts, never characters.
//
// It never changes the page, never cancels or dispatches an event, and never sends anything but
// field-kind words over its binding.
(() => {
  'use strict';
  const BINDING = '__cdpRelayObserve';
  if (globalThis.__cdpRelayAgent) return;
  const binding = globalThis[BINDING];
  const send = (o) => {
    try {
      if (typeof binding === 'function') binding(JSON.stringify(o));
    } catch (_) {
      // The relay went away: nothing to report to.
    }
  };
  const installedAt = performance.now();
  const MAX_SESSIONS = 64;
  const MAX_DATA = 8192;

  const deepActive = (doc) => {
    let el = doc.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    return el;
  };

  const attr = (el, name) => String((el.getAttribute && el.getAttribute(name)) || '').toLowerCase();
  const OTP_NAME = /(^|[^a-z])(otp|totp|mfa|2fa|one[-_ ]?time|passcode|verification[-_ ]?code|auth[-_ ]?code)([^a-z]|$)/i;
  const PAY_NAME = /(card[-_ ]?num|cc[-_ ]?(num|number|csc|cvc|cvv|exp)|cvc|cvv|csc|security[-_ ]?code|card[-_ ]?exp|card[-_ ]?code)/i;
  const MARKED =
    '[data-sensitive]:not([data-sensitive="false"]),[data-private]:not([data-private="false"]),[data-cdp-relay-sensitive]';
  const TEXTUAL = new Set(['text', 'email', 'tel', 'number', 'search', 'url']);
  const NOT_TYPED = new Set(['checkbox', 'radio', 'button', 'submit', 'reset', 'image', 'file', 'range', 'color', 'hidden']);

  // A word for the kind of an element: what typing steps record and what the capture veto reads.
  const kindOf = (el) => {
    if (!el || el === document.body || el === document.documentElement) return 'none';
    const tag = el.tagName;
    if (tag === 'IFRAME' || tag === 'FRAME') {
      try {
        const d = el.contentDocument;
        return d ? kindOf(deepActive(d)) : 'frame';
      } catch (_) {
        return 'frame';
      }
    }
    const editable = tag === 'INPUT' || tag === 'TEXTAREA' || el.isContentEditable;
    if (!editable) return 'none';
    try {
      if (el.closest && el.closest(MARKED)) return 'marked';
    } catch (_) {
      // closest() on an exotic node: fall through.
    }
    const type = tag === 'INPUT' ? String(el.type || 'text').toLowerCase() : '';
    if (tag === 'INPUT' && NOT_TYPED.has(type)) return 'none';
    const ac = attr(el, 'autocomplete');
    const names = `${attr(el, 'name')} ${attr(el, 'id')} ${attr(el, 'aria-label')}`;
    if (type === 'password' || /(^|\s)(current|new)-password(\s|$)/.test(ac)) return 'password';
    if (/(^|\s)one-time-code(\s|$)/.test(ac) || OTP_NAME.test(names)) return 'one-time-code';
    if (/(^|\s)cc-/.test(ac) || PAY_NAME.test(names)) return 'payment';
    if (tag === 'TEXTAREA') return 'textarea';
    if (tag !== 'INPUT') return 'text';
    return TEXTUAL.has(type) ? type : 'text';
  };
  const SENSITIVE = new Set(['password', 'one-time-code', 'payment', 'marked', 'frame']);

  let lastFocus = null;
  const reportFocus = () => {
    let kind;
    try {
      kind = kindOf(deepActive(document));
    } catch (_) {
      kind = 'unknown';
    }
    if (kind !== lastFocus) {
      lastFocus = kind;
      send({ t: 'focus', kind });
    }
  };
  addEventListener('focusin', reportFocus, true);
  addEventListener('focusout', () => setTimeout(reportFocus, 0), true);

  const valueOf = (el) => {
    if (el.isContentEditable) return String(el.textContent || '');
    if ('value' in el) return String(el.value);
    return null;
  };
  const selection = (el) => {
    try {
      const s = el.selectionStart;
      const e = el.selectionEnd;
      return typeof s === 'number' && typeof e === 'number' ? [s, e] : null;
    } catch (_) {
      return null;
    }
  };

  // Runs of trusted insertions, oldest first; `open` is the run still being typed into.
  const log = [];
  let open = null;
  addEventListener(
    'beforeinput',
    (e) => {
      if (!e.isTrusted) return;
      const type = String(e.inputType || '');
      const el = (e.composedPath && e.composedPath()[0]) || e.target;
      if (!type.startsWith('insert') || type === 'insertLineBreak' || type === 'insertParagraph') {
        open = null;
        return;
      }
      let data = e.data;
      if (data == null && e.dataTransfer) data = e.dataTransfer.getData('text/plain');
      if (!data) return;
      if (!open || open.done || open.el !== el) {
        const kind = kindOf(el);
        // Programmatic focus in a page without window focus fires no focusin: say it now.
        if (kind !== lastFocus) {
          lastFocus = kind;
          send({ t: 'focus', kind });
        }
        // Nothing of a sensitive field is kept: not its value, not what is typed, only a count.
        const secret = SENSITIVE.has(kind);
        const before = secret ? null : valueOf(el);
        const sel = secret || el.isContentEditable ? null : selection(el);
        open = { el, kind, before, sel, data: '', count: 0, done: false };
        log.push(open);
        if (log.length > MAX_SESSIONS) log.shift().done = true;
      }
      open.count += chars(data);
      if (!SENSITIVE.has(open.kind) && open.data.length + data.length <= MAX_DATA) open.data += data;
    },
    true,
  );

  const chars = (s) => Array.from(s).length;
  const count = (hay, needle) => {
    if (!needle) return 0;
    let n = 0;
    let i = hay.indexOf(needle);
    while (i !== -1) {
      n += 1;
      i = hay.indexOf(needle, i + needle.length);
    }
    return n;
  };
  const isSubsequence = (small, big) => {
    let i = 0;
    for (const c of big) if (i < small.length && small[i] === c) i += 1;
    return i === small.length;
  };
  // The middle of `after` that replaced the middle of `before`.
  const diff = (before, after) => {
    let p = 0;
    while (p < before.length && p < after.length && before[p] === after[p]) p += 1;
    let s = 0;
    while (s < before.length - p && s < after.length - p && before[before.length - 1 - s] === after[after.length - 1 - s]) s += 1;
    return { removed: before.slice(p, before.length - s), inserted: after.slice(p, after.length - s) };
  };

  // The verdict for one element that received all of `literal`.
  const judge = (run, literal) => {
    const n = chars(literal);
    const el = run.el;
    const kind = run.kind;
    if (SENSITIVE.has(kind)) return { reason: 'sensitive-field', kind, expected: n };
    if (!el.isConnected) return { reason: 'detached', kind, expected: n };
    const before = run.before;
    const after = valueOf(el);
    if (before == null || after == null) return { reason: 'rich-text', kind, expected: n };
    const grew = chars(after) - chars(before);
    const out = (reason) => ({ reason, kind, expected: n, grew });
    if (el.isContentEditable) {
      if (after === before) return out(before.includes(literal) ? 'already-held' : 'dropped-characters');
      if (grew === n && count(after, literal) > count(before, literal)) return out('landed');
      const d = diff(before, after);
      if (d.removed === '' && chars(d.inserted) < n && isSubsequence(d.inserted, literal)) return out('dropped-characters');
      return out('rich-text');
    }
    const sel = run.sel;
    const expected = sel
      ? [before.slice(0, sel[0]) + literal + before.slice(sel[1])]
      : [before + literal, literal, literal + before];
    if (expected.includes(after)) return out(after === before ? 'same-text' : 'landed');
    if (after === before) return out(before.includes(literal) ? 'already-held' : 'dropped-characters');
    const d = diff(before, after);
    const selected = sel ? before.slice(sel[0], sel[1]) : null;
    const replacedWhatWasSelected = d.removed === '' || d.removed === selected || selected === null;
    if (replacedWhatWasSelected && chars(d.inserted) < n && isSubsequence(d.inserted, literal)) {
      return out('dropped-characters');
    }
    return out('rewritten');
  };

  // Runs that got their reading leave the log.
  const settle = (runs) => {
    for (const r of runs) {
      r.done = true;
      const i = log.indexOf(r);
      if (i !== -1) log.splice(i, 1);
      if (open === r) open = null;
    }
  };

  const agent = {
    // The kind of field that has focus now (the capture veto's live check).
    focusKind() {
      try {
        return kindOf(deepActive(document));
      } catch (_) {
        return 'unknown';
      }
    },

    // Which run a burst of `n` characters typed into a field taken for a sensitive one went to:
    // matched by count, never by content (the relay does not send a credential back).
    uncompared(n) {
      const i = log.findIndex((r) => !r.done && r.count === n);
      if (i === -1) return { reason: 'sensitive-field', kind: agent.focusKind(), expected: n };
      const run = log[i];
      if (!SENSITIVE.has(run.kind)) {
        // Not a sensitive field after all: left in place for a reading with the text.
        return { reason: 'not-compared', kind: run.kind, expected: n };
      }
      settle([run]);
      return { reason: 'sensitive-field', kind: run.kind, expected: n };
    },

    // Did `literal` land? `sinceStartMs`: how long ago the burst started (relay's clock).
    async verify(literal, sinceStartMs) {
      // Let the page's own input handlers and re-renders run first.
      await new Promise((r) => setTimeout(r, 30));
      // A frame for re-renders, but a hidden page's throttled frames do not hold the reading up.
      await Promise.race([
        new Promise((r) => requestAnimationFrame(() => r())),
        new Promise((r) => setTimeout(r, 200)),
      ]);
      const n = chars(literal);
      // The runs that carry the literal: the oldest run whose data starts it, and the runs
      // right after it while their data continues it.
      const start = log.findIndex((r) => !r.done && r.data && literal.startsWith(r.data));
      const longer = log.findIndex((r) => !r.done && r.data.length > literal.length && r.data.startsWith(literal));
      if (start === -1 && longer !== -1) {
        // Typing went on into the same field before this reading: it cannot be split honestly.
        const run = log[longer];
        settle([run]);
        return { reason: SENSITIVE.has(run.kind) ? 'sensitive-field' : 'rewritten', kind: run.kind, expected: n };
      }
      if (start === -1) {
        // A sensitive field keeps no text to match: a run of the same length stands for it.
        const secret = log.findIndex((r) => !r.done && SENSITIVE.has(r.kind) && r.count === n);
        if (secret !== -1) {
          const run = log[secret];
          settle([run]);
          return { reason: 'sensitive-field', kind: run.kind, expected: n };
        }
        const kind = agent.focusKind();
        if (kind === 'frame') return { reason: 'frame', kind, expected: n };
        if (performance.now() - installedAt < Number(sinceStartMs) + 50) {
          return { reason: 'not-installed', kind, expected: n };
        }
        return { reason: 'no-input', kind, expected: n, received: 0 };
      }
      let acc = '';
      const used = [];
      for (let i = start; i < log.length; i += 1) {
        const r = log[i];
        if (r.done || !r.data || !literal.startsWith(acc + r.data)) break;
        acc += r.data;
        used.push(r);
        if (acc === literal) break;
      }
      // Only the runs used are settled: an older run may still wait for its own reading.
      settle(used);
      const first = used[0];
      if (SENSITIVE.has(first.kind)) return { reason: 'sensitive-field', kind: first.kind, expected: n };
      const fields = new Set(used.map((r) => r.el)).size;
      if (fields > 1) return { reason: 'focus-moved', kind: first.kind, expected: n, fields };
      if (acc !== literal) {
        return { reason: 'no-input', kind: first.kind, expected: n, received: chars(acc) };
      }
      if (used.length > 1) {
        // Focus left the field and came back: judge from the first run's starting point.
        used[0].data = acc;
      }
      return judge(first, literal);
    },
  };
  Object.defineProperty(globalThis, '__cdpRelayAgent', { value: agent });
  reportFocus();
})();
