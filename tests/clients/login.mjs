// A login flow through `cdp-relay launch`, as an agent drives it with Playwright: a sign-in page
// with a broken image and a console error, e-mail and password filled, submit, and a welcome
// page whose API call fails. Usage: node login.mjs '<json config>'; prints one JSON line.
import { chromium } from 'playwright-core';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint || !cfg.site) {
  console.error('usage: node login.mjs <json config: endpoint, site, user, password>');
  process.exit(2);
}
const started = Date.now();
const browser = await chromium.connectOverCDP(cfg.endpoint, { timeout: 30000 });
// `reuseTab`: the tab the relay's observer already covers (the test waited for it); typing into a
// tab opened a moment before can come before the observer attached to it, and is then recorded
// as typing into a field of unknown kind (docs/security.md).
const context = browser.contexts()[0];
const page = (cfg.reuseTab && context.pages()[0]) || (await context.newPage());
await page.goto(`${cfg.site}/login`);
await page.fill('#user', cfg.user);
await page.fill('#password', cfg.password);
await Promise.all([page.waitForURL('**/welcome**'), page.click('#submit')]);
await page.waitForFunction(() => document.body.dataset.loaded === 'yes');
await page.waitForTimeout(1500);
await browser.close();
console.log(JSON.stringify({ ms: Date.now() - started }));
