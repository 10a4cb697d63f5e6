/** Jobs of the `credential-expiry` queue. */
export const CredentialJobs = {
  Expire: 'expire',
} as const;

export interface ExpireCredentialJobData {
  credentialId: string;
}

/**
 * One job per credential and expiry moment: a later rotation that brings the moment forward gets
 * its own job instead of colliding with the one already waiting for the later moment.
 */
export const expireJobId = (credentialId: string, expiresAt: Date) => `expire:${credentialId}:${expiresAt.getTime()}`;
