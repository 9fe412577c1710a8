// The planted-secret sweep, driven through cdp-relay by Playwright: a login form with password
// and one-time-code fields, cookies, an Authorization header, requests failing in every way with
// tokens in their query strings, console errors carrying a JWT, a session id and a registered
// API key, and screenshots before, during and after typing.
// Usage: node sweep.mjs '<json config>'; prints one JSON line.
import { chromium } from 'playwright-core';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint) {
  console.error('usage: node sweep.mjs <json config>');
  process.exit(2);
}

// Declare the API key before anything can echo it (the relay's run API).
const put = await fetch(`${cfg.endpoint}/relay/v1/secrets/API_KEY`, { method: 'PUT', body: cfg.apiKey });
if (put.status !== 204) throw new Error(`secret registration answered ${put.status}`);

const browser = await chromium.connectOverCDP(cfg.endpoint, { timeout: 30000 });
try {
  const context = browser.contexts()[0];
  const page = await context.newPage();
  await page.setExtraHTTPHeaders({ Authorization: `Bearer ${cfg.bearer}` });

  await page.goto(`${cfg.site}/login?session_token=${cfg.queryToken}`);
  await page.screenshot(); // kept: nothing typed yet
  await page.fill('#user', cfg.user);
  await page.fill('#password', cfg.password);
  await page.click('#otp');
  await page.keyboard.type(cfg.otp);
  await page.screenshot(); // withheld: typed since the last navigation
  await Promise.all([page.waitForURL('**/welcome**'), page.click('#submit')]);
  await page.screenshot(); // kept again after the navigation

  const pageError = page.waitForEvent('pageerror');
  const statuses = await page.evaluate(async (cfg) => {
    const attempt = async (url, opts) => {
      try { return (await fetch(url, opts)).status; } catch (e) { return String(e.name); }
    };
    const out = {};
    out.notFound = await attempt(`${cfg.site}/missing?token=${cfg.queryToken}`);
    out.serverError = await attempt(`${cfg.site}/boom?api_key=${cfg.queryToken}`);
    out.refused = await attempt(`${cfg.refused}/x?access_token=${cfg.queryToken}`);
    out.dns = await attempt(`http://nowhere.invalid/y?session=${cfg.queryToken}`);
    const ac = new AbortController();
    const hung = attempt(`${cfg.site}/hang?token=${cfg.queryToken}`, { signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    out.aborted = await hung;
    out.cors = await attempt(`${cfg.otherOrigin}/cors?csrf=${cfg.queryToken}`);
    out.authorized = await attempt(`${cfg.site}/api/private`);
    out.unauthorized = await attempt(`${cfg.site}/api/private`, { headers: { Authorization: 'Bearer wrong' } });
    console.error(`token expired: ${cfg.jwt} for sessionid=${cfg.sessionId}`);
    console.warn(`cookies now: ${document.cookie}`);
    console.error(`key in use: ${cfg.apiKey}`);
    console.assert(false, `assertion with ${cfg.password}`);
    setTimeout(() => { throw new Error(`uncaught, password was ${cfg.password}`); }, 0);
    return out;
  }, cfg);
  await pageError;
  const cookies = await context.cookies();
  await page.close();
  console.log(JSON.stringify({ statuses, cookies: cookies.map((c) => c.name) }));
} finally {
  await browser.close();
}
