// Imports a HAR file with Chrome DevTools' own HAR importer (the frontend bundled in Chromium,
// `models/har/har.js`: HARRoot parses the file, Importer.requestsFromHARLog makes the Network
// panel's requests), in headless Chromium.
// Usage: node devtools_har.mjs FILE.har
// Prints one JSON line: { requests: [{ method, url, status, resourceType, startMs, durationMs }] };
// exits non-zero when DevTools cannot import the file.
import { chromium } from 'playwright-core';
import fs from 'fs';

const file = process.argv[2];
if (!file) {
  console.error('usage: node devtools_har.mjs <file.har>');
  process.exit(2);
}
const text = fs.readFileSync(file, 'utf8');
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
try {
  const page = await browser.newPage();
  await page.goto('devtools://devtools/bundled/devtools_app.html', { timeout: 30000 });
  const requests = await page.evaluate(async (har) => {
    const { HARFormat, Importer } = await import('./models/har/har.js');
    const root = new HARFormat.HARRoot(JSON.parse(har));
    return Importer.Importer.requestsFromHARLog(root.log).map((r) => ({
      method: r.requestMethod,
      url: r.url(),
      status: r.statusCode,
      resourceType: r.resourceType().name(),
      startMs: Math.round(r.issueTime() * 1000),
      durationMs: Math.round(r.duration * 1000),
    }));
  }, text);
  console.log(JSON.stringify({ requests }));
} finally {
  await browser.close();
}
