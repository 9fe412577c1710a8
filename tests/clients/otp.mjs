// A one-time code entered a digit per box (six `maxlength=1` boxes, focus moving on) through the
// relay, as Playwright drives it: `type` mode clicks the first box and types the whole code in
// one `keyboard.type` (the page moves focus from box to box), `fill` mode fills each box with
// its digit. With all six filled the page echoes the code and opens `/verify/<code>`.
// Usage: node otp.mjs '<json config: endpoint, site, codes: [[mode, code], ...]>'; prints one
// JSON line.
import { chromium } from 'playwright-core';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint || !cfg.site || !Array.isArray(cfg.codes)) {
  console.error('usage: node otp.mjs <json config: endpoint, site, codes>');
  process.exit(2);
}
const browser = await chromium.connectOverCDP(cfg.endpoint, { timeout: 30000 });
// The tab the relay's observer already covers (the test waited for it): typing into a tab opened
// a moment ago can come before the observer attached to it, and is then recorded honestly as
// typing into a field of unknown kind (docs/security.md), which is not what this test is about.
const context = browser.contexts()[0];
const page = context.pages()[0] ?? (await context.newPage());
for (const [mode, code] of cfg.codes) {
  await page.goto(`${cfg.site}/otp`);
  const landed = page.waitForURL(`**/verify/${code}`);
  if (mode === 'type') {
    await page.click('#o1');
    await page.keyboard.type(code);
  } else if (mode === 'fill') {
    for (let i = 0; i < code.length; i += 1) await page.locator(`#o${i + 1}`).fill(code[i]);
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  await landed;
}
await browser.close();
console.log(JSON.stringify({ codes: cfg.codes.length }));
