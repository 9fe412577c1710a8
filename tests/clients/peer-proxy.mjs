// The peer for benchmarks: a websocket-capable reverse proxy built on node-http-proxy, the
// approach browserless and many hand-rolled CDP proxies use. It rewrites nothing.
// Usage: node peer-proxy.mjs http://127.0.0.1:CHROME_PORT  -> prints "http://127.0.0.1:PORT".
import http from 'node:http';
import httpProxy from 'http-proxy';

const target = process.argv[2];
if (!target) {
  console.error('usage: node peer-proxy.mjs <chrome http endpoint>');
  process.exit(2);
}
const proxy = httpProxy.createProxyServer({ target, ws: true, changeOrigin: true });
proxy.on('error', (err, _req, res) => {
  if (res && res.writeHead) { res.writeHead(502); res.end(String(err)); } else if (res) { res.destroy(); }
});
const server = http.createServer((req, res) => proxy.web(req, res));
server.on('upgrade', (req, socket, head) => {
  socket.setNoDelay(true);
  proxy.ws(req, socket, head);
});
server.listen(0, '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}`);
});
