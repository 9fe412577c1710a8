// Opens Playwright's trace viewer (served by `playwright show-trace --host 127.0.0.1 --port 0`)
// in headless Chromium and reports what its action list shows.
// Usage: node trace_viewer.mjs VIEWER_URL SCREENSHOT.png [EXPECTED_ACTIONS]
// Prints one JSON line: { titles: [...], pageErrors: [...], bodyExcerpt }; exits non-zero on
// any failure (the viewer never listing the actions, a timeout).
import { chromium } from 'playwright-core';

const [url, screenshot, expected] = process.argv.slice(2);
if (!url || !screenshot) {
  console.error('usage: node trace_viewer.mjs <viewer url> <screenshot.png> [expected actions]');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(url, { timeout: 30000 });
  const titles = page.locator('.action-title');
  const want = Number(expected || 1);
  await page.waitForFunction(
    (n) => document.querySelectorAll('.action-title').length >= n,
    want,
    { timeout: 30000 },
  );
  // Select the first action: the viewer shows its frame (no DOM snapshot in the run).
  await titles.first().click();
  // Its Call tab shows its time once it is selected.
  await page.getByText('duration:').filter({ visible: true }).first().waitFor({ timeout: 30000 });
  const all = await titles.allInnerTexts();
  const body = await page.locator('body').innerText();
  await page.screenshot({ path: screenshot });
  console.log(JSON.stringify({
    titles: all,
    pageErrors,
    bodyExcerpt: body.slice(0, 2000),
  }));
} finally {
  await browser.close();
}
