// A page that fights back: it echoes every keystroke into console errors and warnings, logs
// credentials after the words that name them were typed into a search box, and dumps its own
// HTML (with CSRF tokens in hidden fields). Driven through cdp-relay with Playwright (fill and
// type) and Puppeteer (type).
// Usage: node echo.mjs '<json config>'; prints one JSON line.
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint) {
  console.error('usage: node echo.mjs <json config>');
  process.exit(2);
}

const browser = await chromium.connectOverCDP(cfg.endpoint, { timeout: 30000 });
try {
  const page = await browser.contexts()[0].newPage();
  await page.goto(`${cfg.site}/echo`);
  await page.fill('#a', cfg.fill);
  await page.type('#b', cfg.type, { delay: 5 });
  await page.goto(`${cfg.site}/leaks`);
  for (const word of cfg.words) {
    await page.fill('#search', '');
    await page.type('#search', word, { delay: 5 });
    await page.keyboard.press('Enter');
  }
  await page.click('#leak');
  await page.waitForFunction(() => window.leaked === true);
  await page.goto(`${cfg.site}/csrf`);
  await page.waitForFunction(() => window.dumped === true);
  await page.close();
} finally {
  await browser.close();
}

const pptr = await puppeteer.connect({ browserURL: cfg.endpoint, defaultViewport: null });
try {
  const page = await pptr.newPage();
  await page.goto(`${cfg.site}/echo`);
  await page.type('#a', cfg.puppeteer, { delay: 5 });
  await page.evaluate(() => new Promise((r) => setTimeout(r, 50)));
  await page.close();
} finally {
  await pptr.disconnect();
}
console.log(JSON.stringify({ ok: true }));
