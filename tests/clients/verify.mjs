// Types into every field of the observer's verification page (tests/src/pages.rs) through one
// client: Playwright fill, Playwright type (pressSequentially / keyboard.type), Puppeteer type,
// or raw CDP (Input.insertText, and Input.dispatchKeyEvent for keyboard cases).
// Usage: node verify.mjs '<json config>'; prints one JSON line.
//
// Each case is one typing step: it starts with a command that is not typing (a focus, a select,
// a click), so the relay's typing bursts line up with the cases. A case may name a same-origin
// iframe its field is in, text that reaches another field first over a connection straight to
// the browser (`direct`), a pause before it, or that it is typed last, right before the client
// closes its connection.
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import WebSocket from 'ws';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint || !cfg.client || !cfg.site || !Array.isArray(cfg.cases)) {
  console.error('usage: node verify.mjs <json config: endpoint, direct, client, site, cases>');
  process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const KEYBOARD = new Set(['boxes', 'password', 'one-time-code']);
// Cases typed after everything else, right before the client closes its connection.
const body = cfg.cases.filter((c) => !c.thenClose);
const last = cfg.cases.filter((c) => c.thenClose);
const MARK = `verify-${cfg.client}-${process.pid}`;

// Puts `literal` into field `selector` of this client's page over a CDP connection straight to
// the browser (`cfg.direct`), which the relay never sees.
async function unseen(selector, literal) {
  let target;
  for (let i = 0; i < 200 && !target; i += 1) {
    const list = await (await fetch(`${cfg.direct}/json/list`)).json();
    target = list.find((t) => t.type === 'page' && t.title === MARK);
    if (!target) await sleep(25);
  }
  if (!target) throw new Error('the page is not in the browser\'s own list');
  const ws = new WebSocket(target.webSocketDebuggerUrl, { perMessageDeflate: false });
  await new Promise((r, j) => { ws.once('open', r); ws.once('error', j); });
  let id = 0;
  const waiting = new Map();
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    if (m.id && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
  });
  const send = (method, params = {}) => {
    const i = ++id;
    ws.send(JSON.stringify({ id: i, method, params }));
    return new Promise((r) => waiting.set(i, r));
  };
  await send('Runtime.evaluate', { expression: `document.querySelector(${JSON.stringify(selector)}).focus()` });
  await send('Input.insertText', { text: literal });
  ws.close();
}
// Before the cases: the early unseen texts, once the page carries its mark.
async function early() {
  for (const c of cfg.cases) if (c.unseen && c.unseen[1]) await unseen(c.unseen[0], c.literal);
}
// Before one case: its late unseen text and its pause.
async function before(c) {
  if (c.unseen && !c.unseen[1]) await unseen(c.unseen[0], c.literal);
  if (c.pauseMs) await sleep(c.pauseMs);
}
const inFrame = (c, js) => (c.frame ? `document.querySelector(${JSON.stringify(c.frame)}).contentDocument.${js}` : `document.${js}`);

async function raw() {
  const list = await (await fetch(`${cfg.endpoint}/json/list`)).json();
  const target = list.find((t) => t.type === 'page');
  const ws = new WebSocket(target.webSocketDebuggerUrl, { perMessageDeflate: false });
  await new Promise((r, j) => { ws.once('open', r); ws.once('error', j); });
  let id = 0;
  const waiting = new Map();
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    if (m.id && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
  });
  const send = (method, params = {}) => {
    const i = ++id;
    ws.send(JSON.stringify({ id: i, method, params }));
    return new Promise((r) => waiting.set(i, r));
  };
  const evaluate = (expression) => send('Runtime.evaluate', { expression, returnByValue: true });
  await send('Page.navigate', { url: `${cfg.site}/verify` });
  for (let i = 0; i < 100; i += 1) {
    const r = await evaluate('document.readyState');
    if (r.result?.result?.value === 'complete') break;
    await sleep(50);
  }
  await evaluate(`document.title = ${JSON.stringify(MARK)}`);
  await early();
  const type = async (c) => {
    await before(c);
    const select = c.name === 'selected' ? '; e.select()' : '';
    await evaluate(`{ const e = ${inFrame(c, `querySelector(${JSON.stringify(c.selector)})`)}; e.focus()${select}; }`);
    if (KEYBOARD.has(c.name)) {
      for (const ch of c.literal) {
        await send('Input.dispatchKeyEvent', { type: 'keyDown', key: ch, text: ch, unmodifiedText: ch });
        await send('Input.dispatchKeyEvent', { type: 'keyUp', key: ch });
      }
    } else {
      await send('Input.insertText', { text: c.literal });
    }
  };
  for (const c of body) await type(c);
  await evaluate('document.activeElement && document.activeElement.blur()');
  await sleep(1000);
  for (const c of last) await type(c);
  ws.close();
}

async function playwright(mode) {
  const browser = await chromium.connectOverCDP(cfg.endpoint, { timeout: 30000 });
  const page = await browser.contexts()[0].newPage();
  await page.goto(`${cfg.site}/verify`);
  await page.evaluate((m) => { document.title = m; }, MARK);
  await early();
  const type = async (c) => {
    await before(c);
    const field = c.frame ? page.frameLocator(c.frame).locator(c.selector) : page.locator(c.selector);
    if (mode === 'fill' && c.name.startsWith('readonly')) {
      // fill refuses a read-only field; what it would send is this.
      await field.focus();
      await page.keyboard.insertText(c.literal);
    } else if (mode === 'fill') {
      await field.fill(c.literal);
    } else if (c.name === 'selected') {
      await page.focus(c.selector);
      await page.$eval(c.selector, (e) => e.select());
      await page.keyboard.type(c.literal);
    } else {
      await field.pressSequentially(c.literal);
    }
  };
  for (const c of body) await type(c);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await sleep(1000);
  for (const c of last) await type(c);
  await browser.close();
}

async function puppeteerType() {
  const browser = await puppeteer.connect({ browserURL: cfg.endpoint, protocolTimeout: 30000 });
  const page = await browser.newPage();
  await page.goto(`${cfg.site}/verify`);
  await page.evaluate((m) => { document.title = m; }, MARK);
  await early();
  const type = async (c) => {
    await before(c);
    if (c.name === 'selected') {
      await page.focus(c.selector);
      await page.$eval(c.selector, (e) => e.select());
      await page.keyboard.type(c.literal);
    } else if (c.frame) {
      const frame = await (await page.$(c.frame)).contentFrame();
      await frame.type(c.selector, c.literal);
    } else {
      await page.type(c.selector, c.literal);
    }
  };
  for (const c of body) await type(c);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await sleep(1000);
  for (const c of last) await type(c);
  await browser.disconnect();
}

switch (cfg.client) {
  case 'raw': await raw(); break;
  case 'pw-fill': await playwright('fill'); break;
  case 'pw-type': await playwright('type'); break;
  case 'pptr-type': await puppeteerType(); break;
  default: throw new Error(`unknown client ${cfg.client}`);
}
console.log(JSON.stringify({ client: cfg.client, cases: cfg.cases.map((c) => c.name) }));
