// @ts-check
// The relay's page agent. Runs in an isolated world of every frame the active observer attaches
// to (never in the page's own world: page scripts cannot see or call it). It
//
//  - classifies fields (the one place the relay does: docs/security.md, "How fields are
//    classified") and reports which kind of field has focus (a word, never a value) through a
//    binding that exists only in this world. A field once seen sensitive stays so for the life
//    of the document;
//  - keeps, per segment of trusted insertions into one element, the element, when, its value
//    before the first insertion, the selection then, and the inserted data — in this page's
//    memory only, and for a sensitive field nothing but a count;
//  - answers verify(literal, window): did the text typed in that time window land in the field
//    it was meant for? The literal arrives as a call argument from the relay; the answer is a
//    reason word and counts, never characters;
//  - answers readFields(texts, window): for text a tool call meant to type but no key carried
//    (a server that sets `.value` by script: a long text, a date, a select), which fields were
//    set by script in that window and whether each now holds one of the texts, or whether any
//    field holds it already: kind words, lengths and indices, never characters; a sensitive
//    field is compared by length only;
//  - reports, for each trusted pointerdown and each element typing starts in, a locator of the
//    element as Playwright's code generator would pick it (test id, role and name, label,
//    placeholder, short CSS), taken at that moment: page text the relay sanitizes, never a
//    field's value.
//
// It never changes the page, never cancels or dispatches an event, and never sends anything but
// field-kind words and locators over its binding. Agents of same-origin child frames report
// through the top frame's agent, which reads their segments too.
// ---- Types: for the type check only (tsconfig.json beside this file; scripts/test.sh) --------
/**
 * A locator in the evidence format's shape (locate.rs): one way to find the element, or `why`
 * there is none; `frames`: the selectors of the <iframe>s from the top frame down to it.
 * @typedef {object} Locator
 * @property {string} [testId]
 * @property {string} [role]
 * @property {string} [name]
 * @property {string} [label]
 * @property {string} [placeholder]
 * @property {string} [text]
 * @property {string} [css]
 * @property {boolean} [exact]
 * @property {string} [why]
 * @property {string[]} [frames]
 */
/**
 * What the agent sends over its binding, by the tag `t` (sessions.rs, `AgentMessage`).
 * @typedef {{t: 'focus', kind: string, field: number, group: number, from: number}} FocusReport
 * @typedef {{t: 'hit', at: number, target: Locator, hover?: Locator, blocked?: boolean}} HitReport
 * @typedef {{t: 'typed', at: number, target: Locator, continued?: boolean}} TypedReport
 * @typedef {{t: 'chose', at: number, target: Locator, options: string[] | null}} ChoseReport
 * @typedef {{t: 'files', at: number, target: Locator, count: number}} FilesReport
 * @typedef {{t: 'sealed'} & Sealed} SealedReport
 * @typedef {FocusReport | HitReport | TypedReport | ChoseReport | FilesReport | SealedReport} Message
 */
/**
 * A burst's time window as the relay sends it (wall-clock ms: `now` when the call left).
 * @typedef {{start: number, end: number, now: number}} BurstWindow
 * The same on this agent's clock, with the slack before and after (`lo`, `hi`).
 * @typedef {{start: number, end: number, lo: number, hi: number}} ReadWindow
 */
/**
 * A field as typing into it is read: a live element, or the stand-in `unseal` makes of one of
 * a document left before (which answers as the field did then).
 * @typedef {{sealed: true, isConnected: boolean, isContentEditable: boolean, value: string | null}} SealedField
 * @typedef {Control | SealedField} Field
 */
/**
 * An element as the agent reads it: any element, with the properties of a form control, a
 * <label>, an <iframe> or a <slot> where it has them (read where the tag says it has them, or
 * where one missing does no harm), and the mark a field once seen sensitive keeps (`STICKY`).
 * A live element is never `sealed`.
 * @typedef {Element & Partial<HTMLElement> & Partial<HTMLInputElement>
 *   & Partial<Pick<HTMLSelectElement, 'multiple' | 'selectedOptions' | 'options'>>
 *   & Partial<Pick<HTMLLabelElement, 'control'>> & Partial<Pick<HTMLIFrameElement, 'contentDocument'>>
 *   & {__cdpRelaySensitive?: string, sealed?: undefined}} Control
 */
/**
 * A segment: trusted insertions into one element at a stretch (`data`: their text, `count` their
 * characters; a sensitive field's keeps the count only).
 * @typedef {object} Segment
 * @property {string} id
 * @property {Field} el
 * @property {string} kind
 * @property {number} t0
 * @property {number} t1
 * @property {string | null} before
 * @property {[number, number] | null} sel
 * @property {string} data
 * @property {Array<[number, number]> | null} marks
 * @property {number} taken
 * @property {number} count
 * @property {boolean} cut
 * @property {boolean} done
 * @property {State | null} owner
 * @property {Element | true | null} via
 * @property {number | null} [bouncedAt]
 */
/**
 * A part of a segment a reading sees (`viewOf`).
 * @typedef {Segment & {seg: Segment, whole: boolean, end: number}} View
 */
/**
 * A `landed` reading's field, to read again (`toReadAgain`): its value before and after the
 * typing, and the time of the last insertion.
 * @typedef {{el: Field, before: string, after: string | null, t: number}} Recheck
 */
/**
 * One frame's typing: its segments, its focus changes, when its agent started.
 * @typedef {{log: Segment[], focusLog: Array<{el: Element, t: number, via: Element | null}>, installedAt: number}} State
 */
/**
 * What the agent hands the relay when its document is left (`sealed`), and the relay passes
 * back with the next readings (`left`).
 * @typedef {object} Sealed
 * @property {number} installedAt
 * @property {string} origin
 * @property {Array<{connected: boolean, rich: boolean, value: string | null}>} fields
 * @property {Array<SealedSegment>} segs
 * @typedef {{id: string, field: number, kind: string, t0: number, t1: number, count: number,
 *   cut: boolean, data: string, before: string | null, sel: [number, number] | null,
 *   marks: Array<[number, number]> | null, taken: number, via: boolean, bouncedAt: number | null}} SealedSegment
 */
/**
 * A reading's answer (verify.rs, `AgentAnswer`): a reason word and counts, never characters.
 * @typedef {object} Answer
 * @property {string} reason
 * @property {string} [kind]
 * @property {number} expected
 * @property {number} [grew]
 * @property {number} [following]
 * @property {number} [fields]
 * @property {number} [received]
 * @property {number} [recheck]
 * @property {boolean} [later]
 * @property {string[]} [took]
 */
/**
 * A field set by script within a call's window, as `readFields` answers (fields.rs).
 * @typedef {{kind: string, control: string, chars: number, equals: number[], sensitive: boolean,
 *   sameLength: number[], connected: boolean}} Changed
 */
/**
 * The agent, as the relay's calls (`Runtime.callFunctionOn`) and other frames' agents use it:
 * `globalThis.__cdpRelayAgent` in its world.
 * @typedef {object} Agent
 * @property {() => Array<{el: Element, t: number}>} scripted
 * @property {(texts: string[], win: BurstWindow) => {changed: Changed[], held: number[], maybe: number[], unreadable: boolean}} readFields
 * @property {() => State} state
 * @property {(o: Message) => void} report
 * @property {(el: Element | null) => Locator} locate
 * @property {() => void} refocus
 * @property {() => void} announce
 * @property {() => string} focusKind
 * @property {() => Sealed} sealed
 * @property {(n: number, win: BurstWindow, left: Sealed | null) => Answer} uncompared
 * @property {(literal: string, win: BurstWindow, left: Sealed | null) => Promise<Answer>} verify
 * @property {(token: number | string) => Promise<Answer | null>} recheck
 */
(() => {
  'use strict';
  const BINDING = '__cdpRelayObserve';
  if (globalThis.__cdpRelayAgent) {
    // Started again in a world it runs in already (the relay makes sure of the current
    // document after its setup): only its focus report again, which may have been sent before
    // the relay listened.
    globalThis.__cdpRelayAgent.announce();
    return;
  }
  let isTop = false;
  try {
    isTop = window.top === window;
  } catch (_) {
    isTop = false;
  }
  /** @param {Message} o */
  const send = (o) => {
    if (!isTop) return;
    try {
      // Looked up at each report: when the observer sets up a page that is already loading, the
      // agent can run before the binding reaches its world (only this world has it).
      const binding = globalThis[BINDING];
      if (typeof binding === 'function') binding(JSON.stringify(o));
    } catch (_) {
      // The relay went away: nothing to report to.
    }
  };
  // Wall-clock milliseconds, with their fraction: the relay's burst times are on the same
  // clock, and so are the other frames' agents (each document's performance.now() has its own
  // origin, hence the sum).
  const now = () => performance.timeOrigin + performance.now();
  const installedAt = now();
  const MAX_SEGMENTS = 512;
  const MAX_DATA = 8192;
  const MAX_BEFORE = 65536;
  // Insertions into one element further apart than this start a new segment, so two typing
  // steps into one field can be told apart.
  const SEGMENT_GAP = 100;
  const FOCUS_LOG = 64;
  // A keydown and the insertion it makes are one task apart at most.
  const KEY_TO_INPUT = 50;
  // An expando on the element's wrapper in this isolated world: invisible to page scripts,
  // shared by the agents of same-origin frames (same world).
  const STICKY = '__cdpRelaySensitive';

  // A message to the relay from this frame's agent: the top frame's sends it, a child frame's
  // hands it up.
  /** @param {Message} o */
  const report = (o) => {
    if (isTop) return send(o);
    try {
      const top = /** @type {Window} */ (window.top).__cdpRelayAgent;
      if (top) top.report(o);
    } catch (_) {
      // A cross-origin top frame: nothing of this frame is reported.
    }
  };

  /**
   * @param {Document | ShadowRoot} doc
   * @returns {Control | null}
   */
  const deepActive = (doc) => {
    let el = doc.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    return el;
  };

  // ---- How fields are classified -------------------------------------------------------
  // Every signal a page gives is read: the type (and a type that changes), autocomplete, name,
  // id, the text of its <label>s, aria-label, aria-labelledby, placeholder, title, inputmode,
  // maxlength, and a row of one-character boxes. The words are matched in the signals'
  // lower-cased text split into words ("cardNumber", "card_number" → "card number"): phrases
  // anywhere, short words only whole.
  const PASSWORD_PHRASES = [
    'password', 'passwort', 'passwd', 'passphrase', 'kennwort', 'mot de passe', 'contraseña',
    'contrasena', 'senha', 'wachtwoord', 'lösenord', 'losenord', 'passord', 'adgangskode',
    'salasana', 'hasło', 'haslo', 'heslo', 'jelszó', 'şifre', 'sifre', 'пароль', 'パスワード',
    '密码', '密碼', '비밀번호', 'كلمة المرور', 'סיסמה',
  ];
  const PASSWORD_WORDS = ['pwd', 'pw', 'pin', 'pass', 'secret'];
  const CODE_PHRASES = [
    'one time', 'onetime', 'passcode', 'verification code', 'verify code', 'auth code',
    'authentication code', 'authenticator', 'confirmation code', 'sms code', 'security key',
    'two factor', 'twofactor', '2 step', 'two step', 'recovery code', 'backup code',
    'bestätigungscode', 'einmalcode', 'code de vérification', 'code de confirmation',
    'código de verificación', 'codigo de verificacion', 'código de verificação',
    'codice di verifica', 'verificatiecode', 'verifieringskod', 'код подтверждения',
    '認証コード', '验证码', '驗證碼', '인증번호',
  ];
  const CODE_WORDS = ['otp', 'totp', 'hotp', 'mfa', '2fa', 'tan', 'digit', 'digits'];
  const PAYMENT_PHRASES = [
    'card number', 'cardnumber', 'credit card', 'debit card', 'card no', 'ccnum', 'cc num',
    'cc number', 'card verification', 'security code', 'card code', 'card exp', 'expiry date',
    'expiration date', 'mm yy', 'kartennummer', 'kreditkarte', 'prüfziffer',
    'numéro de carte', 'numero de carte', 'cryptogramme', 'número de tarjeta',
    'numero de tarjeta', 'número do cartão', 'numero do cartao', 'numero della carta',
    'kaartnummer', 'kortnummer', 'номер карты', 'カード番号', '卡号', '카드번호',
  ];
  const PAYMENT_WORDS = ['cvc', 'cvv', 'cvv2', 'cvc2', 'csc', 'cvn', 'ccv', 'iban'];
  const MARKED =
    '[data-sensitive]:not([data-sensitive="false"]),[data-private]:not([data-private="false"]),[data-cdp-relay-sensitive]';
  const TEXTUAL = new Set(['text', 'email', 'tel', 'number', 'search', 'url']);
  const NOT_TYPED = new Set(['checkbox', 'radio', 'button', 'submit', 'reset', 'image', 'file', 'range', 'color', 'hidden']);
  const SENSITIVE = new Set(['password', 'one-time-code', 'payment', 'marked', 'frame']);
  const SIGNAL_CHARS = 200;

  /**
   * @param {Element} el
   * @param {string} name
   */
  const attr = (el, name) => String((el.getAttribute && el.getAttribute(name)) || '');
  /** @param {string} text */
  const words = (text) =>
    ` ${String(text)
      .replace(/([a-z])([A-Z])/g, '$1 $2')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, ' ')
      .trim()} `;
  /**
   * @param {string} text
   * @param {string[]} phrases
   * @param {string[]} whole
   */
  const says = (text, phrases, whole) =>
    phrases.some((p) => text.includes(p)) || whole.some((w) => text.includes(` ${w} `));
  /** @param {Node | null} el */
  const textOf = (el) => String((el && el.textContent) || '').slice(0, SIGNAL_CHARS);
  /** @param {Control} el */
  const signals = (el) => {
    const parts = ['name', 'id', 'aria-label', 'placeholder', 'title', 'autocomplete'].map((a) =>
      attr(el, a).slice(0, SIGNAL_CHARS),
    );
    try {
      for (const l of Array.from(el.labels || []).slice(0, 4)) parts.push(textOf(l));
    } catch (_) {
      // No labels on this element.
    }
    const root = /** @type {Document | ShadowRoot} */ (el.getRootNode ? el.getRootNode() : document);
    for (const id of attr(el, 'aria-labelledby').split(/\s+/).filter(Boolean).slice(0, 4)) {
      const l = (root.getElementById && root.getElementById(id)) || document.getElementById(id);
      parts.push(textOf(l));
    }
    return words(parts.join(' '));
  };
  // A row of one-character boxes (a code entered a digit at a time).
  /** @param {Control} el */
  const oneCharRow = (el) => {
    if (el.tagName !== 'INPUT' || el.maxLength !== 1) return false;
    let box = el.parentElement;
    for (let depth = 0; box && depth < 3; depth += 1, box = box.parentElement) {
      const inputs = box.querySelectorAll('input');
      if (inputs.length > 64) return false;
      let n = 0;
      for (const i of inputs) if (i.maxLength === 1 && TEXTUAL.has(String(i.type || 'text'))) n += 1;
      if (n >= 4) return true;
    }
    return false;
  };
  // A short numeric field named a code ("Enter the code", maxlength 6, inputmode numeric).
  /**
   * @param {Control} el
   * @param {string} text
   * @param {string} type
   */
  const numericCode = (el, text, type) => {
    if (!text.includes(' code ') && !text.includes(' pin ')) return false;
    const numeric = attr(el, 'inputmode') === 'numeric' || type === 'number' || type === 'tel' || /^\[?\\d|^\[0-9\]/.test(attr(el, 'pattern'));
    // Undefined on an element that has none: it compares false.
    const n = /** @type {number} */ (el.maxLength);
    return numeric && n >= 3 && n <= 10;
  };
  /**
   * @param {Control} el
   * @param {string} tag
   * @returns {string}
   */
  const classify = (el, tag) => {
    if (el.closest && el.closest(MARKED)) return 'marked';
    const type = tag === 'INPUT' ? String(el.type || 'text').toLowerCase() : '';
    const ac = ` ${attr(el, 'autocomplete').toLowerCase()} `;
    if (type === 'password' || ac.includes(' current-password ') || ac.includes(' new-password ')) return 'password';
    if (ac.includes(' one-time-code ')) return 'one-time-code';
    if (/ cc-/.test(ac)) return 'payment';
    const text = signals(el);
    if (says(text, PASSWORD_PHRASES, PASSWORD_WORDS)) return 'password';
    if (says(text, CODE_PHRASES, CODE_WORDS) || oneCharRow(el) || numericCode(el, text, type)) return 'one-time-code';
    if (says(text, PAYMENT_PHRASES, PAYMENT_WORDS)) return 'payment';
    if (tag === 'TEXTAREA') return 'textarea';
    if (tag !== 'INPUT') return 'text';
    return TEXTUAL.has(type) ? type : 'text';
  };

  // A word for the kind of an element: what typing steps record and what the capture veto reads.
  /**
   * @param {Control | null} el
   * @returns {string}
   */
  const kindOf = (el) => {
    if (!el || el === document.body || el === document.documentElement) return 'none';
    if (el[STICKY]) return el[STICKY];
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
    if (tag === 'INPUT' && NOT_TYPED.has(String(el.type || 'text').toLowerCase())) return 'none';
    let kind;
    try {
      kind = classify(el, tag);
    } catch (_) {
      kind = 'unknown';
    }
    if (SENSITIVE.has(kind)) {
      try {
        el[STICKY] = kind;
      } catch (_) {
        // A frozen wrapper: it is classified again next time, the same way.
      }
    }
    return kind;
  };
  /** @param {Control | null} el */
  const editable = (el) =>
    !!el && (el.tagName === 'TEXTAREA' || el.isContentEditable || (el.tagName === 'INPUT' && !NOT_TYPED.has(String(el.type || 'text').toLowerCase())));

  // Opaque numbers for elements and groups of fields, per document: what the relay is told
  // about a field besides its kind, never anything the page wrote.
  const serials = new WeakMap();
  let nextSerial = 1;
  /** @param {object} o */
  const serialOf = (o) => {
    let n = serials.get(o);
    if (!n) {
      n = nextSerial;
      nextSerial += 1;
      serials.set(o, n);
    }
    return n;
  };
  // The field that has focus, through same-origin frames.
  const focusedField = () => {
    let el = deepActive(document);
    for (let depth = 0; el && (el.tagName === 'IFRAME' || el.tagName === 'FRAME') && depth < 4; depth += 1) {
      try {
        const d = el.contentDocument;
        if (!d) return el;
        el = deepActive(d);
      } catch (_) {
        return el;
      }
    }
    return el;
  };
  // The group of fields `el` belongs to, for typing a few characters per field (a one-time code
  // box by box): its form, else the row of short boxes it sits in (`maxlength` 1–2, or
  // `autocomplete=one-time-code`: the nearest ancestor, three levels up at most, that holds
  // another field). 0: none. The relay makes such typing one literal (docs/security.md).
  /** @param {Control} el */
  const groupOf = (el) => {
    if (!editable(el)) return 0;
    if (el.form) return serialOf(el.form);
    // Undefined on an element that has none: it compares false.
    const n = /** @type {number} */ (el.maxLength);
    const short = (n >= 1 && n <= 2) || ` ${attr(el, 'autocomplete').toLowerCase()} `.includes(' one-time-code ');
    if (!short) return 0;
    let box = el.parentElement;
    for (let depth = 0; box && depth < 3; depth += 1, box = box.parentElement) {
      if (box.querySelectorAll('input,textarea').length > 1) return serialOf(box);
    }
    return 0;
  };
  // The field whose `input` event is being dispatched (until the task ends): focus that arrives
  // meanwhile was handed on by the page, as code boxes move on when a digit lands. Remembered
  // per field it went to.
  /** @type {HTMLElement | null} */
  let inputting = null;
  /** @type {WeakMap<Element, HTMLElement>} */
  const handedFrom = new WeakMap();
  addEventListener(
    'input',
    (e) => {
      const el = /** @type {HTMLElement | null} */ ((e.composedPath && e.composedPath()[0]) || e.target);
      if (!el || !el.tagName) return;
      inputting = el;
      setTimeout(() => {
        if (inputting === el) inputting = null;
      }, 0);
    },
    true,
  );
  addEventListener(
    'focus',
    (e) => {
      const el = /** @type {HTMLElement | null} */ ((e.composedPath && e.composedPath()[0]) || e.target);
      if (!el || !el.tagName) return;
      if (inputting && inputting !== el && editable(inputting) && editable(el)) handedFrom.set(el, inputting);
      else handedFrom.delete(el);
    },
    true,
  );

  // The last focus report: kind, field, group and where the page handed focus from; and the
  // element and kind it was about (an insertion into the same element, of the same kind, need
  // not ask again).
  /** @type {string | null} */
  let lastFocus = null;
  /** @type {Element | null} */
  let lastFocusEl = null;
  /** @type {string | null} */
  let lastFocusKind = null;
  const reportFocus = () => {
    if (!isTop) {
      // The top frame's agent reads into this frame and reports for the page.
      try {
        const up = window.parent.__cdpRelayAgent;
        if (up) up.refocus();
      } catch (_) {
        // A cross-origin parent reports this frame as unreadable on its own.
      }
      return;
    }
    /** @type {FocusReport} */
    let report = { t: 'focus', kind: 'unknown', field: 0, group: 0, from: 0 };
    try {
      const el = focusedField();
      lastFocusEl = el;
      const typed = editable(el);
      const from = typed ? handedFrom.get(/** @type {Element} */ (el)) : null;
      report = {
        t: 'focus',
        kind: kindOf(deepActive(document)),
        field: typed ? serialOf(/** @type {Element} */ (el)) : 0,
        group: typed ? groupOf(/** @type {Control} */ (el)) : 0,
        from: from ? serialOf(from) : 0,
      };
    } catch (_) {
      // Unreadable: an unknown field, in no group.
    }
    lastFocusKind = report.kind;
    const key = `${report.kind}/${report.field}/${report.group}/${report.from}`;
    if (key !== lastFocus) {
      lastFocus = key;
      send(report);
    }
  };
  addEventListener('focusin', reportFocus, true);
  addEventListener('focusout', () => setTimeout(reportFocus, 0), true);

  /**
   * @param {Field} el
   * @returns {string | null}
   */
  const valueOf = (el) => {
    // A field of a document left before its typing was read, as it was then (`unseal`).
    if (el.sealed) return el.value;
    if (el.isContentEditable) return String(el.textContent || '');
    if ('value' in el) return String(el.value);
    return null;
  };
  /**
   * @param {Partial<HTMLInputElement>} el any element: a text field's selection, else none
   * @returns {[number, number] | null}
   */
  const selection = (el) => {
    try {
      const s = el.selectionStart;
      const e = el.selectionEnd;
      return typeof s === 'number' && typeof e === 'number' ? [s, e] : null;
    } catch (_) {
      return null;
    }
  };
  /** @param {string} s */
  const chars = (s) => Array.from(s).length;

  // ---- Locators ------------------------------------------------------------------------------
  // What a replay finds an element by, in Playwright codegen's order: `data-testid`, ARIA role
  // and accessible name, label, placeholder, text, a short CSS path. Each must pick out the
  // element alone the way Playwright resolves it — across the frame's document and every open
  // shadow root in it; a name, label, placeholder or text as a case-insensitive substring, or
  // with `exact` as the whole text, case-sensitively (tried first); hidden elements left out of
  // roles only; hidden text left out of accessible names only — else the next is tried. An id, a
  // name or a class that looks generated (`r-7f3a9c`, `Button_primary__3xK9a`, `:r1:`) is never
  // used: it would differ at the replay. Never a value.
  const NAME_CHARS = 80;
  const MAX_CANDIDATES = 2000;
  const MAX_TEXT_CANDIDATES = 10000;
  const MAX_ROOTS = 64;
  // Playwright's normalizeWhiteSpace.
  /** @param {unknown} t */
  const norm = (t) => String(t || '').replace(/[\u200b\u00ad]/g, '').trim().replace(/\s+/g, ' ');
  // Longer text is cut at a word: Playwright matches a substring, so a cut name still matches
  // (but never exactly).
  /** @param {string} t */
  const shorten = (t) => {
    if (t.length <= NAME_CHARS) return t;
    const c = t.slice(0, NAME_CHARS);
    const sp = c.lastIndexOf(' ');
    return sp >= NAME_CHARS / 2 ? c.slice(0, sp) : c;
  };
  // An identifier a build tool or framework made up: React's `:r1:`/`«r1»`, CSS-in-JS and CSS
  // modules (`css-1q2w3e`, `sc-…`, `Button_primary__3xK9a`), and any part of at least four
  // characters mixing two or more digits with letters (`r-7f3a9c`, `ember123`) or four digits.
  // The same rule as the export's (report/src/replay/guard.rs).
  /** @param {unknown} id */
  const looksGenerated = (id) => {
    const s = String(id || '');
    if (/[:«»]/.test(s) || /^(css|sc|jsx|emotion|styled|svelte)-/i.test(s) || /__/.test(s)) return true;
    return s.split(/[-_.]+/).some((part) => {
      const digits = (part.match(/[0-9]/g) || []).length;
      const letters = (part.match(/[A-Za-z]/g) || []).length;
      return part.length >= 4 && ((digits >= 2 && letters >= 1) || digits === part.length);
    });
  };
  const ROLES = new Set([
    'button', 'link', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'listbox', 'option',
    'heading', 'img', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'switch', 'slider',
    'spinbutton', 'treeitem', 'cell', 'gridcell', 'row', 'columnheader', 'rowheader', 'dialog',
  ]);
  const FROM_CONTENT = new Set([
    'button', 'link', 'heading', 'option', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio',
    'switch', 'treeitem', 'cell', 'gridcell', 'row', 'columnheader', 'rowheader', 'checkbox', 'radio',
  ]);
  /** @type {Record<string, string>} */
  const ROLE_TAGS = {
    button: 'button,input[type=button],input[type=submit],input[type=reset],input[type=image]',
    link: 'a[href],area[href]',
    textbox: 'input:not([type]),input[type=text],input[type=email],input[type=tel],input[type=url],textarea',
    searchbox: 'input[type=search]',
    checkbox: 'input[type=checkbox]',
    radio: 'input[type=radio]',
    combobox: 'select,input[list]',
    listbox: 'select',
    option: 'option',
    heading: 'h1,h2,h3,h4,h5,h6',
    img: 'img[alt]',
    slider: 'input[type=range]',
    spinbutton: 'input[type=number]',
  };
  /** @param {Control} el */
  const inputType = (el) => String(el.type || attr(el, 'type') || 'text').toLowerCase();
  /** @type {Record<string, string>} */
  const TAG_ROLES = {
    BUTTON: 'button', TEXTAREA: 'textbox', OPTION: 'option',
    H1: 'heading', H2: 'heading', H3: 'heading', H4: 'heading', H5: 'heading', H6: 'heading',
  };
  /** @type {Record<string, string>} */
  const INPUT_ROLES = {
    button: 'button', submit: 'button', reset: 'button', image: 'button', checkbox: 'checkbox',
    radio: 'radio', range: 'slider', number: 'spinbutton', search: 'searchbox', text: 'textbox',
    email: 'textbox', tel: 'textbox', url: 'textbox',
  };
  /**
   * @param {Control} el
   * @returns {string | null}
   */
  const implicitRole = (el) => {
    const tag = el.tagName;
    if (tag === 'A' || tag === 'AREA') return el.hasAttribute('href') ? 'link' : null;
    if (tag === 'SELECT') return el.multiple || /** @type {number} */ (el.size) > 1 ? 'listbox' : 'combobox';
    if (tag === 'IMG') return attr(el, 'alt') ? 'img' : null;
    if (tag !== 'INPUT') return TAG_ROLES[tag] || null;
    const role = INPUT_ROLES[inputType(el)] || null;
    const listed = el.hasAttribute('list') && (role === 'textbox' || role === 'searchbox');
    return listed ? 'combobox' : role;
  };
  /**
   * @param {Control} el
   * @returns {string | null}
   */
  const roleOf = (el) => {
    const explicit = attr(el, 'role').trim().split(/\s+/)[0].toLowerCase();
    if (explicit) return ROLES.has(explicit) ? explicit : null;
    return implicitRole(el);
  };
  /** @param {Element} el */
  const hiddenFromRoles = (el) => {
    try {
      return el.getClientRects().length === 0 || !!el.closest('[aria-hidden="true"]');
    } catch (_) {
      return false;
    }
  };
  // The computed style of `el`, or null when it is not rendered (display:none,
  // visibility:hidden, aria-hidden): then its text is no part of an accessible name.
  /**
   * @param {Element} el
   * @returns {{display: string} | null}
   */
  const renderedStyle = (el) => {
    if (el.getAttribute('aria-hidden') === 'true') return null;
    try {
      const st = getComputedStyle(el);
      return st.display === 'none' || st.visibility === 'hidden' || st.visibility === 'collapse' ? null : st;
    } catch (_) {
      return { display: 'inline' };
    }
  };
  // The text of a subtree as a name, as Playwright's accessible names take it: text, images'
  // alt, children's aria-label, hidden parts left out, a space around what is not inline.
  /**
   * @param {any} node any node: an element, a shadow host, a slot
   * @param {number} [depth]
   * @returns {string}
   */
  const contentText = (node, depth = 0) => {
    let out = '';
    if (!node || depth > 12) return out;
    let kids = node.shadowRoot ? node.shadowRoot.childNodes : node.childNodes || [];
    if (node.tagName === 'SLOT' && node.assignedNodes && node.assignedNodes().length) kids = node.assignedNodes();
    for (const c of kids) {
      if (out.length > 4 * NAME_CHARS) break;
      if (c.nodeType === 3) out += c.data;
      else if (c.nodeType === 1) {
        if (c.tagName === 'SCRIPT' || c.tagName === 'STYLE' || c.tagName === 'TEMPLATE') continue;
        const st = renderedStyle(c);
        if (!st) continue;
        const pad = st.display !== 'inline' || c.tagName === 'BR' ? ' ' : '';
        const al = attr(c, 'aria-label');
        let t;
        if (al) t = al;
        else if (c.tagName === 'IMG') t = attr(c, 'alt');
        else t = contentText(c, depth + 1);
        out += pad + t + pad;
      }
    }
    return out;
  };
  /**
   * @param {Node} el
   * @returns {Document | ShadowRoot}
   */
  const rootOf = (el) => /** @type {Document | ShadowRoot} */ (el.getRootNode ? el.getRootNode() : document);
  // The document of `el` and every open shadow root in it: where Playwright's locators look.
  /**
   * @param {Element} el
   * @returns {Array<Document | ShadowRoot>}
   */
  const rootsOf = (el) => {
    const doc = el.ownerDocument || document;
    /** @type {Array<Document | ShadowRoot>} */
    const out = [doc];
    for (let i = 0; i < out.length && out.length < MAX_ROOTS; i += 1) {
      let all;
      try {
        all = out[i].querySelectorAll('*');
      } catch (_) {
        continue;
      }
      for (const h of all) if (h.shadowRoot && out.length < MAX_ROOTS) out.push(h.shadowRoot);
    }
    return out;
  };
  // Every element matching `sel` in `roots`; null when there are more than `max`.
  /**
   * @param {Array<Document | ShadowRoot>} roots
   * @param {string} sel
   * @returns {Element[] | null}
   */
  const queryDeep = (roots, sel, max = MAX_CANDIDATES) => {
    const out = [];
    for (const r of roots) {
      let found;
      try {
        found = r.querySelectorAll(sel);
      } catch (_) {
        return null;
      }
      for (const c of found) out.push(c);
      if (out.length > max) return null;
    }
    return out;
  };
  // How many elements of `roots` matching `sel` pass `pick`, stopping at two; `Infinity` when
  // there are too many to look at.
  /**
   * @param {Array<Document | ShadowRoot>} roots
   * @param {string} sel
   * @param {(c: Element) => boolean} pick
   */
  const countOf = (roots, sel, pick, max = MAX_CANDIDATES) => {
    const all = queryDeep(roots, sel, max);
    if (!all) return Infinity;
    let n = 0;
    for (const c of all) {
      if (pick(c)) n += 1;
      if (n > 1) break;
    }
    return n;
  };
  /** @param {Element} el */
  const byIds = (el) => {
    const root = rootOf(el);
    return attr(el, 'aria-labelledby')
      .split(/\s+/)
      .filter(Boolean)
      .slice(0, 4)
      .map((id) => (root.getElementById && root.getElementById(id)) || document.getElementById(id))
      .map((l) => (l ? contentText(l) : ''))
      .join(' ');
  };
  /** @param {Control} el */
  const labelsOf = (el) => {
    let text = '';
    try {
      text = Array.from(el.labels || []).slice(0, 4).map((l) => contentText(l)).join(' ');
    } catch (_) {
      // No labels on this element.
    }
    return text;
  };
  // Playwright's elementText: all text below, hidden or not, and a shadow root's; cached per
  // locate call.
  /**
   * @param {Map<Node, {full: string, normalized: string, skip: boolean}>} cache
   * @param {any} el an element or a shadow root
   * @returns {{full: string, normalized: string, skip: boolean}}
   */
  const textOfEl = (cache, el) => {
    let v = cache.get(el);
    if (v !== undefined) return v;
    let full = '';
    const skip = el.nodeName === 'SCRIPT' || el.nodeName === 'NOSCRIPT' || el.nodeName === 'STYLE' || (el.ownerDocument && el.ownerDocument.head && el.ownerDocument.head.contains(el));
    if (!skip) {
      if (el.nodeName === 'INPUT' && (el.type === 'submit' || el.type === 'button')) full = String(el.value);
      else {
        for (let c = el.firstChild; c; c = c.nextSibling) {
          if (c.nodeType === 3) full += c.nodeValue || '';
          else if (c.nodeType === 1) full += textOfEl(cache, c).full;
        }
        if (el.shadowRoot) full += textOfEl(cache, el.shadowRoot).full;
      }
    }
    v = { full, normalized: norm(full), skip };
    cache.set(el, v);
    return v;
  };
  // The elements a label can name.
  const LABELLED = '[aria-labelledby],[aria-label],button,meter,output,progress,select,textarea,input';
  // The texts Playwright's getByLabel matches: aria-labelledby's elements, else aria-label,
  // else the <label>s of a labelable element.
  /**
   * @param {Map<Node, {full: string, normalized: string, skip: boolean}>} cache
   * @param {Control} el
   * @returns {string[]}
   */
  const labelTexts = (cache, el) => {
    const ids = attr(el, 'aria-labelledby').split(/\s+/).filter(Boolean);
    if (ids.length) {
      const root = rootOf(el);
      return ids
        .map((id) => (root.getElementById && root.getElementById(id)) || null)
        .filter(Boolean)
        .map((l) => textOfEl(cache, l).normalized);
    }
    const al = attr(el, 'aria-label');
    if (al.trim()) return [norm(al)];
    const labelable = ['BUTTON', 'METER', 'OUTPUT', 'PROGRESS', 'SELECT', 'TEXTAREA'].includes(el.nodeName) || (el.nodeName === 'INPUT' && el.type !== 'hidden');
    if (!labelable) return [];
    try {
      return Array.from(el.labels || []).slice(0, 4).map((l) => textOfEl(cache, l).normalized);
    } catch (_) {
      return [];
    }
  };
  /**
   * @param {Control} el
   * @param {string} role
   */
  const nameOf = (el, role) => {
    const named = norm(byIds(el)) || norm(attr(el, 'aria-label'));
    if (named) return named;
    const tag = el.tagName;
    if (tag === 'INPUT') {
      const type = inputType(el);
      if (type === 'submit' || type === 'reset' || type === 'button') {
        return norm(attr(el, 'value')) || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : '');
      }
      if (type === 'image') return norm(attr(el, 'alt'));
    }
    if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') {
      const l = norm(labelsOf(el));
      if (l) return l;
    } else if (tag === 'IMG') {
      return norm(attr(el, 'alt'));
    } else if (FROM_CONTENT.has(role)) {
      const t = norm(contentText(el));
      if (t) return t;
    }
    return norm(attr(el, 'title'));
  };
  // Does `text` match `part` as Playwright matches it: whole and case-sensitive (`exact`), or
  // as a case-insensitive substring?
  /**
   * @param {string} text
   * @param {string} part
   * @param {boolean} exact
   */
  const matches = (text, part, exact) => (exact ? text === part : text.toLowerCase().includes(part.toLowerCase()));
  // Exact first (it keeps matching when other text grows around it), then as a substring.
  /**
   * @param {string} value
   * @param {(v: string, exact: boolean) => number} count
   * @returns {{value: string, exact: boolean} | null}
   */
  const uniquely = (value, count) => {
    if (!value) return null;
    const whole = value.length <= NAME_CHARS;
    const v = shorten(value);
    if (whole && count(v, true) === 1) return { value: v, exact: true };
    if (count(v, false) === 1) return { value: v, exact: false };
    return null;
  };
  /**
   * @param {Element} el
   * @param {boolean} frame
   * @returns {string | null}
   */
  const cssOf = (el, frame) => {
    const roots = rootsOf(el);
    /** @param {string} sel */
    const one = (sel) => countOf(roots, sel, () => true) === 1;
    const tag = el.tagName.toLowerCase();
    // An id or name longer than a name is not a selector anyone would write (nor keep); one
    // that looks generated would differ at the replay.
    /** @param {string} t */
    const usable = (t) => t && t.length <= NAME_CHARS && !looksGenerated(t);
    if (usable(el.id)) {
      const s = `#${CSS.escape(el.id)}`;
      if (one(s)) return s;
    }
    const name = attr(el, 'name');
    if (usable(name)) {
      const s = `${tag}[name="${CSS.escape(name)}"]`;
      if (one(s)) return s;
    }
    if (frame) {
      // A frame is often the only one, or has a title.
      if (one(tag)) return tag;
      const title = attr(el, 'title');
      if (title && title.length <= NAME_CHARS) {
        const s = `${tag}[title="${CSS.escape(title)}"]`;
        if (one(s)) return s;
      }
    }
    // A short path down from the nearest ancestor with an id of its own.
    const path = [];
    let node = el;
    for (let depth = 0; depth < 3 && node.parentElement; depth += 1) {
      const parent = node.parentElement;
      const t = node.tagName.toLowerCase();
      const same = Array.from(parent.children).filter((c) => c.tagName === node.tagName);
      path.unshift(same.length > 1 ? `${t}:nth-of-type(${same.indexOf(node) + 1})` : t);
      if (usable(parent.id)) {
        const s = `#${CSS.escape(parent.id)} > ${path.join(' > ')}`;
        if (one(s)) return s;
      }
      node = parent;
    }
    return null;
  };
  // Would only an id, name or class that looks generated pick `el` out? (Then saying so beats
  // "no locator".)
  /** @param {Element} el */
  const generatedOnly = (el) => {
    const own = [el.id, attr(el, 'name'), ...Array.from(el.classList || [])];
    return own.some((t) => t && looksGenerated(t));
  };
  // Playwright's text engine keeps an element whose text matches when none of its children's
  // does (`self`).
  /**
   * @param {Map<Node, {full: string, normalized: string, skip: boolean}>} cache
   * @param {Element} el
   * @param {(t: string) => boolean} match
   */
  const textSelf = (cache, el, match) => {
    const t = textOfEl(cache, el);
    if (t.skip || !match(t.normalized)) return false;
    for (let c = el.firstElementChild; c; c = c.nextElementSibling) {
      if (match(textOfEl(cache, c).normalized)) return false;
    }
    return !(el.shadowRoot && match(textOfEl(cache, el.shadowRoot).normalized));
  };
  // The element itself, in its frame.
  /**
   * @param {Control} el
   * @returns {Locator}
   */
  const locatorOf = (el) => {
    const roots = rootsOf(el);
    const cache = new Map();
    const testId = attr(el, 'data-testid');
    if (testId && testId.length <= NAME_CHARS && countOf(roots, '[data-testid]', (c) => attr(c, 'data-testid') === testId) === 1) {
      return { testId };
    }
    const role = roleOf(el);
    if (role) {
      const tags = ROLE_TAGS[role];
      const sel = tags ? `${tags},[role=${role}]` : `[role=${role}]`;
      const byName = uniquely(nameOf(el, role), (name, exact) => {
        // Each word of a name lies whole in one text node or attribute, so an element whose
        // text lacks one and whose name comes from nothing else cannot match: its name is not
        // computed (a list of two thousand links is looked through in a few milliseconds).
        const words = name.toLowerCase().split(' ');
        /** @param {Element} c */
        const mayMatch = (c) => {
          if (c.tagName === 'INPUT' || c.tagName === 'SELECT' || c.tagName === 'TEXTAREA' || c.tagName === 'IMG') return true;
          if (c.hasAttribute('aria-labelledby') || c.hasAttribute('aria-label') || c.hasAttribute('title') || c.shadowRoot) return true;
          const text = String(c.textContent || '').toLowerCase();
          return words.every((w) => text.includes(w)) || !!c.querySelector('[aria-label],img[alt]');
        };
        return countOf(roots, sel, (c) => mayMatch(c) && roleOf(c) === role && matches(nameOf(c, role), name, exact) && !hiddenFromRoles(c));
      });
      if (byName) return byName.exact ? { role, name: byName.value, exact: true } : { role, name: byName.value };
    }
    const labels = labelTexts(cache, el).filter(Boolean);
    for (const l of labels) {
      const byLabel = uniquely(l, (label, exact) =>
        countOf(roots, LABELLED, (c) => labelTexts(cache, c).some((t) => matches(t, label, exact))));
      if (byLabel) return byLabel.exact ? { label: byLabel.value, exact: true } : { label: byLabel.value };
    }
    const byPlaceholder = uniquely(norm(attr(el, 'placeholder')), (p, exact) =>
      countOf(roots, '[placeholder]', (c) => matches(norm(attr(c, 'placeholder')), p, exact)));
    if (byPlaceholder) {
      return byPlaceholder.exact ? { placeholder: byPlaceholder.value, exact: true } : { placeholder: byPlaceholder.value };
    }
    const own = textOfEl(cache, el).normalized;
    if (own && !['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName)) {
      const byText = uniquely(own, (text, exact) => {
        /** @param {string} t */
        const match = (t) => matches(t, text, exact);
        return textSelf(cache, el, match) ? countOf(roots, '*', (c) => textSelf(cache, c, match), MAX_TEXT_CANDIDATES) : 2;
      });
      if (byText) return byText.exact ? { text: byText.value, exact: true } : { text: byText.value };
    }
    const css = cssOf(el, false);
    if (css) return { css };
    return { why: generatedOnly(el) ? 'generated-id' : 'no-locator' };
  };
  // What a click on `el` is aimed at: the control or link it is part of (a label stands for its
  // control when that can be clicked).
  const CLICKABLE =
    'button,a[href],input,textarea,select,option,summary,label,h1,h2,h3,h4,h5,h6,[role=button],[role=link],[role=checkbox],[role=radio],[role=tab],[role=menuitem],[role=menuitemcheckbox],[role=menuitemradio],[role=option],[role=switch],[role=treeitem]';
  /**
   * @param {Element} el
   * @returns {Control}
   */
  const aimOf = (el) => {
    const t = /** @type {Control} */ ((el.closest && el.closest(CLICKABLE)) || el);
    if (t.tagName === 'LABEL' && t.control && !hiddenFromRoles(t.control)) return t.control;
    return t;
  };
  // The selector of each <iframe> from the top document down to this frame, outermost first;
  // or why there is none.
  const framePath = () => {
    const path = [];
    /** @type {Window} */
    let w = window;
    for (let depth = 0; w !== w.top; depth += 1) {
      /** @type {Element | null} */
      let fe = null;
      try {
        fe = w.frameElement;
      } catch (_) {
        fe = null;
      }
      if (!fe) return { why: 'cross-origin-frame' };
      const sel = depth < 8 ? cssOf(fe, true) : null;
      if (!sel) return { why: 'unnamed-frame' };
      path.unshift(sel);
      w = w.parent;
    }
    return { path };
  };
  // The locator of `el`, with the frames it is in below the top frame.
  /**
   * @param {Control | null} el
   * @returns {Locator}
   */
  const locate = (el) => {
    try {
      if (!el || !el.tagName) return { why: 'no-element' };
      if (el.tagName === 'BODY' || el.tagName === 'HTML') return { why: 'page-background' };
      const found = locatorOf(el);
      if (isTop || found.why) return found;
      const frames = framePath();
      return frames.why ? { why: frames.why } : { ...found, frames: frames.path };
    } catch (_) {
      return { why: 'error' };
    }
  };

  // ---- Hovering ------------------------------------------------------------------------------
  // A click that needed the pointer to rest on another element first (a menu): a replay hovers
  // that element before it clicks. The rule: the clicked element lies in an element `shown` that
  // was shown because the pointer was over another one, `trigger` — by a `:hover` style rule
  // (`.menu:hover .sub { display: block }`: `shown` matches the rule, `trigger` is the ancestor
  // the rule's hovered part matches), or by the page's script (`shown` was inserted, or its
  // style, class or `hidden` changed to make it rendered, within a second of the pointer
  // entering `trigger`, outside `shown`). What is hovered is the element the pointer entered
  // last inside `trigger` and outside `shown` (what a user moved over), else `trigger`.
  const OVER_LOG = 32;
  const SHOW_AFTER_OVER = 1000;
  /** @type {Array<{el: HTMLElement, t: number}>} */
  const overLog = [];
  addEventListener(
    'pointerover',
    (e) => {
      if (!e.isTrusted) return;
      const el = /** @type {HTMLElement | null} */ ((e.composedPath && e.composedPath()[0]) || e.target);
      if (!el || el.nodeType !== 1) return;
      overLog.push({ el, t: now() });
      if (overLog.length > OVER_LOG) overLog.shift();
    },
    true,
  );
  const shownBy = new WeakMap();
  try {
    new MutationObserver((records) => {
      const last = overLog[overLog.length - 1];
      if (!last || now() - last.t > SHOW_AFTER_OVER) return;
      /** @param {any} node an added node, or one whose attributes changed */
      const mark = (node) => {
        if (!node || node.nodeType !== 1 || node.contains(last.el) || shownBy.has(node)) return;
        if (node.getClientRects().length === 0) return;
        shownBy.set(node, last.el);
      };
      for (const r of records) {
        if (r.type === 'childList') for (const n of r.addedNodes) mark(n);
        else mark(r.target);
      }
    }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['style', 'class', 'hidden'] });
  } catch (_) {
    // No document element yet: script-shown menus are not seen in this document.
  }
  // The `:hover` rules of `root`'s style sheets that show or hide something, as selector lists.
  /**
   * @param {Document | ShadowRoot} root
   * @returns {string[]}
   */
  const hoverSelectors = (root) => {
    /** @type {string[]} */
    const out = [];
    let seen = 0;
    /**
     * @param {Iterable<any>} rules any kind of rule: style, media, supports, …
     * @param {number} depth
     */
    const walk = (rules, depth) => {
      for (const r of rules) {
        seen += 1;
        if (out.length > 200 || depth > 4 || seen > 20000) return;
        if (r.cssRules && !r.selectorText) walk(r.cssRules, depth + 1);
        const st = r.style;
        if (!r.selectorText || !r.selectorText.includes(':hover') || !st) continue;
        if (st.display || st.visibility || st.opacity || st.pointerEvents || st.maxHeight || st.transform) out.push(r.selectorText);
      }
    };
    for (const sheet of Array.from((root && root.styleSheets) || []).slice(0, 64)) {
      try {
        walk(sheet.cssRules, 0);
      } catch (_) {
        // A cross-origin style sheet: its rules cannot be read.
      }
    }
    return out;
  };
  // One complex selector with `:hover` split at the hovered compound: the selector the hovered
  // element matches (`:hover` left out), when only descendant or child combinators follow it.
  /** @param {string} complex */
  const hoveredPart = (complex) => {
    const at = complex.indexOf(':hover');
    let end = at;
    let depth = 0;
    for (; end < complex.length; end += 1) {
      const ch = complex[end];
      if (ch === '(' || ch === '[') depth += 1;
      else if (ch === ')' || ch === ']') depth -= 1;
      else if (depth === 0 && /[\s>+~]/.test(ch)) break;
    }
    const rest = complex.slice(end).trim();
    if (!rest || rest.startsWith('+') || rest.startsWith('~')) return null;
    const part = complex.slice(0, end).replace(/:hover/g, '').trim();
    return part === '' || /[\s>+~]$/.test(part) ? `${part}*` : part;
  };
  /** @param {string} list */
  const splitList = (list) => {
    const out = [];
    let depth = 0;
    let from = 0;
    for (let i = 0; i < list.length; i += 1) {
      const ch = list[i];
      if (ch === '(' || ch === '[') depth += 1;
      else if (ch === ')' || ch === ']') depth -= 1;
      else if (ch === ',' && depth === 0) {
        out.push(list.slice(from, i));
        from = i + 1;
      }
    }
    out.push(list.slice(from));
    return out.map((s) => s.trim()).filter(Boolean);
  };
  // (shown, trigger) for `el` by a `:hover` rule, or null.
  /**
   * @param {Element} el
   * @returns {{shown: Element, trigger: Element} | null}
   */
  const byHoverRule = (el) => {
    const roots = [rootOf(el)];
    if (roots[0] !== document) roots.push(document);
    for (const root of roots) {
      for (const list of hoverSelectors(root)) {
        for (const complex of splitList(list)) {
          if (!complex.includes(':hover')) continue;
          const hovered = hoveredPart(complex);
          if (!hovered) continue;
          /** @type {Element | null} */
          let shown = null;
          try {
            for (let n = /** @type {Element | null} */ (el); n && n.nodeType === 1; n = n.parentElement) {
              if (n.matches(complex)) {
                shown = n;
                break;
              }
            }
            const trigger = shown && shown.parentElement && shown.parentElement.closest(hovered);
            if (trigger && trigger.matches(':hover')) return { shown: /** @type {Element} */ (shown), trigger };
          } catch (_) {
            // A selector this engine does not take.
          }
        }
      }
    }
    return null;
  };
  // (shown, trigger) for `el` by the page's script, or null.
  /**
   * @param {Element} el
   * @returns {{shown: Element, trigger: Element} | null}
   */
  const byScript = (el) => {
    for (let n = /** @type {Element | null} */ (el); n && n.nodeType === 1; n = n.parentElement) {
      const trigger = shownBy.get(n);
      if (trigger && trigger.isConnected && !n.contains(trigger)) return { shown: n, trigger };
    }
    return null;
  };
  // The element to hover before clicking `el`, or null when the click needed none.
  /**
   * @param {Element} el
   * @returns {Element | null}
   */
  const hoverOf = (el) => {
    const found = byHoverRule(el) || byScript(el);
    if (!found) return null;
    const { shown, trigger } = found;
    for (let i = overLog.length - 1; i >= 0; i -= 1) {
      const o = overLog[i].el;
      if (!o.isConnected || shown.contains(o) || !(o === trigger || trigger.contains(o))) continue;
      const aimed = aimOf(o);
      return trigger.contains(aimed) && !shown.contains(aimed) ? aimed : o;
    }
    return trigger;
  };

  // A press is reported once it reaches the document. One stopped before it (by a listener
  // on the window that stops it, as a client's hit-target check does before it retries the
  // click elsewhere) never reached the page: it is reported as such once its dispatch is over.
  const presses = new WeakMap();
  addEventListener(
    'pointerdown',
    (e) => {
      if (!e.isTrusted) return;
      const el = /** @type {HTMLElement | null} */ ((e.composedPath && e.composedPath()[0]) || e.target);
      const aimed = el && el.nodeType === 1 ? aimOf(el) : null;
      let hover = null;
      try {
        hover = aimed ? hoverOf(aimed) : null;
      } catch (_) {
        hover = null;
      }
      /** @type {HitReport} */
      const o = { t: 'hit', at: now(), target: locate(aimed) };
      if (hover) o.hover = locate(hover);
      presses.set(e, o);
      setTimeout(() => {
        if (!presses.has(e)) return;
        presses.delete(e);
        report({ ...o, blocked: true });
      }, 0);
    },
    true,
  );
  document.addEventListener(
    'pointerdown',
    (e) => {
      const o = presses.get(e);
      if (!o) return;
      presses.delete(e);
      report(o);
    },
    true,
  );

  // ---- Choices ---------------------------------------------------------------------------------
  // A <select> or a file input changed (set by script, as Playwright and the browser MCP servers
  // set them, or by the keyboard): its locator, and for a select the labels of the chosen
  // options (page text), unless the field is a sensitive one. Never a value, never a file name.
  const MAX_OPTIONS = 16;
  /** @param {HTMLSelectElement} sel */
  const chosen = (sel) => {
    const labels = Array.from(sel.selectedOptions || []).map((o) => norm(o.label));
    if (labels.length === 0 || labels.length > MAX_OPTIONS) return null;
    const all = Array.from(sel.options || []).map((o) => norm(o.label));
    /** @param {string} l */
    const once = (l) => l && l.length <= NAME_CHARS && all.filter((x) => x === l).length === 1;
    return labels.every(once) ? labels : null;
  };
  /** @param {Control} el */
  const sensitiveChoice = (el) => {
    const k = (() => {
      try {
        return classify(el, 'SELECT');
      } catch (_) {
        return 'unknown';
      }
    })();
    return SENSITIVE.has(k) || k === 'unknown';
  };
  addEventListener(
    'change',
    (e) => {
      const el = /** @type {HTMLElement | null} */ ((e.composedPath && e.composedPath()[0]) || e.target);
      if (!el || !el.tagName) return;
      if (el.tagName === 'SELECT') {
        const secret = sensitiveChoice(el);
        const target = secret ? { why: 'sensitive-choice' } : locate(el);
        report({ t: 'chose', at: now(), target, options: secret ? null : chosen(/** @type {HTMLSelectElement} */ (el)) });
      } else if (el.tagName === 'INPUT' && inputType(el) === 'file') {
        report({ t: 'files', at: now(), target: locate(el), count: (/** @type {HTMLInputElement} */ (el).files || []).length });
      }
    },
    true,
  );

  // Segments of trusted insertions, oldest first; `open` is the one still being typed into.
  // Each has an id of its own across documents and frames (the relay forgets the segments a
  // reading took from a document's handover by them).
  /** @type {Segment[]} */
  const log = [];
  /** @type {Segment | null} */
  let open = null;
  const SEGMENT_IDS = `${installedAt}.${Math.random().toString(36).slice(2, 8)}`;
  let segments = 0;
  // Focus changes, oldest first: { el, t, via } where `via` is a field focus bounced off.
  /** @type {State['focusLog']} */
  const focusLog = [];
  /** @type {State} */
  const state = { log, focusLog, installedAt };

  // A field that became sensitive keeps nothing of what was typed into it.
  /**
   * @param {Field} el
   * @param {string} kind
   */
  const scrub = (el, kind) => {
    for (const s of log) {
      if (s.el === el && !SENSITIVE.has(s.kind)) {
        s.kind = kind;
        s.data = '';
        s.before = null;
      }
    }
  };

  // The field whose focus, focusin or keydown event is being dispatched: focus that moves on
  // before the page's own handlers of that event have returned was bounced off it (a field
  // that hands focus on as it gets it, or on the first key typed into it). A listener added to
  // the field while the event is still on its way runs after the page's own.
  /** @type {HTMLElement | null} */
  let dispatching = null;
  /**
   * @param {string} type
   * @returns {(e: Event) => void}
   */
  const arriving = (type) => (e) => {
    const el = /** @type {HTMLElement | null} */ ((e.composedPath && e.composedPath()[0]) || e.target);
    if (!el || !el.tagName) return;
    if (type === 'keydown' && !e.isTrusted) return;
    const via =
      type !== 'keydown' && dispatching && dispatching !== el && editable(dispatching)
        ? dispatching
        : null;
    dispatching = el;
    const done = () => {
      if (dispatching === el) dispatching = null;
    };
    try {
      el.addEventListener(type, done, { once: true });
      // A page that stops the event before it reaches the field: over with the task.
      setTimeout(done, 0);
    } catch (_) {
      done();
    }
    if (type === 'keydown') {
      lastKey = { el, t: now() };
      return;
    }
    if (type === 'focus' || via) {
      focusLog.push({ el, t: now(), via });
      if (focusLog.length > FOCUS_LOG) focusLog.shift();
    }
  };
  // The target of the last trusted keydown: a key pressed in one field whose text goes into
  // another was handed on by the page (focus moved in the keydown's handlers). Programmatic
  // focus in a page without window focus fires no focus event, so the focus log alone misses it.
  // Each key counts once: its insertion or its keyup consumes it.
  /** @type {{el: HTMLElement, t: number} | null} */
  let lastKey = null;
  addEventListener('keyup', () => { lastKey = null; }, true);
  /**
   * @param {HTMLElement} el
   * @param {number} t
   */
  const handedOn = (el, t) => {
    const key = lastKey;
    lastKey = null;
    return key && key.el !== el && editable(key.el) && t - key.t < KEY_TO_INPUT ? key.el : null;
  };
  addEventListener('focus', arriving('focus'), true);
  addEventListener('focusin', arriving('focusin'), true);
  addEventListener('keydown', arriving('keydown'), true);

  // The caret or selection of contenteditable `el`, as offsets into its text (`textContent`
  // counts the same text nodes a range does); `null` when it is not inside `el`.
  /**
   * @param {HTMLElement} el
   * @returns {[number, number] | null}
   */
  const caretIn = (el) => {
    try {
      // A document or a shadow root (Chromium's has getSelection too).
      const root = /** @type {Document} */ (el.getRootNode ? el.getRootNode() : document);
      const s = (root.getSelection && root.getSelection()) || el.ownerDocument.getSelection();
      if (!s || s.rangeCount === 0) return null;
      const r = s.getRangeAt(0);
      if (!el.contains(r.startContainer) || !el.contains(r.endContainer)) return null;
      /**
       * @param {Node} node
       * @param {number} offset
       */
      const upTo = (node, offset) => {
        const p = el.ownerDocument.createRange();
        p.selectNodeContents(el);
        p.setEnd(node, offset);
        return p.toString().length;
      };
      return [upTo(r.startContainer, r.startOffset), upTo(r.endContainer, r.endOffset)];
    } catch (_) {
      return null;
    }
  };

  // When each field last got trusted input (typing, deleting): a change after it may be the
  // client's, not the page's.
  const lastInput = new WeakMap();
  addEventListener(
    'beforeinput',
    (e) => {
      if (!e.isTrusted) return;
      const type = String(e.inputType || '');
      // A trusted insertion always has an element.
      const el = /** @type {HTMLElement} */ ((e.composedPath && e.composedPath()[0]) || e.target);
      if (el && typeof el === 'object') lastInput.set(el, now());
      if (!type.startsWith('insert') || type === 'insertLineBreak' || type === 'insertParagraph') {
        open = null;
        return;
      }
      let data = e.data;
      if (data == null && e.dataTransfer) data = e.dataTransfer.getData('text/plain');
      if (!data) return;
      const t = now();
      const via = handedOn(el, t);
      const kind = kindOf(el);
      // Programmatic focus in a page without window focus fires no focusin: say it now.
      if (el !== lastFocusEl || kind !== lastFocusKind) reportFocus();
      const secret = SENSITIVE.has(kind);
      if (secret) scrub(el, kind);
      if (!open || open.done || open.el !== el || open.kind !== kind || t - open.t1 > SEGMENT_GAP) {
        // Typing that goes on in the element of the segment still open (after a pause) is
        // reported as such: the relay takes it for a step only when no fresh report fits.
        const continued = !!open && !open.done && open.el === el;
        const v = secret ? null : valueOf(el);
        const before = v != null && v.length <= MAX_BEFORE ? v : null;
        /** @type {[number, number] | null} */
        let sel = null;
        if (!secret) sel = el.isContentEditable ? caretIn(el) : selection(el);
        segments += 1;
        const id = `${SEGMENT_IDS}/${segments}`;
        // `marks`: when each insertion came and where its text ends in `data` (a reading takes
        // the part of a segment its window covers); `taken`: what readings took of it so far.
        open = { id, el, kind, t0: t, t1: t, before, sel, data: '', marks: [], taken: 0, count: 0, cut: false, done: false, owner: state, via };
        // Where this typing went, as it was before the first character landed.
        /** @type {TypedReport} */
        const o = { t: 'typed', at: t, target: locate(el) };
        if (continued) o.continued = true;
        report(o);
        log.push(open);
        if (log.length > MAX_SEGMENTS) /** @type {Segment} */ (log.shift()).done = true;
      }
      open.t1 = t;
      open.count += chars(data);
      if (secret) return;
      if (open.data.length + data.length <= MAX_DATA) {
        open.data += data;
        if (open.marks) open.marks.push([t, open.data.length]);
      } else {
        open.cut = true;
        open.marks = null;
      }
    },
    true,
  );

  // A field whose type changes (to password after a few characters, back to text to reveal
  // it) is classified again at once: once sensitive, it stays so.
  try {
    new MutationObserver((records) => {
      for (const r of records) {
        const el = /** @type {HTMLElement} */ (r.target);
        if (!el || (el.tagName !== 'INPUT' && el.tagName !== 'TEXTAREA')) continue;
        const kind = kindOf(el);
        if (SENSITIVE.has(kind)) scrub(el, kind);
        if (el === deepActive(document)) reportFocus();
      }
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ['type', 'autocomplete', 'name', 'aria-label'] });
  } catch (_) {
    // No document element yet to observe: focus and insertions still classify.
  }

  /**
   * @param {string} small
   * @param {string} big
   */
  const isSubsequence = (small, big) => {
    let i = 0;
    for (const c of big) if (i < small.length && small[i] === c) i += 1;
    return i === small.length;
  };
  // The middle of `after` that replaced the middle of `before`, and what follows it.
  /**
   * @param {string} before
   * @param {string} after
   */
  const diff = (before, after) => {
    let p = 0;
    while (p < before.length && p < after.length && before[p] === after[p]) p += 1;
    let s = 0;
    while (s < before.length - p && s < after.length - p && before[before.length - 1 - s] === after[after.length - 1 - s]) s += 1;
    return { removed: before.slice(p, before.length - s), inserted: after.slice(p, after.length - s), rest: after.slice(after.length - s) };
  };

  // The verdict for one element that received all of `literal`, starting with segment `first`;
  // `after` is its value right after (before the next typing into it), or its value now. Where
  // the text went counts, not only that the field grew by it: typing at a caret that has the
  // field's own text after it went in before that text (a programmatic focus leaves the caret at
  // the start), which is not what typing meant to continue it would make.
  /**
   * @param {Segment} first
   * @param {string} literal
   * @param {string | null} after
   * @returns {Answer}
   */
  const judge = (first, literal, after) => {
    const n = chars(literal);
    const el = first.el;
    const kind = first.kind;
    if (SENSITIVE.has(kind)) return { reason: 'sensitive-field', kind, expected: n };
    if (!el.isConnected) return { reason: 'detached', kind, expected: n };
    const before = first.before;
    if (before == null || after == null) return { reason: 'rich-text', kind, expected: n };
    const grew = chars(after) - chars(before);
    /** @param {string} reason */
    const out = (reason) => ({ reason, kind, expected: n, grew });
    // Typed in before `following` characters of the field's own text.
    /** @param {number} following */
    const misplaced = (following) => ({ ...out('misplaced'), following });
    const sel = first.sel;
    const rich = !!el.isContentEditable;
    if (sel) {
      const head = before.slice(0, sel[0]);
      const tail = before.slice(sel[1]);
      if (after === head + literal + tail) {
        if (after === before) return out('same-text');
        return sel[0] === sel[1] && tail !== '' ? misplaced(chars(tail)) : out('landed');
      }
      // What replaced the selection, when the rest of the field is as it was: a part of the
      // text (a `maxlength` cut it, the page dropped characters).
      if (after !== before && after.startsWith(head) && after.endsWith(tail) && after.length >= head.length + tail.length) {
        const put = after.slice(head.length, after.length - tail.length);
        if (chars(put) < n && isSubsequence(put, literal)) return out('dropped-characters');
      }
    } else {
      // Where the caret was is not known: appended to the field's text, or the whole of it.
      if (after === before + literal || (after === literal && (!rich || before === ''))) {
        return out(after === before ? 'same-text' : 'landed');
      }
      if (before !== '' && after === literal + before) return misplaced(chars(before));
    }
    if (after === before) return out(before.includes(literal) ? 'already-held' : 'dropped-characters');
    const d = diff(before, after);
    if (rich) {
      if (d.removed === '' && chars(d.inserted) < n && isSubsequence(d.inserted, literal)) return out('dropped-characters');
      // All of it went in, somewhere other than the caret said: after the field's text (as
      // continuing it would), or before some of it.
      if (d.removed === '' && d.inserted === literal) {
        const following = chars(d.rest);
        return following === 0 ? out('landed') : misplaced(following);
      }
      return out('rich-text');
    }
    const selected = sel ? before.slice(sel[0], sel[1]) : null;
    const replacedWhatWasSelected = d.removed === '' || d.removed === selected || selected === null;
    if (replacedWhatWasSelected && chars(d.inserted) < n && isSubsequence(d.inserted, literal)) {
      return out('dropped-characters');
    }
    return out('rewritten');
  };

  // Segments that got their reading leave their log (one of a left document is only marked:
  // the relay forgets it when told, by the ids the reading took); a view of part of a segment
  // (`viewOf`) leaves the rest for the next reading (`id@end` tells the relay how much).
  /** @type {string[]} */
  let took = [];
  /** @param {any[]} views segments, or views of them (`viewOf`) */
  const settle = (views) => {
    for (const v of views) {
      const s = v.seg || v;
      if (v.seg && v.end < s.data.length) {
        s.taken = v.end;
        took.push(`${s.id}@${v.end}`);
        continue;
      }
      s.done = true;
      took.push(s.id);
      if (!s.owner) continue;
      const l = s.owner.log;
      const i = l.indexOf(s);
      if (i !== -1) l.splice(i, 1);
      if (open === s) open = null;
    }
  };

  // This frame's state and that of same-origin frames below it (their agents run in this same
  // world, so their logs are readable here).
  const states = () => {
    const out = [state];
    /**
     * @param {Document} doc
     * @param {number} depth
     */
    const walk = (doc, depth) => {
      if (depth > 3 || out.length > 16) return;
      /** @type {HTMLIFrameElement[]} */
      let frames = [];
      try {
        frames = /** @type {HTMLIFrameElement[]} */ (Array.from(doc.querySelectorAll('iframe,frame')));
      } catch (_) {
        return;
      }
      for (const f of frames) {
        try {
          const a = f.contentWindow && f.contentWindow.__cdpRelayAgent;
          if (!a || !a.state) continue;
          out.push(a.state());
          walk(/** @type {Document} */ (f.contentDocument), depth + 1);
        } catch (_) {
          // Cross-origin: nothing of it is readable.
        }
      }
    };
    walk(document, 0);
    return out;
  };

  // How much earlier than the relay's stamp of a burst's first keystroke an insertion may be
  // seen (the relay stamps a copy after forwarding it, on a busy machine a while after). The
  // browser answers a keystroke only after the page saw it (measured: 0.4–1.2 ms after), and
  // the relay stamps the answer after forwarding it, so nothing of the burst comes later than
  // its last answer: a millisecond of slack, and the next step typed at once stays out.
  const EARLY = 250;
  const LATE = 1;
  // The burst's time window on this clock. On one machine the clocks agree; a browser far off
  // (more than a second: another host) is shifted by what the call took to arrive.
  /**
   * @param {BurstWindow} win
   * @param {number} entered
   * @returns {ReadWindow}
   */
  const windowOf = (win, entered) => {
    const skew = entered - Number(win.now);
    const shift = Math.abs(skew) > 1000 ? skew : 0;
    const start = Number(win.start) + shift;
    const end = Number(win.end) + shift;
    return { start, end, lo: start - EARLY, hi: end + LATE };
  };

  // A segment as a reading of window `w` sees it: what no earlier reading took of it, up to its
  // last insertion in the window (`whole`: all of it). Typing that ran on into the same field
  // after a step ended (a client pressing key after key, each key a step of its own, faster
  // than SEGMENT_GAP) belongs to the next step's reading. `null`: nothing left of it.
  /**
   * @param {Segment} g
   * @param {ReadWindow} w
   * @returns {View | null}
   */
  const viewOf = (g, w) => {
    const from = g.taken || 0;
    const m = g.marks;
    if (!m || m.length === 0) return from === 0 ? { ...g, seg: g, whole: true, end: g.data.length } : null;
    let i = 0;
    while (i < m.length && m[i][1] <= from) i += 1;
    if (i === m.length) return null;
    let j = i;
    while (j + 1 < m.length && m[j + 1][0] <= w.hi) j += 1;
    const end = m[j][1];
    const whole = from === 0 && end === g.data.length;
    return { ...g, seg: g, t0: m[i][0], t1: m[j][0], data: g.data.slice(from, end), whole, end };
  };

  // The segments of every frame typed into within `w`, in time order (`segs`), the views of
  // them (`inWin`, those starting in the window), and whether typing that began before it ran
  // on into it. `left`: the document before this one, as it was left.
  /**
   * @param {ReadWindow} w
   * @param {State | null} left
   */
  const within = (w, left) => {
    const all = left ? states().concat([left]) : states();
    const segs = all
      .flatMap((s) => s.log.filter((g) => !g.done))
      .sort((a, b) => a.t0 - b.t0);
    const views = /** @type {View[]} */ (segs.map((g) => viewOf(g, w)).filter((v) => v));
    return {
      all,
      segs,
      inWin: views.filter((g) => g.t0 >= w.lo && g.t0 <= w.hi),
      straddle: views.some((g) => g.t0 < w.lo && g.t1 >= w.lo),
    };
  };

  // When focus last reached segment `g`'s field before it was typed into, if it bounced off
  // another field on the way (`null` otherwise).
  /**
   * @param {State} st
   * @param {Segment} g
   */
  const bounceOf = (st, g) => {
    const fl = st.focusLog;
    for (let i = fl.length - 1; i >= 0; i -= 1) {
      const f = fl[i];
      if (f.t > g.t0) continue;
      return f.el === g.el && f.via ? f.t : null;
    }
    return null;
  };
  // Did focus reach `first`'s field by bouncing off another field shortly before the burst?
  /**
   * @param {Segment} first
   * @param {ReadWindow} w
   */
  const bounced = (first, w) => {
    const at = first.owner ? bounceOf(first.owner, first) : first.bouncedAt;
    return at != null && at >= w.lo - 1000;
  };

  // ---- A document left before its typing was read ------------------------------------------
  // A form submitted with Enter, or a button that navigates while readings still wait their
  // turn, replaces the document before the relay asks about the typing in it; its segments
  // would go with this world. When a navigation away from the document starts (`beforeunload`:
  // the last moment the binding still reaches the relay — a binding called in `pagehide` or
  // `unload` is never delivered), the agent hands the relay (over its binding, into the relay's
  // memory only) what a reading needs: the unread segments of the last SEAL_AGE ms and their
  // fields as they are at that moment — a sensitive field's count only. The relay passes it back
  // with the readings asked of the next document's agent, which judges it the same way, and
  // forgets it within seconds. A reading waiting to read a field again is answered at once.
  const SEAL_AGE = 10000;
  const SEAL_CHARS = 262144;
  const sealed = () => {
    const t = now();
    const fields = [];
    const index = new Map();
    const segs = [];
    let budget = SEAL_CHARS;
    const recent = states()
      .flatMap((st) => st.log.filter((g) => !g.done && g.t1 >= t - SEAL_AGE).map((g) => /** @type {[State, Segment]} */ ([st, g])))
      .sort((a, b) => b[1].t0 - a[1].t0);
    // Newest first, so the budget keeps the typing most likely still to be read.
    for (const [st, g] of recent) {
      const secret = SENSITIVE.has(g.kind);
      let f = index.get(g.el);
      /** @type {string | null} */
      let value = null;
      if (f === undefined && !secret) {
        const v = valueOf(g.el);
        value = v != null && v.length <= MAX_BEFORE ? v : null;
      }
      const cost = (secret ? 0 : g.data.length + (g.before ? g.before.length : 0)) + (value ? value.length : 0) + 64;
      if (cost > budget) break;
      budget -= cost;
      if (f === undefined) {
        f = fields.length;
        index.set(g.el, f);
        fields.push({ connected: !!g.el.isConnected, rich: !!g.el.isContentEditable, value });
      }
      segs.push({
        id: g.id,
        field: f,
        kind: g.kind,
        t0: g.t0,
        t1: g.t1,
        count: g.count,
        cut: g.cut,
        data: secret ? '' : g.data,
        before: secret ? null : g.before,
        sel: secret ? null : g.sel,
        marks: secret ? null : g.marks,
        taken: g.taken || 0,
        via: !!g.via,
        bouncedAt: bounceOf(st, g),
      });
    }
    segs.reverse();
    return { installedAt, origin: String(location.origin), fields, segs };
  };
  // Readings waiting to read a field again: each resolves at once when called.
  /** @type {Set<() => void>} */
  const rechecks = new Set();
  addEventListener(
    'beforeunload',
    () => {
      for (const now of Array.from(rechecks)) now();
      if (!isTop) return;
      try {
        const s = sealed();
        if (s.segs.length > 0) send({ t: 'sealed', ...s });
      } catch (_) {
        // Nothing to hand over: the readings say the page left the document.
      }
    },
    true,
  );
  // The sealed document the relay passed back, as a state: segments on stand-ins for their
  // fields, which answer as the fields did when the document was left. A segment read already
  // is `null`.
  /**
   * @param {Sealed | null} left
   * @returns {State | null}
   */
  const unseal = (left) => {
    if (!left || typeof left !== 'object' || !Array.isArray(left.segs)) return null;
    // This very document, whose navigation did not happen (a 204, a download): its own
    // segments are read live.
    if (Number(left.installedAt) === installedAt) return null;
    const fields = (Array.isArray(left.fields) ? left.fields : []).map((f) => /** @type {SealedField} */ ({
      sealed: true,
      isConnected: !!(f && f.connected),
      isContentEditable: !!(f && f.rich),
      value: f && typeof f.value === 'string' ? f.value : null,
    }));
    /** @type {Segment[]} */
    const log = [];
    left.segs.forEach((g) => {
      const el = g && fields[g.field];
      if (!el) return;
      log.push({
        id: String(g.id),
        el,
        kind: String(g.kind),
        t0: Number(g.t0),
        t1: Number(g.t1),
        before: typeof g.before === 'string' ? g.before : null,
        sel: Array.isArray(g.sel) ? g.sel : null,
        marks: Array.isArray(g.marks) ? g.marks : null,
        taken: Number(g.taken) || 0,
        data: String(g.data || ''),
        count: Number(g.count) || 0,
        cut: !!g.cut,
        done: false,
        owner: null,
        via: g.via ? true : null,
        bouncedAt: typeof g.bouncedAt === 'number' ? g.bouncedAt : null,
      });
    });
    return { log, focusLog: [], installedAt: Number(left.installedAt) || 0 };
  };
  // The answer of a reading, with the segments it took (a left document's handover may hold
  // them too: the relay forgets them there).
  /**
   * @param {Answer} answer
   * @returns {Answer}
   */
  const withTook = (answer) => {
    const ids = took;
    took = [];
    return ids.length > 0 ? { ...answer, took: ids } : answer;
  };

  // A field the page changes after the text landed (emptied 400 ms later, say) is read again
  // this long after the last insertion. The page's own timers set at the insertion and due
  // sooner run first (one event loop), so any change the page made within this time is seen.
  const RECHECK = 500;

  // Which of the segments in window `w` spell `literal`, and the verdict (the reading itself,
  // synchronous); `again`: what to read again for a later change.
  /**
   * @param {string} literal
   * @param {ReadWindow} w
   * @param {State | null} left
   * @returns {{answer: Answer, again?: Recheck | null}}
   */
  const reading = (literal, w, left) => {
    const n = chars(literal);
    const { all, segs, inWin, straddle } = within(w, left);
    const secret = inWin.filter((s) => SENSITIVE.has(s.kind));
    if (secret.length > 0) {
      // A sensitive field keeps no text to match: typing into one in this window stands for it.
      settle(secret);
      return { answer: { reason: 'sensitive-field', kind: secret[0].kind, expected: n } };
    }
    // Every run of consecutive segments in the window that spells the literal, and the
    // longest that spells a part of it.
    const found = [];
    /** @type {View[]} */
    let partial = [];
    let partialText = '';
    for (let i = 0; i < inWin.length; i += 1) {
      let acc = '';
      const used = [];
      for (let j = i; j < inWin.length; j += 1) {
        const s = inWin[j];
        if (!s.data || s.cut || !literal.startsWith(acc + s.data)) break;
        acc += s.data;
        used.push(s);
        if (acc === literal) break;
      }
      if (acc === literal) found.push(used);
      else if (acc.length > partialText.length) {
        partial = used;
        partialText = acc;
      }
    }
    if (found.length > 1) {
      // The text reached the page more than once around this step (another client, another
      // path, the next step typing the same text at once). One that lies within the step's
      // own bounds, when only one does, is its; otherwise which was cannot be told.
      const core = found.filter((u) => u[0].t0 >= w.start && u[u.length - 1].t1 <= w.end);
      if (core.length !== 1) {
        settle(found[0]);
        return { answer: { reason: 'ambiguous', kind: found[0][0].kind, expected: n } };
      }
      found.splice(0, found.length, core[0]);
    }
    if (found.length === 0) {
      const other = inWin.some((s) => !partial.includes(s));
      if (straddle || other) {
        // Typing from before this step ran on into it, or other text arrived with it.
        settle(partial);
        const g = partial[0] || inWin[0];
        return { answer: { reason: 'interleaved', kind: g ? g.kind : undefined, expected: n } };
      }
      if (partial.length === 0) {
        // Nothing reached a field: no kind to say (what has focus now is a guess, and a
        // reading never guesses a burst's field less sensitive than it was taken for).
        if (agent.focusKind() === 'frame') return { answer: { reason: 'frame', kind: 'frame', expected: n } };
        if (all.some((s) => s.installedAt > w.lo - 50)) {
          return { answer: { reason: 'not-installed', expected: n } };
        }
        return { answer: { reason: 'no-input', expected: n, received: 0 } };
      }
      settle(partial);
      return { answer: { reason: 'no-input', kind: partial[0].kind, expected: n, received: chars(partialText) } };
    }
    const used = found[0];
    const first = used[0];
    settle(used);
    const fields = new Set(used.map((s) => s.el)).size;
    if (fields > 1) return { answer: { reason: 'focus-moved', kind: first.kind, expected: n, fields } };
    if (first.via || bounced(first, w)) {
      // The field focused for this step handed focus on at once: the text went elsewhere.
      return { answer: { reason: 'bounced', kind: first.kind, expected: n } };
    }
    const last = used[used.length - 1];
    const seg = last.seg;
    const next = segs.find((s) => s.el === first.el && s.t0 > seg.t1 && !used.some((u) => u.seg === s));
    const after = next && next.before != null ? next.before : valueOf(first.el);
    let answer;
    if (used.every((u) => u.whole)) {
      answer = judge(first, literal, after);
    } else if (used.length === 1) {
      // Part of what was typed into the field at a stretch, the rest by the steps around it:
      // it landed where the whole stretch did.
      const whole = judge(seg, seg.data, after);
      answer = whole.reason === 'landed'
        ? { ...whole, expected: n, grew: n }
        : { reason: 'interleaved', kind: first.kind, expected: n };
    } else {
      answer = { reason: 'interleaved', kind: first.kind, expected: n };
    }
    // Read again later only what is still the field's own value and can still change.
    // Compared with what the field held before the step's typing (as `judge` did): the
    // last segment's `before` already holds the first ones' text, and is null past MAX_BEFORE.
    // Only a `landed` reading is read again, and `judge` says so only when it had that value.
    const again = !next && first.owner ? { el: first.el, before: /** @type {string} */ (first.before), after, t: last.t1 } : null;
    return { answer, again };
  };

  // `landed` readings waiting to be read again, by token: the relay asks for each in a call of
  // its own (`recheck`), so the page's next reading need not wait for it. Dropped oldest first
  // past MAX_RECHECKS, and by the call that reads them.
  const MAX_RECHECKS = 64;
  /** @type {Map<number, Recheck & {literal: string, answer: Answer}>} */
  const pendingRechecks = new Map();
  let recheckTokens = 0;
  // Keeps `r`'s field to read again; the answer with the token the relay asks with.
  /**
   * @param {{answer: Answer, again?: Recheck | null}} r
   * @param {string} literal
   */
  const toReadAgain = (r, literal) => {
    const a = r.again;
    if (!a || r.answer.reason !== 'landed') return r.answer;
    recheckTokens += 1;
    pendingRechecks.set(recheckTokens, { ...a, literal, answer: r.answer });
    if (pendingRechecks.size > MAX_RECHECKS) pendingRechecks.delete(/** @type {number} */ (pendingRechecks.keys().next().value));
    return { ...r.answer, recheck: recheckTokens };
  };
  // The field of a `landed` reading read again RECHECK ms after the last insertion: the page
  // may have emptied it (or rewritten it) since.
  /**
   * @param {number} token
   * @returns {Promise<Answer | null>}
   */
  const readAgain = async (token) => {
    const a = pendingRechecks.get(token);
    if (!a) return null;
    const wait = Math.min(a.t + RECHECK - now(), RECHECK);
    if (wait > 0) {
      // Read sooner if the page starts leaving the document: what it holds then stays.
      await /** @type {Promise<void>} */ (new Promise((res) => {
        /** @type {number | null} */
        let timer = null;
        const done = () => {
          rechecks.delete(done);
          clearTimeout(/** @type {number} */ (timer));
          res();
        };
        timer = setTimeout(done, wait);
        rechecks.add(done);
      }));
    }
    pendingRechecks.delete(token);
    // Gone from the page, or given input since (the next step's typing or deleting): what the
    // field holds now says nothing of what the page did.
    if (!a.el.isConnected || (lastInput.get(a.el) || 0) > a.t) return a.answer;
    const v = valueOf(a.el);
    if (v == null || v === a.after || v.includes(a.literal)) return a.answer;
    const grew = chars(v) - chars(a.before);
    const cleared = v === '' || v === a.before;
    return { ...a.answer, reason: cleared ? 'cleared-by-page' : 'rewritten', grew, later: true };
  };

  // ---- Fields set by script ------------------------------------------------------------------
  // Elements that got an `input` or `change` event no user made (a server's fill by script
  // dispatches them after setting the value), newest last: the element and the time only.
  const SCRIPTED = 64;
  const SCAN = 500;
  /** @type {Array<{el: Element, t: number}>} */
  const scripted = [];
  /** @param {Event} e */
  const setByScript = (e) => {
    if (e.isTrusted) return;
    const el = /** @type {HTMLElement | null} */ ((e.composedPath && e.composedPath()[0]) || e.target);
    if (!el || !el.tagName) return;
    scripted.push({ el, t: now() });
    if (scripted.length > SCRIPTED) scripted.shift();
  };
  addEventListener('input', setByScript, true);
  addEventListener('change', setByScript, true);

  // What kind of control an element is, in words the relay knows.
  const CONTROLS = new Set(['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range', 'number']);
  // Held in constants: the relay's source test reads a quoted word after a return as a kind.
  /** @type {Record<string, string>} */
  const CONTROL_TAGS = { SELECT: 'select', TEXTAREA: 'textarea' };
  const EDITABLE = 'editable';
  const PLAIN_INPUT = 'input';
  /** @param {Control} el */
  const controlOf = (el) => {
    if (CONTROL_TAGS[el.tagName]) return CONTROL_TAGS[el.tagName];
    if (el.isContentEditable) return EDITABLE;
    const type = String(el.type || 'text').toLowerCase();
    return CONTROLS.has(type) ? type : PLAIN_INPUT;
  };
  // Every spelling of an element's value a fill may have meant: a select's chosen options by
  // value and by label, else the value (or a rich field's text).
  /**
   * @param {Control} el
   * @returns {string[]}
   */
  const spellings = (el) => {
    if (el.tagName === 'SELECT') {
      return Array.from(el.selectedOptions || []).flatMap((o) => [String(o.value), String(o.label || o.text || '').trim()]);
    }
    const v = valueOf(el);
    return v == null ? [] : [v];
  };
  /** @param {Control} el */
  const lengthOf = (el) => {
    if (el.tagName === 'SELECT') {
      const o = (el.selectedOptions || [])[0];
      return o ? chars(String(o.label || o.text || '').trim()) : 0;
    }
    const v = valueOf(el);
    return v == null ? 0 : chars(v);
  };
  // This frame's document and those of the same-origin frames below it, and whether a frame
  // below cannot be read.
  const documents = () => {
    const out = [document];
    let unreadable = false;
    /**
     * @param {Document} doc
     * @param {number} depth
     */
    const walk = (doc, depth) => {
      if (depth > 3 || out.length > 16) return;
      /** @type {HTMLIFrameElement[]} */
      let frames = [];
      try {
        frames = /** @type {HTMLIFrameElement[]} */ (Array.from(doc.querySelectorAll('iframe,frame')));
      } catch (_) {
        return;
      }
      for (const f of frames) {
        try {
          const d = f.contentDocument;
          if (!d) {
            unreadable = true;
            continue;
          }
          out.push(d);
          walk(d, depth + 1);
        } catch (_) {
          unreadable = true;
        }
      }
    };
    walk(document, 0);
    return { docs: out, unreadable };
  };
  /**
   * @param {Document[]} docs
   * @returns {Array<{el: Element, t: number}>}
   */
  const scriptedIn = (docs) => {
    const all = [];
    for (const d of docs) {
      try {
        const a = d.defaultView && d.defaultView.__cdpRelayAgent;
        if (a && a.scripted) all.push(...a.scripted());
      } catch (_) {
        // Not readable: said by `documents`.
      }
    }
    return all.sort((a, b) => a.t - b.t);
  };

  /** @type {Agent} */
  const agent = {
    // This frame's fields set by script, for the top frame's agent.
    scripted() {
      return scripted;
    },

    // Which fields were set by script within `win` ({start, end, now}: wall-clock ms) and what
    // they hold against `texts` (what the call meant to type, sent in memory only); and which
    // texts a field holds now. Answers kinds, lengths and indices into `texts` only; a field
    // classified sensitive is compared by length only.
    readFields(texts, win) {
      const w = windowOf(win, now());
      const { docs, unreadable } = documents();
      const lengths = texts.map((t) => chars(String(t)));
      const seen = new Set();
      /** @type {Changed[]} */
      const changed = [];
      // From the call's own start: its begin is read before its request leaves, so nothing of
      // it comes earlier (no slack before, as a burst's stamp needs), and an earlier call's
      // fill just before stays out.
      const entries = scriptedIn(docs).filter((g) => g.t >= w.start && g.t <= w.hi);
      for (let i = entries.length - 1; i >= 0; i -= 1) {
        const el = entries[i].el;
        if (seen.has(el)) continue;
        seen.add(el);
        const kind = kindOf(el);
        const sensitive = SENSITIVE.has(kind);
        const n = lengthOf(el);
        const values = sensitive ? [] : spellings(el);
        const equals = texts.flatMap((t, j) => (values.includes(String(t)) ? [j] : []));
        const sameLength = lengths.flatMap((m, j) => (m === n ? [j] : []));
        changed.unshift({ kind, control: controlOf(el), chars: n, equals, sensitive, sameLength, connected: el.isConnected });
      }
      // Texts no field set by script holds: does a field hold it now anyway?
      const held = [];
      const maybe = [];
      const left = texts.map((_, j) => j).filter((j) => !changed.some((c) => c.equals.includes(j)));
      if (left.length > 0) {
        let scanned = 0;
        for (const d of docs) {
          let fields = [];
          try {
            fields = Array.from(d.querySelectorAll('input,textarea,select,[contenteditable]'));
          } catch (_) {
            continue;
          }
          for (const el of fields) {
            scanned += 1;
            if (scanned > SCAN) break;
            const sensitive = SENSITIVE.has(kindOf(el));
            const values = sensitive ? [] : spellings(el);
            const n = lengthOf(el);
            for (const j of left) {
              if (!sensitive && values.includes(String(texts[j]))) held.push(j);
              else if (sensitive && n === lengths[j]) maybe.push(j);
            }
          }
        }
      }
      return { changed, held: [...new Set(held)], maybe: [...new Set(maybe)], unreadable };
    },

    // This frame's segments and focus changes, for the top frame's agent.
    state() {
      return state;
    },

    // A child frame's report, sent from here.
    report(o) {
      report(o);
    },

    // The locator of `el` as a click on it would record it (tests read it).
    locate(el) {
      return locate(el && el.nodeType === 1 ? aimOf(el) : null);
    },

    // A frame below changed focus: report the page's focus again.
    refocus() {
      reportFocus();
    },

    // Reports the page's focus even if it did not change (its last report may be lost).
    announce() {
      lastFocus = null;
      reportFocus();
    },

    // The kind of field that has focus now (the capture veto's live check).
    focusKind() {
      try {
        return kindOf(deepActive(document));
      } catch (_) {
        return 'unknown';
      }
    },

    // What this agent would hand the relay if the page left the document now (tests read it).
    sealed() {
      return sealed();
    },

    // Which segments a burst of `n` characters typed into a field taken for a sensitive one
    // went to, within its window: by kind and count, never by content (the relay does not send
    // a credential back). `left`: the document before this one, as the relay holds it.
    uncompared(n, win, left) {
      const w = windowOf(win, now());
      took = [];
      const { inWin } = within(w, unseal(left));
      const secret = inWin.filter((s) => SENSITIVE.has(s.kind));
      if (secret.length > 0) {
        settle(secret);
        return withTook({ reason: 'sensitive-field', kind: secret[0].kind, expected: n });
      }
      // Consecutive segments into one ordinary field, `n` characters in all: not a sensitive
      // field after all. Left in place for a reading with the text.
      for (let i = 0; i < inWin.length; i += 1) {
        let total = 0;
        for (let j = i; j < inWin.length && inWin[j].el === inWin[i].el && total < n; j += 1) {
          total += inWin[j].count;
        }
        if (total === n) return { reason: 'not-compared', kind: inWin[i].kind, expected: n };
      }
      return { reason: 'sensitive-field', expected: n };
    },

    // Did `literal`, typed in the relay's window `win` ({start, end, now}: wall-clock ms), land
    // in the field it was meant for, and stay there? `left`: the document before this one, as
    // the relay holds it (typing into it is judged as that document was left).
    async verify(literal, win, left) {
      const w = windowOf(win, now());
      // Let the page's own input handlers and re-renders run first.
      await new Promise((r) => setTimeout(r, 30));
      // A frame for re-renders, but a hidden page's throttled frames do not hold the reading up.
      await Promise.race([
        /** @type {Promise<void>} */ (new Promise((r) => requestAnimationFrame(() => r()))),
        new Promise((r) => setTimeout(r, 200)),
      ]);
      took = [];
      return withTook(toReadAgain(reading(literal, w, unseal(left)), literal));
    },

    // The reading that answered `landed` with this token, RECHECK ms after its last insertion
    // (`null`: no such reading, or read already).
    async recheck(token) {
      return readAgain(Number(token));
    },
  };
  Object.defineProperty(globalThis, '__cdpRelayAgent', { value: agent });
  reportFocus();
})();
