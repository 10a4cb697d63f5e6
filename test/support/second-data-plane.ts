/** The second data-plane cluster's URL (port 5434), which `npm test` starts for the fleet specs. */
export function secondDataPlaneUrl(): string {
  const url = process.env.TEST_SECOND_DATA_PLANE_URL;
  if (!url) throw new Error('TEST_SECOND_DATA_PLANE_URL is not set: run the tests with `npm test`');
  return url;
}
