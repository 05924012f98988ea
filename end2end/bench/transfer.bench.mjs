// Browser benchmark: the bytes a first and a second visit to the chat page transfer, from
// Chromium's network log (CDP Network.loadingFinished's encodedDataLength: headers and body as
// they crossed the wire), and which requests the second visit answered from the cache.
// Run from end2end/ with `npm run bench:transfer` (scripts/bench.sh builds the release site
// first, with precompressed, content-hashed assets). Chromium treats 127.0.0.1 as a secure
// origin and asks for brotli, as it would over HTTPS.

import { startServer } from '../support/server.mjs';
import { launchBrowser, waitForHydration } from '../support/browser.mjs';

async function visit(page, client, url) {
  const requests = new Map();
  const onResponse = ({ requestId, response }) => {
    requests.set(requestId, {
      url: response.url.replace(url, '/').replace(/^\/\//, '/'),
      status: response.status,
      cached: response.fromDiskCache || response.fromPrefetchCache || false,
      bytes: 0,
    });
  };
  const onCache = ({ requestId }) => {
    const request = requests.get(requestId);
    if (request) request.cached = true;
  };
  const onFinished = ({ requestId, encodedDataLength }) => {
    const request = requests.get(requestId);
    if (request) request.bytes = encodedDataLength;
  };
  client.on('Network.responseReceived', onResponse);
  client.on('Network.requestServedFromCache', onCache);
  client.on('Network.loadingFinished', onFinished);
  await page.goto(url);
  await waitForHydration(page);
  await page.waitForLoadState('networkidle');
  client.off('Network.responseReceived', onResponse);
  client.off('Network.requestServedFromCache', onCache);
  client.off('Network.loadingFinished', onFinished);
  return [...requests.values()];
}

function report(label, requests) {
  const total = requests.reduce((sum, r) => sum + r.bytes, 0);
  console.log(`${label}: ${total} bytes over the network in ${requests.length} requests`);
  for (const r of requests) {
    console.log(`  ${r.status} ${r.cached ? 'cache' : 'net  '} ${String(r.bytes).padStart(9)} B  ${r.url}`);
  }
  return total;
}

const server = await startServer();
const browser = await launchBrowser();
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  const client = await context.newCDPSession(page);
  await client.send('Network.enable');
  const first = report('first visit', await visit(page, client, server.url));
  // A new navigation to the page, as when the user comes back: not a reload, which revalidates.
  await page.goto('about:blank');
  const second = report('second visit', await visit(page, client, server.url));
  console.log(`| first visit | ${first} B | second visit | ${second} B |`);
} finally {
  await browser.close();
  await server.stop();
}
