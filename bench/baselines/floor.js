#!/usr/bin/env node
/**
 * The floor of `tail_latency`: a bare node:http server that answers every request with the same
 * constant JSON body (about the size of the read's), with no framework, no token, no database. Loaded
 * by the same generator at the same rate as the service, its p99 ÷ p50 is what this machine, its
 * scheduler and the generator give a server that does nothing: no server measured here can do better.
 * Not scored; the tail's note reports it.
 *
 * Prints `listening <port>` when ready.
 */
const { createServer } = require('node:http');

const body = Buffer.from(JSON.stringify({ id: '00000000-0000-0000-0000-000000000000', padding: 'x'.repeat(640) }));

const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
