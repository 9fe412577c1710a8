// Drives the hostile pages (tests/src/pages.rs, hostile_routes) through one client: Playwright
// fill, Playwright pressSequentially, Puppeteer type, or raw CDP. Scenarios:
//
//  - nav: a password typed and revealed, a card number typed, then navigations that replace no
//    document (#receipt, a 204, a download, pushState and back), each followed by a client
//    screenshot and a click (after which the relay's observer wants a frame); then a fresh page.
//  - fields: one document per field of `cfg.fields`, each typed into (and revealed where it can
//    be), then a click and a client screenshot.
//
// Usage: node hostile.mjs '<json config>'. Between steps whose frames the relay's observer must
// have decided on, prints {"wait": …} and reads one line from stdin before going on. A control
// screenshot of the page with the secrets showing, taken over a connection straight to the
// browser (`cfg.direct`, never seen by the relay), is written to `cfg.control`. Prints one JSON
// line at the end.
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import WebSocket from 'ws';
import fs from 'node:fs';
import readline from 'node:readline';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint || !cfg.direct || !cfg.client || !cfg.site || !cfg.scenario) {
  console.error('usage: node hostile.mjs <json config: endpoint, direct, client, site, scenario, …>');
  process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const MARK = `hostile-${cfg.client}-${process.pid}`;
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
// `since`: when the client did what the awaited frame follows (ms since the epoch): the
// observer may decide on that frame before this line is read.
const waitFor = async (what, since) => {
  console.log(JSON.stringify({ wait: what, since }));
  await lines.next();
};

// A minimal CDP connection.
async function cdp(url) {
  const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
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
  return { send, close: () => ws.close() };
}

// Straight to the browser: downloads refused (nothing lands on disk), and the control picture.
async function denyDownloads() {
  const v = await (await fetch(`${cfg.direct}/json/version`)).json();
  const b = await cdp(v.webSocketDebuggerUrl);
  await b.send('Browser.setDownloadBehavior', { behavior: 'deny' });
  b.close();
}
async function control() {
  let target;
  for (let i = 0; i < 200 && !target; i += 1) {
    const list = await (await fetch(`${cfg.direct}/json/list`)).json();
    target = list.find((t) => t.type === 'page' && t.title === MARK);
    if (!target) await sleep(25);
  }
  if (!target) throw new Error('the page is not in the browser\'s own list');
  const c = await cdp(target.webSocketDebuggerUrl);
  const shot = await c.send('Page.captureScreenshot', { format: 'png' });
  c.close();
  fs.writeFileSync(cfg.control, Buffer.from(shot.result.data, 'base64'));
}

// One interface over the four clients.
async function rawClient() {
  const list = await (await fetch(`${cfg.endpoint}/json/list`)).json();
  const c = await cdp(list.find((t) => t.type === 'page').webSocketDebuggerUrl);
  const evaluate = async (expression) => (await c.send('Runtime.evaluate', { expression, returnByValue: true })).result?.result?.value;
  const loaded = async () => {
    for (let i = 0; i < 200; i += 1) {
      if ((await evaluate('document.readyState')) === 'complete') return;
      await sleep(25);
    }
  };
  const clickAt = async (sel) => {
    const r = JSON.parse(await evaluate(`JSON.stringify(document.querySelector(${JSON.stringify(sel)}).getBoundingClientRect())`));
    for (const type of ['mousePressed', 'mouseReleased']) {
      await c.send('Input.dispatchMouseEvent', { type, x: r.x + 5, y: r.y + 5, button: 'left', clickCount: 1 });
    }
  };
  return {
    async goto(url) {
      const r = await c.send('Page.navigate', { url });
      if (r.result?.loaderId && !r.result?.errorText) await loaded();
    },
    evaluate,
    async type(sel, text) {
      await evaluate(`document.querySelector(${JSON.stringify(sel)}).focus()`);
      await c.send('Input.insertText', { text });
    },
    async keys(sel, text) {
      await evaluate(`document.querySelector(${JSON.stringify(sel)}).focus()`);
      for (const ch of text) {
        await c.send('Input.dispatchKeyEvent', { type: 'keyDown', key: ch, text: ch, unmodifiedText: ch });
        await c.send('Input.dispatchKeyEvent', { type: 'keyUp', key: ch });
      }
    },
    click: clickAt,
    async screenshot() {
      await c.send('Page.captureScreenshot', { format: 'png' });
    },
    async back() {
      const h = (await c.send('Page.getNavigationHistory')).result;
      await c.send('Page.navigateToHistoryEntry', { entryId: h.entries[h.currentIndex - 1].id });
    },
    async close() {
      c.close();
    },
  };
}

async function playwrightClient(mode) {
  const browser = await chromium.connectOverCDP(cfg.endpoint, { timeout: 30000 });
  const page = await browser.contexts()[0].newPage();
  return {
    goto: (url) => page.goto(url).catch(() => {}),
    evaluate: (expression) => page.evaluate(expression),
    type: (sel, text) => (mode === 'fill' ? page.fill(sel, text) : page.locator(sel).pressSequentially(text)),
    async keys(sel, text) {
      await page.focus(sel);
      await page.keyboard.type(text);
    },
    click: (sel) => page.click(sel),
    screenshot: () => page.screenshot(),
    back: () => page.goBack().catch(() => {}),
    close: () => browser.close(),
  };
}

async function puppeteerClient() {
  const browser = await puppeteer.connect({ browserURL: cfg.endpoint, protocolTimeout: 30000 });
  const page = await browser.newPage();
  return {
    goto: (url) => page.goto(url).catch(() => {}),
    evaluate: (expression) => page.evaluate(expression),
    type: (sel, text) => page.type(sel, text),
    async keys(sel, text) {
      await page.focus(sel);
      await page.keyboard.type(text);
    },
    click: (sel) => page.click(sel),
    screenshot: () => page.screenshot(),
    back: () => page.goBack().catch(() => {}),
    close: () => browser.disconnect(),
  };
}

const client = await ({
  raw: rawClient,
  'pw-fill': () => playwrightClient('fill'),
  'pw-type': () => playwrightClient('type'),
  'pptr-type': puppeteerClient,
}[cfg.client] ?? (() => { throw new Error(`unknown client ${cfg.client}`); }))();
const mark = () => client.evaluate(`document.title = ${JSON.stringify(MARK)}`);
await denyDownloads();

if (cfg.scenario === 'nav') {
  await client.goto(`${cfg.site}/pay`);
  await mark();
  await client.type('#pw', cfg.secrets.password);
  await client.click('#show');
  await client.type('#cc', cfg.secrets.card);
  await client.click('#blank');
  await control();
  // Navigations that replace no document, each followed by a screenshot and a click.
  const steps = [
    () => client.goto(`${cfg.site}/pay#receipt`),
    () => client.goto(`${cfg.site}/nocontent`),
    () => client.goto(`${cfg.site}/download`),
    async () => {
      await client.evaluate("history.pushState({}, '', '/pay/step2')");
      await client.back();
    },
  ];
  for (const [i, step] of steps.entries()) {
    const t0 = Date.now();
    await step();
    const t1 = Date.now();
    await client.screenshot();
    const t2 = Date.now();
    await client.click('#blank');
    console.error(`step ${i + 1}: navigation ${t1 - t0} ms, screenshot ${t2 - t1} ms, click ${Date.now() - t2} ms`);
    // The observer decides on its frame after the click before the next step. (The 204 and
    // the download are failed requests to the observer: the frame wanted after them waits for
    // one it may keep — the next document's — and is decided there.)
    if (i === 0) await waitFor('the frame after the #receipt navigation', t2);
  }
  const t0 = Date.now();
  await client.goto(`${cfg.site}/next`);
  const t1 = Date.now();
  await client.screenshot();
  console.error(`fresh page: navigation ${t1 - t0} ms, screenshot ${Date.now() - t1} ms`);
} else if (cfg.scenario === 'fields') {
  for (const f of cfg.fields) {
    await client.goto(`${cfg.site}/field?f=${f.name}`);
    await mark();
    if (f.keys) await client.keys(f.selector, f.secret);
    else await client.type(f.selector, f.secret);
    if (f.reveal) await client.click(f.reveal);
    const clicked = Date.now();
    await client.click('#blank');
    await client.screenshot();
    if (f.control) await control();
    await waitFor(`frames of the ${f.name} document`, clicked);
  }
  await client.goto(`${cfg.site}/next`);
  await client.screenshot();
} else {
  throw new Error(`unknown scenario ${cfg.scenario}`);
}
await client.close();
console.log(JSON.stringify({ client: cfg.client, scenario: cfg.scenario }));
process.exit(0);
