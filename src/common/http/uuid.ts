const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a path parameter can be an id at all (anything else is simply "not found"). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
