// Drives a browser through cdp-relay with Puppeteer's connect({ browserURL }).
// Usage: node puppeteer.mjs http://127.0.0.1:PORT
// Prints one JSON line describing what it saw; exits non-zero on any failure.
import puppeteer from 'puppeteer-core';

const endpoint = process.argv[2];
if (!endpoint) {
  console.error('usage: node puppeteer.mjs <relay http endpoint>');
  process.exit(2);
}

const browser = await puppeteer.connect({ browserURL: endpoint, protocolTimeout: 30000 });
try {
  const page = await browser.newPage();
  await page.setContent('<title>through the relay</title><h1 id="h">hello</h1>');
  const text = await page.evaluate(() => document.getElementById('h').textContent);
  const sum = await page.evaluate((a, b) => a + b, 20, 22);
  const png = await page.screenshot();
  const title = await page.title();
  await page.close();
  console.log(JSON.stringify({
    client: 'puppeteer',
    version: await browser.version(),
    wsEndpoint: browser.wsEndpoint(),
    text,
    sum,
    title,
    screenshotBytes: png.length,
    pngMagic: Buffer.from(png).subarray(1, 4).toString('latin1'),
  }));
} finally {
  await browser.disconnect();
}
