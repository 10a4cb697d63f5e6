/** Jobs of the `invite-email` queue. */
export const SEND_INVITE_EMAIL = 'send';

export interface InviteEmailJobData {
  inviteId: string;
}
