"""pyppeteer 2.0.0 through the relay: it drives pages on non-flat sessions
(Target.sendMessageToTarget / Target.receivedMessageFromTarget).

    python pyppeteer_flow.py RELAY_ENDPOINT FORM_URL FIRST SECOND

Opens FORM_URL, types FIRST into #a and SECOND into #b key by key, takes a screenshot before
and after typing, and prints one JSON line with what the page holds.
"""

import asyncio
import json
import sys
import urllib.request

import pyppeteer


async def main(endpoint, url, first, second):
    version = json.load(urllib.request.urlopen(endpoint + "/json/version"))
    browser = await pyppeteer.connect(browserWSEndpoint=version["webSocketDebuggerUrl"])
    page = await browser.newPage()
    await page.goto(url)
    await page.waitForSelector("#b")
    before = await page.screenshot()
    await page.click("#a")
    await page.type("#a", first)
    await page.click("#b")
    await page.type("#b", second)
    lengths = await page.evaluate("() => [a.value.length, b.value.length]")
    after = await page.screenshot()
    await page.close()
    await browser.disconnect()
    print(json.dumps({
        "ws": version["webSocketDebuggerUrl"],
        "lengths": lengths,
        "shots": [len(before), len(after)],
    }))


asyncio.run(main(*sys.argv[1:5]))
