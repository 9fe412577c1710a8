// Types into every field of the observer's verification page (tests/src/pages.rs) through one
// client: Playwright fill, Playwright type (pressSequentially / keyboard.type), Puppeteer type,
// or raw CDP (Input.insertText, and Input.dispatchKeyEvent for keyboard cases).
// Usage: node verify.mjs '<json config>'; prints one JSON line.
//
// Each case is one typing step: it starts with a command that is not typing (a focus, a select,
// a click), so the relay's typing bursts line up with the cases.
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import WebSocket from 'ws';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint || !cfg.client || !cfg.site || !Array.isArray(cfg.cases)) {
  console.error('usage: node verify.mjs <json config: endpoint, client, site, cases>');
  process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const KEYBOARD = new Set(['boxes', 'password', 'one-time-code']);

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
  for (const c of cfg.cases) {
    const select = c.name === 'selected' ? '; e.select()' : '';
    await evaluate(`{ const e = document.querySelector(${JSON.stringify(c.selector)}); e.focus()${select}; }`);
    if (KEYBOARD.has(c.name)) {
      for (const ch of c.literal) {
        await send('Input.dispatchKeyEvent', { type: 'keyDown', key: ch, text: ch, unmodifiedText: ch });
        await send('Input.dispatchKeyEvent', { type: 'keyUp', key: ch });
      }
    } else {
      await send('Input.insertText', { text: c.literal });
    }
  }
  await evaluate('document.activeElement && document.activeElement.blur()');
  await sleep(1000);
  ws.close();
}

async function playwright(mode) {
  const browser = await chromium.connectOverCDP(cfg.endpoint, { timeout: 30000 });
  const page = await browser.contexts()[0].newPage();
  await page.goto(`${cfg.site}/verify`);
  for (const c of cfg.cases) {
    if (mode === 'fill') {
      await page.fill(c.selector, c.literal);
    } else if (c.name === 'selected') {
      await page.focus(c.selector);
      await page.$eval(c.selector, (e) => e.select());
      await page.keyboard.type(c.literal);
    } else {
      await page.locator(c.selector).pressSequentially(c.literal);
    }
  }
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await sleep(1000);
  await browser.close();
}

async function puppeteerType() {
  const browser = await puppeteer.connect({ browserURL: cfg.endpoint, protocolTimeout: 30000 });
  const page = await browser.newPage();
  await page.goto(`${cfg.site}/verify`);
  for (const c of cfg.cases) {
    if (c.name === 'selected') {
      await page.focus(c.selector);
      await page.$eval(c.selector, (e) => e.select());
      await page.keyboard.type(c.literal);
    } else {
      await page.type(c.selector, c.literal);
    }
  }
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await sleep(1000);
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
