#!/usr/bin/env bash
# Runs the Postman collection docs/userd.postman_collection.json with newman
# against a freshly built userd: a free 127.0.0.1 port, a scratch SQLite
# database, a bootstrap admin and no per-IP limits (everything comes from
# 127.0.0.1, and each pass registers users), and beside it
# test/softauthn/cmd/softauthn-server, the passkey authenticator that stands
# in for a browser in the "Second factors" folder (newman cannot sign);
# userd's relying party is the collection's web origin,
# http://localhost:8080 (rp id localhost). Exits with newman's status.
# `make postman` and .ci/run call it.
#
# Settings (environment):
#   NEWMAN              newman command to use; default: `newman` on PATH if it
#                       is version 6, else NEWMAN_VERSION installed from npm
#                       into NEWMAN_HOME (once; later runs reuse it)
#   NEWMAN_VERSION      default 6.2.2
#   NEWMAN_HOME         default ${XDG_CACHE_HOME:-$HOME/.cache}/userd/newman-$NEWMAN_VERSION
#   POSTMAN_ITERATIONS  default 2: the second pass shows that the collection
#                       runs again against the same server
#   POSTMAN_COUNTS      a file to write "OK FAILED" to: the request
#                       executions whose every check passed, and those with
#                       a failure (.ci/run adds them to its totals)
set -euo pipefail
cd "$(dirname "$0")/../.."

NEWMAN_VERSION="${NEWMAN_VERSION:-6.2.2}"
NEWMAN_HOME="${NEWMAN_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/userd/newman-$NEWMAN_VERSION}"
ITERATIONS="${POSTMAN_ITERATIONS:-2}"
ADMIN_EMAIL="postman-admin@example.com"
ADMIN_PASSWORD="postman admin passphrase"

say() { echo "postman: $*"; }

tmp="$(mktemp -d)"
pid=""
authn_pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "$authn_pid" ] && kill -0 "$authn_pid" 2>/dev/null; then kill -TERM "$authn_pid" 2>/dev/null || true; wait "$authn_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# newman: the one given, one on PATH, or one installed from the npm registry.
if [ -z "${NEWMAN:-}" ]; then
  if command -v newman >/dev/null && [[ "$(newman --version 2>/dev/null)" == 6.* ]]; then
    NEWMAN=newman
  else
    if [ "$("$NEWMAN_HOME/node_modules/.bin/newman" --version 2>/dev/null)" != "$NEWMAN_VERSION" ]; then
      command -v npm >/dev/null || { say "npm not found: install Node.js and npm to run newman"; exit 1; }
      say "installing newman@$NEWMAN_VERSION from npm into $NEWMAN_HOME"
      mkdir -p "$NEWMAN_HOME"
      npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$NEWMAN_HOME" "newman@$NEWMAN_VERSION"
    fi
    NEWMAN="$NEWMAN_HOME/node_modules/.bin/newman"
  fi
fi
ver="$($NEWMAN --version 2>/dev/null)" || { say "cannot run newman ($NEWMAN)"; exit 1; }
say "newman $ver"

say "building userd and softauthn-server"
go build -o "$tmp/userd" ./cmd/userd
go build -o "$tmp/softauthn-server" ./test/softauthn/cmd/softauthn-server

# A clean environment, so that no USERD_* setting of the caller's shell
# changes the defaults the collection checks; port 0 lets the kernel pick a
# free port, which the server logs.
env -i PATH="$PATH" HOME="$HOME" TMPDIR="${TMPDIR:-/tmp}" \
  USERD_HTTP_ADDR=127.0.0.1:0 \
  USERD_DB_DRIVER=sqlite USERD_DB_DSN="$tmp/userd.db" USERD_MAIL_DIR="$tmp/mail" \
  USERD_BOOTSTRAP_ADMIN_EMAIL="$ADMIN_EMAIL" USERD_BOOTSTRAP_ADMIN_PASSWORD="$ADMIN_PASSWORD" \
  USERD_AUTH_IP_LIMIT=0 USERD_REGISTER_IP_LIMIT=0 USERD_LOG_FORMAT=json \
  USERD_WEBAUTHN_RP_ID=localhost USERD_WEBAUTHN_ORIGINS=http://localhost:8080 \
  "$tmp/userd" serve >"$tmp/server.log" 2>&1 &
pid=$!

server_failed() {
  say "$1; the server's log:"
  sed 's/^/  /' "$tmp/server.log"
  exit 1
}
addr=""
for _ in $(seq 1 300); do
  kill -0 "$pid" 2>/dev/null || server_failed "userd exited at start"
  addr="$(sed -n 's/.*"msg":"userd listening".*"addr":"\([^"]*\)".*/\1/p' "$tmp/server.log" | head -n1)"
  [ -n "$addr" ] && curl -fsS -o /dev/null "http://$addr/readyz" 2>/dev/null && break
  addr=""
  sleep 0.1
done
[ -n "$addr" ] || server_failed "userd not ready after 30 s"
base="http://$addr"
say "userd ready at $base"

# The stand-in authenticator, on a free port it prints.
"$tmp/softauthn-server" -addr 127.0.0.1:0 >"$tmp/softauthn.log" 2>&1 &
authn_pid=$!
authn=""
for _ in $(seq 1 100); do
  kill -0 "$authn_pid" 2>/dev/null || { say "softauthn-server exited at start:"; sed 's/^/  /' "$tmp/softauthn.log"; exit 1; }
  authn="$(sed -n 's/^softauthn-server listening on \(http:[^ ]*\)$/\1/p' "$tmp/softauthn.log" | head -n1)"
  [ -n "$authn" ] && break
  sleep 0.1
done
[ -n "$authn" ] || { say "softauthn-server did not listen after 10 s"; exit 1; }
say "softauthn-server at $authn"

start=$(date +%s.%N)
set +e
$NEWMAN run docs/userd.postman_collection.json \
  --env-var "baseUrl=$base" \
  --env-var "adminEmail=$ADMIN_EMAIL" \
  --env-var "adminPassword=$ADMIN_PASSWORD" \
  --env-var "authenticatorUrl=$authn" \
  --iteration-count "$ITERATIONS" \
  --timeout-request 10000 --timeout 300000 \
  --reporters cli,json --reporter-json-export "$tmp/newman.json"
rc=$?
set -e
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

kill -TERM "$pid"
if ! wait "$pid"; then
  say "warning: userd did not exit cleanly on SIGTERM; the end of its log:"
  tail -n 5 "$tmp/server.log" | sed 's/^/  /'
fi
pid=""
kill -TERM "$authn_pid" 2>/dev/null || true
wait "$authn_pid" 2>/dev/null || true
authn_pid=""

# One line for the reader, and the counts for .ci/run: a request execution
# passes when every check of it (and of its scripts) passed.
if [ -s "$tmp/newman.json" ]; then
  counts="$(node -e '
    const run = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).run;
    // pm.sendRequest adds executions under the cursor of its item: count items.
    const key = (c) => (c ? c.iteration + ":" + c.ref : "?");
    const items = new Set(run.executions.map((e) => key(e.cursor)));
    const bad = new Set(run.failures.map((f) => key(f.cursor)));
    const failed = [...items].filter((k) => bad.has(k)).length;
    const orphan = [...bad].filter((k) => !items.has(k)).length;
    const s = run.stats;
    console.log(items.size - failed, failed + orphan, items.size, s.requests.total, s.assertions.total, s.assertions.failed, run.failures.length);
  ' "$tmp/newman.json")"
  read -r ok bad items requests assertions afailed failures <<<"$counts"
else
  ok=0 bad=1 items=0 requests=0 assertions=0 afailed=0 failures=1
fi
if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
say "newman $ver, $ITERATIONS iterations: $items requests run ($ok green, $bad with a failure; $requests HTTP requests with those of scripts), $assertions assertions ($afailed failed), ${elapsed}s"
if [ -n "${POSTMAN_COUNTS:-}" ]; then echo "$ok $bad" >"$POSTMAN_COUNTS"; fi
exit "$rc"
