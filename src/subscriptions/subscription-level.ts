/** The subscription levels a workspace can hold. */
export enum SubscriptionLevel {
  Free = 'FREE',
  Pro = 'PRO',
}

export const ALL_SUBSCRIPTION_LEVELS: SubscriptionLevel[] = Object.values(SubscriptionLevel);

export const LEVEL_MESSAGE = `level must be one of: ${ALL_SUBSCRIPTION_LEVELS.join(', ')}`;

/** Levels are matched without regard to case or surrounding spaces ("pro" is PRO). */
export const normalizeLevel = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' ? value.trim().toUpperCase() : value;
