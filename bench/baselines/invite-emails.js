#!/usr/bin/env node
/**
 * Baseline of invite e-mails: a raw nodemailer loop. `POST /send?count=N&tag=T` sends N invite-shaped
 * messages (same headers, same text and HTML bodies as the service's invite e-mail, with a code of
 * the same length) one after the other, through a transport made like the service's Mailer
 * (SMTP_URL, same timeouts, connections pooled and reused as there), to `T-<i>@example.test`, and
 * answers when the last one is accepted. No database, no queue, no HTTP per message.
 *
 * Environment: SMTP_URL, MAIL_FROM, PUBLIC_URL. Prints `listening <port>` when ready.
 */
const { createHash, randomBytes, randomUUID } = require('node:crypto');
const { createServer } = require('node:http');
const { createTransport } = require('nodemailer');

const env = process.env;
const from = env.MAIL_FROM ?? 'Database Control Plane <no-reply@localhost>';
const publicUrl = env.PUBLIC_URL.replace(/\/+$/, '');
const host = new URL(publicUrl).hostname;
const transport = createTransport(
  {
    url: env.SMTP_URL,
    pool: true,
    maxConnections: 4,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  },
  { from },
);
const escapeHtml = (s) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

function invite(to) {
  const code = randomBytes(24).toString('base64url');
  const proof = createHash('sha256').update(code).digest('base64url');
  const link = `${publicUrl}/invites/accept?code=${encodeURIComponent(code)}&proof=${proof}`;
  const workspace = 'Bench';
  const sender = 'bench-a@example.test';
  const expires = new Date(Date.now() + 7 * 86400_000).toISOString();
  return {
    to,
    subject: `You are invited to join ${workspace}`,
    text: `${sender} invited you to the workspace "${workspace}".\n\nJoin: ${link}\n\nThe invite expires on ${expires}.\n`,
    html: `<p>${escapeHtml(sender)} invited you to the workspace <strong>${escapeHtml(workspace)}</strong>.</p><p><a href="${escapeHtml(link)}">Join ${escapeHtml(workspace)}</a></p><p>The invite expires on ${expires}.</p>`,
    messageId: `<invite-${randomUUID()}@${host}>`,
    from,
  };
}

const server = createServer(async (req, res) => {
  const url = new URL(req.url, 'http://baseline');
  const count = Number(url.searchParams.get('count'));
  const tag = url.searchParams.get('tag') ?? 'raw';
  if (req.method !== 'POST' || url.pathname !== '/send' || !Number.isInteger(count) || count < 1) {
    res.writeHead(404).end();
    return;
  }
  try {
    for (let i = 0; i < count; i++) await transport.sendMail(invite(`${tag}-${i}@example.test`));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sent: count }));
  } catch (err) {
    res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: err.message }));
  }
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
