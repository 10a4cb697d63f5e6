#!/usr/bin/env bash
# Creates (once) and starts a second, password-checking PostgreSQL cluster used as the data plane
# in tests: this machine's main cluster trusts every local login, which would make credential
# passwords meaningless. Prints the admin URL (DATA_PLANE_URL) on its last line.
# More clusters (a second data-plane server of a region, for the fleet tests): give each a name and
# a port, e.g. `DATAPLANE_NAME=dataplane2 DATAPLANE_PORT=5434 bash scripts/dataplane-cluster.sh`.
set -euo pipefail
NAME="${DATAPLANE_NAME:-dataplane}"
PORT="${DATAPLANE_PORT:-5433}"
STATE_DIR="${XDG_STATE_HOME:-$HOME/.local/state}/db-control-plane"
URL_FILE="$STATE_DIR/dataplane-$PORT.url"
VERSION="$(ls /etc/postgresql | sort -V | tail -n1)"
CONF_DIR="/etc/postgresql/$VERSION/$NAME"

if [ ! -d "$CONF_DIR" ]; then
  pg_createcluster "$VERSION" "$NAME" --port "$PORT" >/dev/null
fi
cat > "$CONF_DIR/pg_hba.conf" <<HBA
local all postgres peer
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
HBA
chown postgres:postgres "$CONF_DIR/pg_hba.conf"
if ! pg_lsclusters -h | awk -v v="$VERSION" -v n="$NAME" '$1==v && $2==n {print $4}' | grep -q online; then
  pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$NAME" start
else
  pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$NAME" reload
fi

# Query-performance insights read pg_stat_statements, which must be preloaded: configured once in
# a conf.d include, the cluster restarted only when the running server does not have it loaded yet.
STATEMENTS_CONF="$CONF_DIR/conf.d/pg_stat_statements.conf"
if [ ! -f "$STATEMENTS_CONF" ]; then
  mkdir -p "$CONF_DIR/conf.d"
  printf "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = top\n" > "$STATEMENTS_CONF"
  chown postgres:postgres "$STATEMENTS_CONF"
fi
if ! runuser -u postgres -- psql -p "$PORT" -qAtc 'SHOW shared_preload_libraries' | grep -q pg_stat_statements; then
  pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$NAME" restart
fi
runuser -u postgres -- psql -p "$PORT" -qAtc 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' >/dev/null

mkdir -p "$STATE_DIR" && chmod 700 "$STATE_DIR"
if [ -f "$URL_FILE" ] && PGCONNECT_TIMEOUT=5 psql "$(cat "$URL_FILE")" -qAtc 'select 1' >/dev/null 2>&1; then
  cat "$URL_FILE"; exit 0
fi
PASSWORD="$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 32)"
runuser -u postgres -- psql -p "$PORT" -qAtc "ALTER ROLE postgres PASSWORD '$PASSWORD'" >/dev/null
echo "postgres://postgres:$PASSWORD@127.0.0.1:$PORT/postgres" > "$URL_FILE"
chmod 600 "$URL_FILE"
cat "$URL_FILE"
