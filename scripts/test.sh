#!/usr/bin/env bash
# The test command (`npm test`): unit and e2e specs against real PostgreSQL, Redis and a
# password-checking data-plane cluster (created once by scripts/dataplane-cluster.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DATA_PLANE_URL:-}" ]; then
  DATA_PLANE_URL="$(bash scripts/dataplane-cluster.sh | tail -n1)"
  export DATA_PLANE_URL
fi
npx nest build >/dev/null
exec npx jest "$@"
