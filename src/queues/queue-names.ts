/** One Bull queue per purpose. */
export const Queues = {
  DatabaseLifecycle: 'database-lifecycle',
  CredentialExpiry: 'credential-expiry',
  InviteEmail: 'invite-email',
  ComputeLifecycle: 'compute-lifecycle',
  Billing: 'billing',
  Telemetry: 'telemetry',
} as const;

export type QueueName = (typeof Queues)[keyof typeof Queues];
export const ALL_QUEUES: QueueName[] = Object.values(Queues);
