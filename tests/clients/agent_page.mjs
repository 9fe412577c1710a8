// The relay's page agent (capture/src/direct/agent.js) on its own, with no relay: a headless
// Chromium launched here, the agent installed as the relay installs it (an isolated world on
// every new document, its binding only in that world, over a CDP session of its own), a page of
// fields and elements driven with Playwright's trusted input, and what the agent reports over
// its binding and answers to the relay's calls checked case by case: the verdicts for typed text
// (landed, dropped characters, misplaced, cleared by the page, put back by the page after a
// step typed as two segments, a sensitive field, nothing typed, a fill by script), the locators
// it picks (test id, role and exact name, label, placeholder, text, a frame path), the kinds of
// the fields that get focus, that nothing throws in the page, and that no report carries a
// typed text.
//
// Usage: node agent_page.mjs   (browser: $CDP_RELAY_BROWSER, else chromium on $PATH)
// Prints one line per failed check and a summary; exits 1 if any check failed. Run by
// scripts/test.sh before the Rust tests; takes a few seconds.
import { chromium } from 'playwright-core';
import { readFileSync, accessSync, constants } from 'node:fs';
import { createServer } from 'node:http';
import { isDeepStrictEqual, inspect } from 'node:util';
import { delimiter, join } from 'node:path';

const AGENT = new URL('../../capture/src/direct/agent.js', import.meta.url);
// As capture/src/direct/mod.rs names them.
const WORLD = 'cdp-relay-observer';
const BINDING = '__cdpRelayObserve';
// Every wait is bounded by this; the whole run by DEADLINE.
const WAIT_MS = 5000;
const DEADLINE_MS = 60000;
// Longer than agent.js's SEGMENT_GAP (100 ms): typing after it starts a new segment.
const SEGMENT_PAUSE_MS = 200;

// The browser the Rust tests use: $CDP_RELAY_BROWSER, else `chromium` on $PATH.
const browserPath = () => {
  if (process.env.CDP_RELAY_BROWSER) return process.env.CDP_RELAY_BROWSER;
  for (const dir of (process.env.PATH || '').split(delimiter)) {
    const exe = join(dir, 'chromium');
    try {
      accessSync(exe, constants.X_OK);
      return exe;
    } catch (_) {
      // Not here.
    }
  }
  throw new Error('no chromium on $PATH and no $CDP_RELAY_BROWSER: install Debian\'s chromium');
};

// ---- The pages -------------------------------------------------------------------------------
// Field names avoid the words the agent classifies by (pin, code, pass, …) unless a case means
// them.
const FIELDS = `<!doctype html><meta charset="utf-8"><title>agent page</title>
<form>
  <label>Plain <input id="plain"></label>
  <input id="short" maxlength="3" aria-label="Short">
  <input id="held" value="world" aria-label="Held">
  <input id="clears" aria-label="Clears">
  <input id="twice" value="abc" aria-label="Twice">
  <input id="scripted" aria-label="Scripted">
  <input id="email" type="email" aria-label="Email">
  <input id="pw" type="password" aria-label="Login">
  <input id="otp" autocomplete="one-time-code" aria-label="Box">
  <input id="otp2" aria-label="Verification code">
  <input id="card" autocomplete="cc-number" aria-label="Number">
  <label>Card number <input id="card2"></label>
</form>
<button data-testid="save-button">Save</button>
<button id="send">Send message</button>
<label>Birthday <input id="birthday" type="date"></label>
<textarea id="notes" placeholder="Your notes"></textarea>
<span id="terms">Terms apply</span>
<div><div class="css-1q2w3e"></div></div>
<iframe title="Help" src="/help"></iframe>
<iframe title="Payment" src="/pay"></iframe>`;
const HELP = '<!doctype html><meta charset="utf-8"><p>Help</p>';
const PAY = '<!doctype html><meta charset="utf-8"><button id="pay">Pay now</button>';
const PAGES = { '/': FIELDS, '/help': HELP, '/pay': PAY };

const serve = () =>
  new Promise((resolve, reject) => {
    const server = createServer((req, res) => {
      const body = PAGES[new URL(req.url, 'http://x').pathname];
      res.writeHead(body ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
      res.end(body || '');
    });
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });

// ---- Checks ----------------------------------------------------------------------------------
const failures = [];
let checks = 0;
// `actual` holds every key of `expected` with its value (other keys are not compared).
const check = (name, actual, expected) => {
  checks += 1;
  const got = actual && typeof actual === 'object' && !Array.isArray(actual)
    ? Object.fromEntries(Object.keys(expected).map((k) => [k, actual[k]]))
    : actual;
  if (!isDeepStrictEqual(got, expected)) {
    failures.push(`${name}: expected ${inspect(expected)}, got ${inspect(actual, { depth: 4 })}`);
  }
};
const within = async (what, poll) => {
  const end = Date.now() + WAIT_MS;
  for (;;) {
    const v = await poll();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

// ---- The agent, as the relay installs it -----------------------------------------------------
// Installs the agent on `page`'s CDP session; returns its reports (as parsed from the binding)
// and a function that calls the agent of the main frame's world.
const install = async (page) => {
  const cdp = await page.context().newCDPSession(page);
  const reports = [];
  // Exceptions thrown in the page's worlds (the agent's among them): a syntax error in the
  // agent, or one it throws at run time.
  const exceptions = [];
  cdp.on('Runtime.exceptionThrown', ({ exceptionDetails: d }) => {
    exceptions.push(d.exception?.description ?? d.text);
  });
  const worlds = new Map();
  cdp.on('Runtime.bindingCalled', (e) => {
    if (e.name === BINDING) reports.push({ raw: e.payload, ...JSON.parse(e.payload) });
  });
  cdp.on('Runtime.executionContextCreated', ({ context }) => {
    if (context.name === WORLD) worlds.set(context.auxData.frameId, context.id);
  });
  cdp.on('Runtime.executionContextDestroyed', (e) => {
    for (const [frame, id] of worlds) if (id === e.executionContextId) worlds.delete(frame);
  });
  await cdp.send('Runtime.addBinding', { name: BINDING, executionContextName: WORLD });
  await cdp.send('Page.enable');
  await cdp.send('Page.addScriptToEvaluateOnNewDocument', {
    source: readFileSync(AGENT, 'utf8'),
    worldName: WORLD,
    runImmediately: true,
  });
  await cdp.send('Runtime.enable');
  // `fn` runs in the agent's world of the main frame as the relay's calls do, `agent` its
  // argument list's first.
  const call = async (fn, ...args) => {
    const { frameTree } = await cdp.send('Page.getFrameTree');
    const contextId = await within('the agent\'s world', () => worlds.get(frameTree.frame.id));
    const r = await cdp.send('Runtime.callFunctionOn', {
      functionDeclaration: `function (...a) { return (${fn})(globalThis.__cdpRelayAgent, ...a); }`,
      executionContextId: contextId,
      arguments: args.map((value) => ({ value })),
      awaitPromise: true,
      returnByValue: true,
    });
    if (r.exceptionDetails) {
      throw new Error(`the agent threw: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    }
    return r.result.value;
  };
  return { reports, exceptions, call };
};

// ---- The cases -------------------------------------------------------------------------------
// Types `text` into `selector` (clicked first) and asks the agent for the verdict, as the relay
// does with its burst's window ({start, end, now}: wall-clock ms). `setup` runs in the page
// after the click, before the typing.
// `text` may be a list of parts typed with a pause between them (longer than the agent's
// segment gap: each part a segment of its own), all of one step.
const typeAndVerify = async (page, call, selector, text, setup) => {
  await page.click(selector);
  if (setup) await page.$eval(selector, setup);
  const parts = Array.isArray(text) ? text : [text];
  const start = Date.now();
  for (const [i, part] of parts.entries()) {
    if (i > 0) await new Promise((r) => setTimeout(r, SEGMENT_PAUSE_MS));
    await page.keyboard.type(part);
  }
  const end = Date.now();
  return call((a, literal, win) => a.verify(literal, win, null), parts.join(''), { start, end, now: Date.now() });
};

const verdicts = async (page, call, typed) => {
  typed.push('hello');
  const landed = await typeAndVerify(page, call, '#plain', 'hello');
  check('landed', landed, { reason: 'landed', kind: 'text', expected: 5, grew: 5 });
  check('landed: a recheck token', typeof landed.recheck, 'number');
  const still = await call((a, token) => a.recheck(token), landed.recheck);
  check('landed, read again', still, { reason: 'landed', grew: 5 });
  check('a token is read once', await call((a, token) => a.recheck(token), landed.recheck), null);

  typed.push('kayak');
  const dropped = await typeAndVerify(page, call, '#short', 'kayak');
  check('maxlength 3: dropped characters', dropped, { reason: 'dropped-characters', expected: 5, grew: 3 });

  // Typed at the start of the field's own text (the caret put there), not after it.
  typed.push('hello ');
  const misplaced = await typeAndVerify(page, call, '#held', 'hello ', (el) => el.setSelectionRange(0, 0));
  check('misplaced', misplaced, { reason: 'misplaced', expected: 6, grew: 6, following: 5 });

  // The page's own script empties the field after the reading and before the agent reads it
  // again (so the case does not race the reading's own wait).
  typed.push('vanish');
  const first = await typeAndVerify(page, call, '#clears', 'vanish');
  check('cleared: landed at first', first, { reason: 'landed', expected: 6 });
  await page.$eval('#clears', (el) => {
    el.value = '';
  });
  const cleared = await call((a, token) => a.recheck(token), first.recheck);
  check('cleared by the page', cleared, { reason: 'cleared-by-page', grew: 0, later: true });

  // One step typed as two segments, the page then putting back what the field held before
  // the step: cleared, compared with the value before the first segment (not the last's).
  // (Letters: a report's times are digits.)
  typed.push('xyzw');
  const two = await typeAndVerify(page, call, '#twice', ['xy', 'zw'], (el) => el.setSelectionRange(3, 3));
  check('two segments: landed', two, { reason: 'landed', expected: 4, grew: 4 });
  await page.$eval('#twice', (el) => {
    el.value = 'abc';
  });
  const restored = await call((a, token) => a.recheck(token), two.recheck);
  check('two segments: put back by the page', restored, { reason: 'cleared-by-page', grew: 0, later: true });

  typed.push('hunter2');
  const secret = await typeAndVerify(page, call, '#pw', 'hunter2');
  check('password: not compared', secret, { reason: 'sensitive-field', kind: 'password', expected: 7 });

  // A window no typing fell in.
  const t = Date.now();
  const none = await call((a, literal, win) => a.verify(literal, win, null), 'absent', { start: t, end: t, now: t });
  check('nothing typed', none, { reason: 'no-input', expected: 6, received: 0 });

  // A server's fill by script (value set, untrusted input event): which field, what it holds.
  const start = Date.now();
  await page.$eval('#scripted', (el) => {
    el.value = 'by script';
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
  const fields = await call((a, texts, win) => a.readFields(texts, win), ['by script', 'elsewhere'], {
    start,
    end: Date.now(),
    now: Date.now(),
  });
  check('set by script', fields.changed, [
    { kind: 'text', control: 'input', chars: 9, equals: [0], sensitive: false, sameLength: [0, 1], connected: true },
  ]);
  check('set by script: nothing else held', { held: fields.held, maybe: fields.maybe }, { held: [], maybe: [] });
};

const locators = async (page, call) => {
  const locate = (sel) => call((a, s) => a.locate(document.querySelector(s)), sel);
  check('test id', await locate('[data-testid="save-button"]'), { testId: 'save-button' });
  check('role and exact name', await locate('#send'), { role: 'button', name: 'Send message', exact: true });
  check('a field by its label text as a role name', await locate('#plain'), { role: 'textbox', name: 'Plain', exact: true });
  check('label (no role)', await locate('#birthday'), { label: 'Birthday', exact: true });
  check('placeholder (no name)', await locate('#notes'), { placeholder: 'Your notes', exact: true });
  check('text', await locate('#terms'), { text: 'Terms apply', exact: true });
  check('only a generated class', await locate('.css-1q2w3e'), { why: 'generated-id' });
  check('the page itself', await locate('body'), { why: 'page-background' });
  // In a same-origin frame, by that frame's agent: the frames from the top down.
  const inFrame = await call(
    (a) => document.querySelectorAll('iframe')[1].contentWindow.__cdpRelayAgent.locate(
      document.querySelectorAll('iframe')[1].contentDocument.querySelector('#pay')),
  );
  check('in a frame', inFrame, { role: 'button', name: 'Pay now', exact: true, frames: ['iframe[title="Payment"]'] });
};

const focusKinds = async (page, reports) => {
  const cases = [
    ['#plain', 'text'], ['#email', 'email'], ['#pw', 'password'], ['#otp', 'one-time-code'],
    ['#otp2', 'one-time-code'], ['#card', 'payment'], ['#card2', 'payment'], ['#notes', 'textarea'],
    ['#send', 'none'],
  ];
  for (const [sel, kind] of cases) {
    const from = reports.length;
    await page.click(sel);
    const got = await within(`a focus report for ${sel}`, () => reports.slice(from).find((r) => r.t === 'focus'))
      .catch((e) => ({ error: e.message }));
    check(`focus ${sel}`, got, { kind });
  }
};

// The click reports: each trusted pointerdown's target, one in a frame with its frame path.
const hits = async (page, reports) => {
  const from = reports.length;
  await page.getByTestId('save-button').click();
  await page.frameLocator('iframe[title="Payment"]').locator('#pay').click();
  const got = await within('two hit reports', () => {
    const h = reports.slice(from).filter((r) => r.t === 'hit');
    return h.length >= 2 && h;
  }).catch((e) => [{ error: e.message }]);
  check('hit', got[0]?.target, { testId: 'save-button' });
  check('hit in a frame', got[1]?.target, {
    role: 'button', name: 'Pay now', exact: true, frames: ['iframe[title="Payment"]'],
  });
};

const main = async () => {
  const server = await serve();
  const browser = await chromium.launch({ executablePath: browserPath(), headless: true, timeout: 30000 });
  try {
    const page = await browser.newPage();
    const { reports, exceptions, call } = await install(page);
    await page.goto(`http://127.0.0.1:${server.address().port}/`, { waitUntil: 'load' });
    // The agent started in the frame: its first focus report (nothing focused).
    const first = await within('the agent\'s first report', () => reports.find((r) => r.t === 'focus')).catch((e) => {
      throw new Error(`${e.message}; thrown in the page: ${exceptions.join('; ') || 'nothing'}`);
    });
    check('first focus report', first, { kind: 'none', field: 0, group: 0, from: 0 });
    const typed = [];
    await verdicts(page, call, typed);
    await locators(page, call);
    await focusKinds(page, reports);
    await hits(page, reports);
    // The typed reports say where each typing went, by locator.
    const target = reports.find((r) => r.t === 'typed')?.target;
    check('typed report', target, { role: 'textbox', name: 'Plain', exact: true });
    check('nothing thrown in the page', exceptions, []);
    // Nothing typed ever reaches the binding: words and locators only.
    for (const text of typed) {
      const leak = reports.find((r) => r.raw.includes(text.trim()));
      check(`no report holds ${JSON.stringify(text)}`, leak?.raw ?? null, null);
    }
  } finally {
    await browser.close().catch(() => {});
    server.close();
  }
};

// A hung browser or call ends the run; Playwright kills the browser it launched on exit.
const deadline = setTimeout(() => {
  console.error(`agent_page.mjs: gave up after ${DEADLINE_MS / 1000} s`);
  process.exit(1);
}, DEADLINE_MS);
deadline.unref();
try {
  await main();
} catch (e) {
  failures.push(`stopped: ${e.stack || e}`);
}
for (const f of failures) console.error(`FAILED ${f}`);
console.log(`agent_page.mjs: ${checks - failures.filter((f) => !f.startsWith('stopped')).length} of ${checks} checks passed${failures.some((f) => f.startsWith('stopped')) ? ', then stopped' : ''}`);
process.exit(failures.length ? 1 : 0);
