// Clicks and fills, through cdp-relay with Playwright, on a page with one element per locator
// kind and on a page that echoes what is typed into a button's name, a label and a heading.
// Usage: node targets.mjs '<json config>'; prints one JSON line.
import { chromium } from 'playwright-core';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint) {
  console.error('usage: node targets.mjs <json config>');
  process.exit(2);
}

// The relay's own observer covers `n` pages: its page agent is in every new document.
const observing = async (n) => {
  const deadline = Date.now() + 30000;
  for (;;) {
    const status = await (await fetch(`${cfg.endpoint}/relay/v1/status`)).json();
    if ((status.evidence?.observedPages ?? 0) >= n) return;
    if (Date.now() > deadline) throw new Error(`the relay's observer never covered ${n} pages`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

const status = await (await fetch(`${cfg.endpoint}/relay/v1/status`)).json();
const before = status.evidence?.observedPages ?? 0;
const browser = await chromium.connectOverCDP(cfg.endpoint, { timeout: 30000 });
try {
  const page = await browser.contexts()[0].newPage();
  await observing(before + 1);
  await page.goto(`${cfg.site}/kinds`);
  await page.getByTestId('save').click();
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.fill('#email', cfg.email);
  await page.fill('#pw', cfg.password);
  await page.fill('textarea', cfg.message);
  await page.fill('input[name="nickname"]', cfg.nick);
  await page.click('#tile');
  await page.frameLocator('#inner').getByRole('button', { name: 'Inside' }).click();
  await page.goto(`${cfg.site}/echo`);
  await page.fill('#who', cfg.echoed);
  await page.click('#go');
  await page.fill('#next', cfg.second);
  await page.click('#greet');
  await page.close();
} finally {
  await browser.close();
}
console.log(JSON.stringify({ ok: true }));
