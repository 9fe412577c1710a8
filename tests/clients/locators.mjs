// The relay's page agent and Playwright side by side on one page, through Playwright over CDP.
// Usage: node locators.mjs '<json config>'; prints one JSON line.
//   {"mode": "locate", "endpoint", "url", "agent": path}: the agent (installed in every frame)
//     reports its locator of each element marked `data-case`, in any frame or open shadow root:
//     {"cases": {case: locator}}.
//   {"mode": "resolve", "endpoint", "url", "exprs": [expression on `page`, or {expr, hover}]}:
//     each Playwright locator expression resolved, in order, on a fresh load of the page (one
//     marked `hover` is then hovered): {"resolved": [{count, case}]}, `case` the `data-case` (or
//     `data-aim`) of the one element it finds.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';

const cfg = JSON.parse(process.argv[2] ?? '{}');
if (!cfg.endpoint || !cfg.url) {
  console.error('usage: node locators.mjs <json config>');
  process.exit(2);
}

const browser = await chromium.connectOverCDP(cfg.endpoint, { timeout: 30000 });
try {
  const page = await browser.contexts()[0].newPage();
  await page.goto(cfg.url, { waitUntil: 'load' });
  if (cfg.mode === 'locate') {
    const agent = readFileSync(cfg.agent, 'utf8');
    const cases = {};
    for (const frame of page.frames()) {
      await frame.addScriptTag({ content: agent });
      const found = await frame.evaluate(() => {
        const out = {};
        const walk = (root) => {
          for (const el of root.querySelectorAll('*')) {
            if (el.dataset.case) out[el.dataset.case] = globalThis.__cdpRelayAgent.locate(el);
            if (el.shadowRoot) walk(el.shadowRoot);
          }
        };
        walk(document);
        return out;
      });
      Object.assign(cases, found);
    }
    console.log(JSON.stringify({ cases }));
  } else {
    const resolved = [];
    for (const item of cfg.exprs) {
      // An item is an expression, or {expr, hover}: resolved, then hovered (as the replay does
      // before a click on what the hover shows).
      const expr = typeof item === 'string' ? item : item.expr;
      const locator = new Function('page', `return ${expr};`)(page);
      const count = await locator.count();
      const which = count === 1 ? await locator.evaluate((e) => e.dataset.case ?? e.dataset.aim ?? null) : null;
      resolved.push({ count, case: which });
      if (count === 1 && item.hover) await locator.hover();
    }
    console.log(JSON.stringify({ resolved }));
  }
  await page.close();
} finally {
  await browser.close();
}
