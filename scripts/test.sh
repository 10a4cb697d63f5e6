#!/usr/bin/env bash
# The test command (`npm test`): unit and e2e specs against real PostgreSQL, Redis and a
# password-checking data-plane cluster (created once by scripts/dataplane-cluster.sh), and a second
# one on port 5434 for the fleet specs.
# Extra arguments go to jest (e.g. `npm test -- test/invites`).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DATA_PLANE_URL:-}" ]; then
  DATA_PLANE_URL="$(bash scripts/dataplane-cluster.sh | tail -n1)"
  export DATA_PLANE_URL
fi
# A second data-plane server for the fleet specs (two servers in one region).
if [ -z "${TEST_SECOND_DATA_PLANE_URL:-}" ]; then
  TEST_SECOND_DATA_PLANE_URL="$(DATAPLANE_NAME=dataplane2 DATAPLANE_PORT=5434 bash scripts/dataplane-cluster.sh | tail -n1)"
  export TEST_SECOND_DATA_PLANE_URL
fi
npx nest build >/dev/null
results="$(mktemp)"
trap 'rm -f "$results"' EXIT
status=0
npx jest --json --outputFile="$results" "$@" || status=$?
# One plain closing line that any CI reads: "Summary: N passed, N failed, N skipped".
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`Summary: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`);
' "$results" 2>/dev/null || true
exit "$status"
