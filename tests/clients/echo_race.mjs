// The echo race (issue 15): a page echoes its field into the console (and its title) on every
// input event, while a client types value after value through cdp-relay. One client per run:
//   playwright — fill, type and pressSequentially in turn;
//   puppeteer  — ElementHandle.type;
//   cdp        — a raw CDP client over `ws`: Input.insertText, dispatchKeyEvent with text,
//                rawKeyDown + char events, and the spellings the relay used to miss (params
//                before method, sessionId first, an escaped method name, escaped keys, a
//                non-flat session's Target.sendMessageToTarget, DOM.setAttributeValue VALUE,
//                DOM.setAttributesAsText). (Duplicate keys are not among them: Chromium refuses
//                such a message with -32700.)
// Each value is typed into an emptied field, so every value is one typing burst with echoes.
// Usage: node echo_race.mjs '<json config>' with {endpoint, site, client, values}; prints one
// JSON line {ok, typed, modes}.
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import WebSocket from 'ws';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint || !cfg.values) {
  console.error('usage: node echo_race.mjs <json config>');
  process.exit(2);
}
const url = `${cfg.site}/race`;
const modes = {};
const count = (m) => { modes[m] = (modes[m] ?? 0) + 1; };
// Waits until the page has seen (and echoed) the whole value: the next value must not join
// this burst.
const landed = (v) => `document.getElementById('f').dataset.last === ${JSON.stringify(v)}`;

async function withPlaywright() {
  const browser = await chromium.connectOverCDP(cfg.endpoint, { timeout: 30000 });
  try {
    const page = await browser.contexts()[0].newPage();
    await page.goto(url);
    const f = page.locator('#f');
    for (const [i, v] of cfg.values.entries()) {
      switch (i % 3) {
        case 0: await f.fill(v); count('fill'); break;
        case 1: await f.fill(''); await page.type('#f', v); count('type'); break;
        default: await f.fill(''); await f.pressSequentially(v); count('pressSequentially');
      }
      await page.waitForFunction(landed(v));
    }
    await page.close();
  } finally {
    await browser.close();
  }
}

async function withPuppeteer() {
  const browser = await puppeteer.connect({ browserURL: cfg.endpoint, defaultViewport: null });
  try {
    const page = await browser.newPage();
    await page.goto(url);
    const f = await page.$('#f');
    for (const v of cfg.values) {
      await page.evaluate(() => { document.getElementById('f').value = ''; });
      await f.type(v);
      count('type');
      await page.waitForFunction(landed(v));
    }
    await page.close();
  } finally {
    await browser.disconnect();
  }
}

/// A minimal CDP client that sends each message exactly as spelled.
class Raw {
  constructor(ws) {
    this.ws = ws;
    this.next = 1;
    this.waiting = new Map();
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString());
      if (m.id !== undefined && this.waiting.has(m.id)) {
        this.waiting.get(m.id)(m);
        this.waiting.delete(m.id);
      }
    });
  }
  static async open(wsUrl) {
    const ws = new WebSocket(wsUrl, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
    await new Promise((ok, fail) => { ws.once('open', ok); ws.once('error', fail); });
    return new Raw(ws);
  }
  // `spell(id)` returns the message text; resolves with the reply.
  sendRaw(spell) {
    const id = this.next++;
    return new Promise((ok) => { this.waiting.set(id, ok); this.ws.send(spell(id)); });
  }
  async call(method, params = {}, sessionId) {
    const reply = await this.sendRaw((id) => JSON.stringify(sessionId ? { id, method, params, sessionId } : { id, method, params }));
    if (reply.error) throw new Error(`${method}: ${reply.error.message}`);
    return reply.result;
  }
}

async function withRawCdp() {
  const version = await (await fetch(`${cfg.endpoint}/json/version`)).json();
  const cdp = await Raw.open(version.webSocketDebuggerUrl);
  const { targetId } = await cdp.call('Target.createTarget', { url: 'about:blank' });
  const { sessionId: s } = await cdp.call('Target.attachToTarget', { targetId, flatten: true });
  const { sessionId: nonFlat } = await cdp.call('Target.attachToTarget', { targetId, flatten: false });
  await cdp.call('Page.enable', {}, s);
  await cdp.call('Runtime.enable', {}, s);
  const loaded = new Promise((ok) => cdp.ws.on('message', (d) => {
    if (JSON.parse(d.toString()).method === 'Page.loadEventFired') ok();
  }));
  await cdp.call('Page.navigate', { url }, s);
  await loaded;
  const evaluate = (expression) => cdp.call('Runtime.evaluate', { expression, awaitPromise: true }, s);
  const waitLanded = async (v) => {
    for (;;) {
      const r = await evaluate(landed(v));
      if (r.result.value === true) return;
      await new Promise((ok) => setTimeout(ok, 5));
    }
  };
  const { root } = await cdp.call('DOM.getDocument', {}, s);
  const { nodeId } = await cdp.call('DOM.querySelector', { nodeId: root.nodeId, selector: '#f' }, s);
  const text = (t) => JSON.stringify(t);
  const escaped = (name) => name.replace(/[A-Z]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  const key = async (type, c, withText) => {
    const params = { type, key: c };
    if (withText) params.text = c;
    if (type !== 'keyUp' && withText) params.unmodifiedText = c;
    await cdp.call('Input.dispatchKeyEvent', params, s);
  };
  const ways = [
    ['insertText', (v) => cdp.call('Input.insertText', { text: v }, s)],
    ['keyDown with text', async (v) => { for (const c of v) { await key('keyDown', c, true); await key('keyUp', c, false); } }],
    ['rawKeyDown and char', async (v) => {
      for (const c of v) { await key('rawKeyDown', c, false); await key('char', c, true); await key('keyUp', c, false); }
    }],
    ['params before method', (v) => cdp.sendRaw((id) => `{"params":{"text":${text(v)}},"sessionId":"${s}","id":${id},"method":"Input.insertText"}`)],
    ['sessionId first', (v) => cdp.sendRaw((id) => `{"sessionId":"${s}","id":${id},"method":"Input.insertText","params":{"text":${text(v)}}}`)],
    ['escaped method', (v) => cdp.sendRaw((id) => `{"id":${id},"method":"${escaped('Input.insertText')}","params":{"text":${text(v)}},"sessionId":"${s}"}`)],
    ['escaped keys', (v) => cdp.sendRaw((id) => `{"\\u0069d":${id},"m\\u0065thod":"Input.insertText","p\\u0061rams":{"t\\u0065xt":${text(v)}},"sessi\\u006fnId":"${s}"}`)],
    ['non-flat session', (v) => cdp.call('Target.sendMessageToTarget', {
      sessionId: nonFlat,
      message: JSON.stringify({ id: 900000 + cdp.next, method: 'Input.insertText', params: { text: v } }),
    })],
    ['setAttributeValue VALUE', (v) => cdp.call('DOM.setAttributeValue', { nodeId, name: 'VALUE', value: v }, s)],
    ['setAttributesAsText', (v) => cdp.call('DOM.setAttributesAsText', { nodeId, text: `id="f" value=${text(v)}` }, s)],
  ];
  for (const [i, v] of cfg.values.entries()) {
    const [mode, type] = ways[i % ways.length];
    // Emptied and focused by a command of its own: the previous burst ends here.
    await evaluate(`(() => { const f = document.getElementById('f'); f.removeAttribute('value'); f.value = ''; f.focus(); })()`);
    await type(v);
    count(mode);
    await waitLanded(v);
  }
  cdp.ws.close();
}

try {
  if (cfg.client === 'playwright') await withPlaywright();
  else if (cfg.client === 'puppeteer') await withPuppeteer();
  else await withRawCdp();
} catch (e) {
  console.error(e.stack ?? String(e));
  process.exit(1);
}
console.log(JSON.stringify({ ok: true, typed: cfg.values.length, modes }));
