// A header-adding relay for tests that drive `boxmaker mcp --http` with a client that takes
// only a URL (the MCP conformance suite): it listens on loopback and passes every request on
// to the front unchanged (method, path, every header, Host and Origin included, and the body
// as it streams), adding `Authorization: Bearer TOKEN` with the token read from the front's
// own token file. The answer streams back as it comes (SSE included). The front keeps its
// token check; only this test process, which may read the state directory, holds the token.
//
//   node bearer_relay.mjs LISTEN_PORT FRONT_PORT TOKEN_FILE
//
// Prints `listening PORT` once it accepts connections (LISTEN_PORT 0: a free port).

import { readFileSync } from 'node:fs';
import http from 'node:http';

const [listenPort, frontPort, tokenFile] = process.argv.slice(2);
const token = readFileSync(tokenFile, 'utf8').trim();
const agent = new http.Agent({ keepAlive: true });

const relay = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const upstream = http.request(
    {
      host: '127.0.0.1',
      port: Number(frontPort),
      method: req.method,
      path: req.url,
      headers,
      agent,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      res.flushHeaders();
      answer.pipe(res);
    },
  );
  upstream.on('error', (e) => {
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'text/plain' });
    }
    res.end(`relay: ${e.message}`);
  });
  res.on('close', () => upstream.destroy());
  req.pipe(upstream);
});

relay.listen(Number(listenPort), '127.0.0.1', () => {
  process.stdout.write(`listening ${relay.address().port}\n`);
});
