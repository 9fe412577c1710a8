// What a replay must repeat step for step, through cdp-relay with Playwright: on `/shop` a
// <select>, a file input, a double click, a hover menu, a tile with a generated id, a button in
// an open shadow root, a button two frames down, a button whose name has hidden text, typing and
// a click that navigates; on `/gaps` clicks on elements no locator picks out alone.
// Usage: node fidelity.mjs '<json config>'; prints one JSON line.
import { chromium } from 'playwright-core';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint || !cfg.site) {
  console.error('usage: node fidelity.mjs <json config>');
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
  if (cfg.scenario === 'gaps') {
    await page.goto(`${cfg.site}/gaps`);
    await page.getByRole('button', { name: 'First' }).click();
    await page.locator('span.x').first().click();
    await page.locator('.Card_card__3xK9a').first().click();
    await page.getByRole('button', { name: 'After' }).click();
  } else {
    await page.goto(`${cfg.site}/shop`);
    await page.getByLabel('Colour').selectOption(cfg.colour);
    await page.locator('#receipt').setInputFiles(cfg.file);
    await page.getByTestId('counter').dblclick();
    await page.getByRole('button', { name: 'Products' }).hover();
    await page.getByRole('link', { name: 'Pricing' }).click();
    await page.locator('.Tile_tile__x7Hq2').click();
    await page.locator('shop-widget').getByRole('button', { name: 'Shadow action' }).click();
    await page.frameLocator('#outer').frameLocator('iframe').getByRole('button', { name: 'Deep' }).click();
    await page.locator('[data-case="save"]').click();
    await page.locator('#coupon').fill(cfg.coupon);
    await page.locator('#apply').click();
    await page.waitForURL(`${cfg.site}/done`);
  }
  await page.close();
} finally {
  await browser.close();
}
console.log(JSON.stringify({ ok: true }));
