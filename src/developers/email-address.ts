import type { isEmail } from 'class-validator';

/**
 * The e-mail addresses the service takes (invitees, accounts): validator.js's, without a quoted
 * local part. `"jane"@example.com`, `" jane"@example.com` and the like are delivered to
 * jane@example.com (the mailer unquotes them), so each would be another spelling of one mailbox:
 * past the member and pending-invite checks, the per-address invite limit and the one account per
 * address, all of which compare the address as stored.
 */
export const EMAIL_ADDRESS_RULE: Parameters<typeof isEmail>[1] = { blacklisted_chars: '"' };

export const EMAIL_ADDRESS_MESSAGE = 'must be a valid e-mail address (no quoted local part)';
