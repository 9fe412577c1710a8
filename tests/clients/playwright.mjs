// Drives a browser through cdp-relay with Playwright's connectOverCDP.
// Usage: node playwright.mjs http://127.0.0.1:PORT
// Prints one JSON line describing what it saw; exits non-zero on any failure.
import { chromium } from 'playwright-core';

const endpoint = process.argv[2];
if (!endpoint) {
  console.error('usage: node playwright.mjs <relay http endpoint>');
  process.exit(2);
}

const browser = await chromium.connectOverCDP(endpoint, { timeout: 30000 });
try {
  const context = browser.contexts()[0] ?? (await browser.newContext());
  const page = await context.newPage();
  await page.setContent('<title>through the relay</title><h1 id="h">hello</h1>');
  const text = await page.evaluate(() => document.getElementById('h').textContent);
  const sum = await page.evaluate(([a, b]) => a + b, [20, 22]);
  const png = await page.screenshot();
  const title = await page.title();
  await page.close();
  console.log(JSON.stringify({
    client: 'playwright',
    version: browser.version(),
    text,
    sum,
    title,
    screenshotBytes: png.length,
    pngMagic: png.subarray(1, 4).toString('latin1'),
  }));
} finally {
  await browser.close();
}
