#!/usr/bin/env bash
# Side by side with GoTrue (supabase/auth), the peer of issue 17, by wrk:
# one service at a time on 127.0.0.1 and PostgreSQL, PEER_USERS users each,
# five loads (read of the signed-in user, the same read over PEER_MANY
# distinct tokens, refresh with rotation, password login, admin list of
# users), then one table with req/s, p99, errors, CPU and RSS, and the
# ratios against the issues' goals (read >= 10x, read-many >= 5x, refresh
# >= 10x; RSS idle, after reads and after refreshes below the peer's).
#
# read-many (issue 30): after the refreshes, PEER_MANY_SESSIONS further
# users (those after the pool) log in once each, and their sessions are
# refreshed in turn, each refresh presenting the token the previous one
# rotated to, until there are PEER_MANY distinct access tokens (mint.lua,
# by wrk; not measured). wrk's threads then share the tokens out, each
# going round its own part in order (read.lua with PEER_SPLIT=1), so that
# a token comes back only after the others have all been read: userd's
# verified-token cache (10,000) never hits. The runner checks the count of
# distinct tokens and that the first minted outlive the load by 60 s.
#
#   bench/peer/run.sh USERD_BINARY POSTGRES_DSN [GOTRUE_BINARY]
#
# POSTGRES_DSN (URL form) names a scratch database that the runner owns: it
# creates and drops the schemas peer_userd and auth in it. Without
# GOTRUE_BINARY only userd runs. GoTrue is built by hand, outside this
# repository (docs/performance.md); its migrations are taken from
# GOTRUE_MIGRATIONS, by default the migrations directory next to the binary.
#
# Settings (environment): PEER_USERS (10000), PEER_POOL (300 users logged in
# beforehand, whose tokens the loads use), PEER_MANY (20000 tokens for
# read-many), PEER_MANY_SESSIONS (500 sessions they come from: PEER_USERS
# must cover PEER_POOL + PEER_MANY_SESSIONS), PEER_DURATION (10s, in s),
# PEER_CONNECTIONS (32), PEER_THREADS (2), PEER_USERD_PORT (18180),
# PEER_GOTRUE_PORT (18190), PEER_GOTRUE_IDLE_POOL (PEER_CONNECTIONS: see
# run_gotrue), PEER_SETTLE (10s: the quiet after the pool's logins before
# the idle RSS is read), PEER_SERVICES ("userd gotrue": one alone to
# repeat it), PEER_OUT (a new directory under /tmp: wrk's
# full output and the servers' logs).
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
	sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
userd_bin=$(realpath "$1")
dsn=$2
gotrue_bin=${3:+$(realpath "$3")}
here=$(cd "$(dirname "$0")" && pwd)

users=${PEER_USERS:-10000}
pool=${PEER_POOL:-300}
many=${PEER_MANY:-20000}
many_sessions=${PEER_MANY_SESSIONS:-500}
duration=${PEER_DURATION:-10s}
connections=${PEER_CONNECTIONS:-32}
threads=${PEER_THREADS:-2}
userd_port=${PEER_USERD_PORT:-18180}
gotrue_port=${PEER_GOTRUE_PORT:-18190}
settle=${PEER_SETTLE:-10s}
services=${PEER_SERVICES:-userd gotrue}
out=${PEER_OUT:-$(mktemp -d /tmp/peer-XXXXXX)}
mkdir -p "$out"
[[ $duration =~ ^[0-9]+s$ ]] || { echo "run.sh: PEER_DURATION must be seconds (10s), not $duration" >&2; exit 1; }
((pool + many_sessions <= users && many_sessions >= threads && many >= many_sessions)) || {
	echo "run.sh: want PEER_POOL + PEER_MANY_SESSIONS <= PEER_USERS, PEER_THREADS <= PEER_MANY_SESSIONS <= PEER_MANY" >&2; exit 1; }

for tool in wrk psql curl openssl; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing (wrk: apt-get install wrk)" >&2; exit 1; }
done
[[ -x $userd_bin ]] || { echo "run.sh: $userd_bin is not an executable" >&2; exit 1; }
if [[ -n $gotrue_bin ]]; then
	gotrue_migrations=${GOTRUE_MIGRATIONS:-$(dirname "$gotrue_bin")/migrations}
	[[ -x $gotrue_bin && -d $gotrue_migrations ]] || {
		echo "run.sh: want an executable GoTrue binary and its migrations ($gotrue_migrations)" >&2; exit 1; }
fi

# Every user of both services has this password, hashed once with bcrypt at
# cost 10 (GoTrue's default cost): seeding stores the hash as it is. A
# benchmark's password, of a scratch database, and nothing else.
password='Peer-bench-passphrase-42'
bcrypt_hash='$2a$10$72aUWQu5RMwnreJnOsYxf.8rpvQThlb7xS0x18nnVaQG5SHyXp/bm'
admin_email='peer-admin@example.com'
admin_password='Peer-admin-passphrase-42'
gotrue_jwt_secret=$(openssl rand -hex 32)

# with_search_path DSN SCHEMA: the DSN with search_path set (both services
# pass unknown URL parameters on as run-time parameters).
with_search_path() {
	case $1 in
	*\?*) echo "$1&search_path=$2" ;;
	*) echo "$1?search_path=$2" ;;
	esac
}

sql() { PGOPTIONS='-c client_min_messages=warning' psql "$dsn" -q -X -v ON_ERROR_STOP=1 "$@"; }

pid=
stop_server() {
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
}
mint_pid=
cleanup() {
	[[ -z $mint_pid ]] || kill -TERM "$mint_pid" 2>/dev/null || true
	stop_server
	sql -c 'DROP SCHEMA IF EXISTS peer_userd CASCADE; DROP SCHEMA IF EXISTS auth CASCADE' 2>/dev/null || true
}
trap cleanup EXIT

wait_ready() { # URL
	for _ in $(seq 600); do
		kill -0 "$pid" 2>/dev/null || { echo "run.sh: the server exited during start:" >&2; tail -20 "$log" >&2; exit 1; }
		curl -fsS --max-time 2 -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "run.sh: $1 not ready after 60 s" >&2
	exit 1
}

port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null || { echo "run.sh: port $1 is taken" >&2; exit 1; }
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
peak_rss_mb() { awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status"; }
rss_mb() { awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status"; }

# cold BINARY: drops the page cache of BINARY (which nothing runs now), so
# that each service starts as after a reboot, reading its binary anew.
# A binary just written (by a build, `make peerload`'s among them) sits in
# the page cache as the writer left it, in large folios that a process's
# faults map whole: userd started from one idled with twice the file
# pages (RssFile 16 MiB against 7, docs/performance.md "Speed, fourth
# pass"), the RSS figures then told when the binary was built. The file
# is synced first: the kernel drops no page still dirty, and straight
# after `go build` (whose linker writes through a mapping) dd alone left
# the same 16 MiB ("Speed, tenth pass").
cold() { sync "$1" && dd if="$1" iflag=nocache count=0 status=none; }

# rss SERVICE PHASE: appends the server's RSS now (or, for the phase
# "peak", its high-water mark) to $out/rss.
rss() {
	if [[ $2 == peak ]]; then echo "$1 $2 $(peak_rss_mb)"; else echo "$1 $2 $(rss_mb)"; fi >>"$out/rss"
}

# login_users URL BODY_FMT ACCESS_KEY REFRESH_KEY FIRST COUNT FILE: logs in
# peerFIRST.. (COUNT users), four at a time, and writes "email access
# refresh" lines to FILE.
login_users() {
	local url=$1 fmt=$2 akey=$3 rkey=$4 first=$5 count=$6 file=$7
	seq "$first" $((first + count - 1)) | xargs -P4 -I{} sh -c '
		r=$(curl -sS --max-time 30 -H "Content-Type: application/json" -d "$(printf "$2" "peer{}@example.com" "$3")" "$1") || exit 1
		a=$(printf "%s" "$r" | sed -n "s/.*\"$4\":\"\([^\"]*\)\".*/\1/p")
		f=$(printf "%s" "$r" | sed -n "s/.*\"$5\":\"\([^\"]*\)\".*/\1/p")
		[ -n "$a" ] && [ -n "$f" ] || { echo "login of peer{}: $(printf "%s" "$r" | head -c 200)" >&2; exit 1; }
		printf "peer{}@example.com %s %s\n" "$a" "$f"' _ "$url" "$fmt" "$password" "$akey" "$rkey" >"$file"
	[[ $(wc -l <"$file") -eq $count ]] || { echo "run.sh: logins failed (peer$first and the $((count - 1)) after)" >&2; exit 1; }
}

# login_pool URL BODY_FMT ACCESS_KEY REFRESH_KEY: logs in peer1..peer$pool
# and writes $dir/emails, $dir/access and $dir/refresh.
login_pool() {
	login_users "$@" 1 "$pool" "$dir/pool"
	awk '{print $1}' "$dir/pool" >"$dir/emails"
	awk '{print $2}' "$dir/pool" >"$dir/access"
	awk '{print $3}' "$dir/pool" >"$dir/refresh"
}

# jwt_exp TOKEN: the exp claim of a JWT.
jwt_exp() {
	local p=${1#*.}
	p=${p%%.*}
	p=$(printf '%s' "$p" | tr -- '-_' '+/')
	while ((${#p} % 4)); do p+='='; done
	printf '%s\n' "$(printf '%s' "$p" | openssl base64 -d -A)" | sed -n 's/.*"exp":\([0-9]*\).*/\1/p'
}

# mint_many SERVICE LOGIN_URL BODY_FMT ACCESS_KEY REFRESH_KEY REFRESH_PATH
# IDLE_PATH BASE: logs in the $many_sessions users after the pool, then
# refreshes their sessions in turn (mint.lua) until $dir/many holds $many
# distinct access tokens; fails if it does not, or if the first of them
# would expire within the load and a minute.
mint_many() {
	local service=$1 url=$2 fmt=$3 akey=$4 rkey=$5 rpath=$6 idle=$7 base=$8
	local t0=$SECONDS
	login_users "$url" "$fmt" "$akey" "$rkey" $((pool + 1)) "$many_sessions" "$dir/many-sessions"
	awk '{print $3}' "$dir/many-sessions" >"$dir/many-refresh"
	local per=$(((many + many_sessions - 1) / many_sessions)) prefix=$dir/mint t1=$SECONDS k
	rm -f "$prefix".*
	env LUA_PATH="$here/?.lua;;" PEER_THREADS="$threads" PEER_PATH="$rpath" PEER_IDLE_PATH="$idle" \
		PEER_ACCESS_KEY="$akey" PEER_KEY="$rkey" PEER_REFRESH="$dir/many-refresh" PEER_PER="$per" \
		PEER_MINT_OUT="$prefix" \
		wrk -t"$threads" -c"$connections" -d600s --timeout 30s -s "$here/mint.lua" "$base" >"$dir/wrk-mint.txt" 2>&1 &
	mint_pid=$!
	# wrk sleeps its whole -d unless interrupted: end it once every thread
	# has its tokens (each wrote its .done), or when it ends by itself.
	while kill -0 "$mint_pid" 2>/dev/null; do
		for ((k = 0; k < threads; k++)); do [[ -e $prefix.$k.done ]] || break; done
		((k < threads)) || { kill -INT "$mint_pid" 2>/dev/null || true; break; }
		sleep 0.2
	done
	wait "$mint_pid" || true
	mint_pid=
	sed -n '/unexpected answers/,$p' "$dir/wrk-mint.txt" >&2
	grep -q '^PEER .* errors=0 socket_errors=0$' "$dir/wrk-mint.txt" ||
		{ echo "run.sh: $service: the minting refreshes had errors (see $dir/wrk-mint.txt)" >&2; exit 1; }
	local distinct
	distinct=$(for ((k = 0; k < threads; k++)); do cat "$prefix.$k"; done | awk '!seen[$0]++' | tee "$dir/many-all" | wc -l)
	((distinct >= many)) || { echo "run.sh: $service: minted $distinct distinct access tokens of $many (see $dir/wrk-mint.txt)" >&2; exit 1; }
	head -n "$many" "$dir/many-all" >"$dir/many"
	local first exp secs=${duration%s}
	first=$(for ((k = 0; k < threads; k++)); do head -1 "$prefix.$k"; done)
	exp=$(for t in $first; do jwt_exp "$t"; done | sort -n | head -1)
	[[ -n $exp ]] || { echo "run.sh: $service: no exp claim in a minted token" >&2; exit 1; }
	((exp - $(date +%s) > secs + 60)) || {
		echo "run.sh: $service: the first minted tokens expire $((exp - $(date +%s))) s from now, within the ${secs} s load and a minute" >&2; exit 1; }
	echo "$service: $many_sessions sessions logged in in $((t1 - t0)) s; $distinct distinct access tokens minted in $((SECONDS - t1)) s by" \
		"$(awk '/^MINT / {for (i = 2; i <= NF; i++) {split($i, kv, "="); n[kv[1]] += kv[2]}} END {printf "%d refreshes (%d answers repeated a token)", n["refreshes"], n["repeated"]}' "$dir/wrk-mint.txt");" \
		"the first expire in $((exp - $(date +%s))) s" >&2
}

# load SERVICE NAME SCRIPT URL [VAR=VALUE...]: one wrk run; appends a row
# to $out/rows: service load rps p99_ms errors cpu%.
load() {
	local service=$1 name=$2 script=$3 url=$4
	shift 4
	local before after res line
	before=$(cpu_ticks)
	res=$(env LUA_PATH="$here/?.lua;;" PEER_THREADS="$threads" "$@" \
		wrk -t"$threads" -c"$connections" -d"$duration" --timeout 10s --latency -s "$here/$script" "$url")
	after=$(cpu_ticks)
	printf '%s\n' "$res" >"$dir/wrk-$name.txt"
	line=$(printf '%s\n' "$res" | grep '^PEER ') || { echo "run.sh: wrk printed no result for $service $name:" >&2; echo "$res" >&2; exit 1; }
	printf '%s\n' "$res" | sed -n '/unexpected answers/,$p' >&2
	eval "${line#PEER }"
	local secs=${duration%s}
	# shellcheck disable=SC2154 # set by the eval of wrk's PEER line
	echo "$service $name $rps $p99_ms $((errors + socket_errors)) $(awk -v t=$((after - before)) -v s="$secs" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.0f", 100 * t / hz / s}')" >>"$out/rows"
}

run_userd() {
	dir=$out/userd
	mkdir -p "$dir"
	log=$dir/server.log
	port_free "$userd_port"
	sql -c 'DROP SCHEMA IF EXISTS peer_userd CASCADE; CREATE SCHEMA peer_userd'
	export USERD_DB_DRIVER=postgres USERD_DB_DSN USERD_SECRET_KEY USERD_HTTP_ADDR=127.0.0.1:$userd_port \
		USERD_AUTH_IP_LIMIT=0 USERD_LOG_LEVEL=warn \
		USERD_BOOTSTRAP_ADMIN_EMAIL=$admin_email USERD_BOOTSTRAP_ADMIN_PASSWORD=$admin_password
	USERD_DB_DSN=$(with_search_path "$dsn" peer_userd)
	USERD_SECRET_KEY=$(openssl rand -base64 32)
	local t0=$SECONDS
	{
		echo 'name,email,password_hash,profiles'
		seq "$users" | awk -v h="$bcrypt_hash" '{printf "Peer %d,peer%d@example.com,%s,ROLE_CUSTOMER\n", $1, $1, h}'
	} >"$dir/users.csv"
	# The import takes only hashes no costlier to check than the configured
	# argon2id (docs/operations.md, "Importing users"): bcrypt cost 10 needs
	# m×t of 131072, so the import runs with m=64 MiB. The server keeps the
	# defaults; the pool's logins below rehash the 300 accounts the loads use.
	USERD_ARGON2_MEMORY_KIB=65536 "$userd_bin" users import --batch-size 5000 "$dir/users.csv" >"$dir/import.log" 2>&1 ||
		{ echo "run.sh: userd users import failed:" >&2; tail -5 "$dir/import.log" >&2; exit 1; }
	cold "$userd_bin"
	"$userd_bin" serve >"$log" 2>&1 &
	pid=$!
	wait_ready "http://127.0.0.1:$userd_port/readyz"
	local base=http://127.0.0.1:$userd_port
	login_pool "$base/auth/login" '{"email":"%s","password":"%s"}' accessToken refreshToken
	local admin
	admin=$(curl -sS --max-time 30 -H 'Content-Type: application/json' \
		-d "{\"email\":\"$admin_email\",\"password\":\"$admin_password\"}" "$base/auth/login" |
		sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')
	echo "userd: $users users imported, $pool logged in, in $((SECONDS - t0)) s" >&2
	sleep "$settle"
	rss userd idle
	load userd read read.lua "$base" PEER_PATH=/api/users/me PEER_ACCESS="$dir/access"
	rss userd reads
	load userd refresh refresh.lua "$base" PEER_PATH=/auth/refreshtoken PEER_KEY=refreshToken PEER_REFRESH="$dir/refresh"
	rss userd refreshes
	mint_many userd "$base/auth/login" '{"email":"%s","password":"%s"}' accessToken refreshToken \
		/auth/refreshtoken /healthz "$base"
	load userd read-many read.lua "$base" PEER_PATH=/api/users/me PEER_ACCESS="$dir/many" PEER_SPLIT=1
	load userd login login.lua "$base" PEER_PATH=/auth/login PEER_PASSWORD="$password" PEER_EMAILS="$dir/emails"
	load userd list list.lua "$base" PEER_PATH='/api/users?limit=50' PEER_TOKEN="$admin"
	rss userd peak
	stop_server
	unset USERD_DB_DRIVER USERD_DB_DSN USERD_SECRET_KEY USERD_HTTP_ADDR USERD_AUTH_IP_LIMIT USERD_LOG_LEVEL \
		USERD_BOOTSTRAP_ADMIN_EMAIL USERD_BOOTSTRAP_ADMIN_PASSWORD
	sql -c 'DROP SCHEMA peer_userd CASCADE'
}

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

run_gotrue() {
	dir=$out/gotrue
	mkdir -p "$dir"
	log=$dir/server.log
	port_free "$gotrue_port"
	sql -c 'DROP SCHEMA IF EXISTS auth CASCADE; CREATE SCHEMA auth'
	local base=http://127.0.0.1:$gotrue_port
	# GoTrue keeps no idle database connections beyond database/sql's two
	# unless told (GOTRUE_DB_MAX_IDLE_POOL_SIZE): under 32 connections it
	# then opens and closes a PostgreSQL connection for most requests and
	# reads ~50/s instead of ~1,400/s. It gets as many idle connections as
	# wrk has, as a deployment under load would configure. Its defaults
	# otherwise: bcrypt cost 10, refresh token rotation on, reuse interval
	# 0 s; its per-IP limits apply only behind GOTRUE_RATE_LIMIT_HEADER or
	# Sb-Forwarded-For, neither of which the load sends, and the token
	# limit is raised anyway.
	local -a env=(
		GOTRUE_DB_DRIVER=postgres DB_NAMESPACE=auth
		"GOTRUE_DB_DATABASE_URL=$(with_search_path "$dsn" auth)"
		"GOTRUE_DB_MIGRATIONS_PATH=$gotrue_migrations"
		"GOTRUE_JWT_SECRET=$gotrue_jwt_secret" GOTRUE_JWT_EXP=3600 GOTRUE_JWT_AUD=authenticated
		GOTRUE_JWT_ADMIN_ROLES=supabase_admin,service_role GOTRUE_JWT_DEFAULT_GROUP_NAME=authenticated
		"API_EXTERNAL_URL=$base" GOTRUE_SITE_URL=http://127.0.0.1:3000 GOTRUE_API_HOST=127.0.0.1 "PORT=$gotrue_port"
		GOTRUE_LOG_LEVEL=warn GOTRUE_MAILER_AUTOCONFIRM=true
		GOTRUE_RATE_LIMIT_TOKEN_REFRESH=1000000000 GOTRUE_RATE_LIMIT_VERIFY=1000000000
		"GOTRUE_DB_MAX_IDLE_POOL_SIZE=${PEER_GOTRUE_IDLE_POOL:-$connections}"
	)
	local t0=$SECONDS
	(cd "$dir" && env "${env[@]}" "$gotrue_bin" migrate) >"$dir/migrate.log" 2>&1 ||
		{ echo "run.sh: GoTrue's migrate failed:" >&2; tail -5 "$dir/migrate.log" >&2; exit 1; }
	# Users as GoTrue's own sign-up leaves them, confirmed, with their email
	# identity; the token columns empty rather than NULL, as GoTrue writes
	# them (it cannot scan a NULL there).
	sql -v hash="$bcrypt_hash" -v n="$users" <<'EOF'
SET search_path = auth;
INSERT INTO users (instance_id, id, aud, role, email, encrypted_password, email_confirmed_at,
  confirmation_token, recovery_token, email_change_token_new, email_change,
  raw_app_meta_data, raw_user_meta_data, created_at, updated_at)
SELECT '00000000-0000-0000-0000-000000000000', gen_random_uuid(), 'authenticated', 'authenticated',
  'peer' || i || '@example.com', :'hash', now(), '', '', '', '',
  '{"provider":"email","providers":["email"]}', '{}', now(), now()
FROM generate_series(1, :n) AS i;
INSERT INTO identities (provider_id, user_id, identity_data, provider, created_at, updated_at)
SELECT id::text, id, jsonb_build_object('sub', id::text, 'email', email, 'email_verified', true), 'email', now(), now()
FROM users;
ANALYZE users; ANALYZE identities;
EOF
	cold "$gotrue_bin"
	(cd "$dir" && exec env "${env[@]}" "$gotrue_bin" serve) >"$log" 2>&1 &
	pid=$!
	wait_ready "$base/health"
	login_pool "$base/token?grant_type=password" '{"email":"%s","password":"%s"}' access_token refresh_token
	# The admin is GoTrue's service_role: an HS256 JWT under its secret.
	local now h p admin
	now=$(date +%s)
	h=$(printf '{"alg":"HS256","typ":"JWT"}' | b64url)
	p=$(printf '{"role":"service_role","aud":"authenticated","iat":%d,"exp":%d}' "$now" $((now + 3600)) | b64url)
	admin=$h.$p.$(printf '%s.%s' "$h" "$p" | openssl dgst -sha256 -hmac "$gotrue_jwt_secret" -binary | b64url)
	echo "gotrue: $users users inserted, $pool logged in, in $((SECONDS - t0)) s" >&2
	sleep "$settle"
	rss gotrue idle
	load gotrue read read.lua "$base" PEER_PATH=/user PEER_ACCESS="$dir/access"
	rss gotrue reads
	load gotrue refresh refresh.lua "$base" PEER_PATH='/token?grant_type=refresh_token' PEER_KEY=refresh_token PEER_REFRESH="$dir/refresh"
	rss gotrue refreshes
	mint_many gotrue "$base/token?grant_type=password" '{"email":"%s","password":"%s"}' access_token refresh_token \
		'/token?grant_type=refresh_token' /health "$base"
	load gotrue read-many read.lua "$base" PEER_PATH=/user PEER_ACCESS="$dir/many" PEER_SPLIT=1
	load gotrue login login.lua "$base" PEER_PATH='/token?grant_type=password' PEER_PASSWORD="$password" PEER_EMAILS="$dir/emails"
	load gotrue list list.lua "$base" PEER_PATH='/admin/users?page=1&per_page=50' PEER_TOKEN="$admin"
	rss gotrue peak
	stop_server
	sql -c 'DROP SCHEMA auth CASCADE'
}

: >"$out/rows"
: >"$out/rss"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); wrk -t$threads -c$connections -d$duration, $users users, $pool in the pool; output in $out" >&2
[[ $services != *userd* ]] || run_userd
[[ -z $gotrue_bin || $services != *gotrue* ]] || run_gotrue

awk -v ok_read=10 -v ok_many=5 -v ok_refresh=10 '
FNR == NR { rss[$1, $2] = $3; next }
{ rps[$1, $2] = $3; p99[$1, $2] = $4; err[$1, $2] = $5; cpu[$1, $2] = $6; seen[$1] = 1 }
END {
	printf "%-8s %-9s %10s %10s %7s %6s\n", "service", "load", "req/s", "p99 ms", "errors", "CPU%"
	n = split("userd gotrue", svc, " "); m = split("read read-many refresh login list", ld, " ")
	for (i = 1; i <= n; i++) if (seen[svc[i]]) {
		for (j = 1; j <= m; j++) {
			k = svc[i] SUBSEP ld[j]
			printf "%-8s %-9s %10.1f %10.2f %7d %6d%s\n", svc[i], ld[j], rps[k], p99[k], err[k], cpu[k], err[k] ? "  errors: not a result" : ""
		}
		printf "%-8s RSS MB: idle %d, after reads %d, after refreshes %d, peak %d\n", svc[i],
			rss[svc[i], "idle"], rss[svc[i], "reads"], rss[svc[i], "refreshes"], rss[svc[i], "peak"]
	}
	if (!seen["gotrue"] || !seen["userd"]) exit
	print ""
	for (j = 1; j <= m; j++) {
		r = rps["gotrue", ld[j]] ? rps["userd", ld[j]] / rps["gotrue", ld[j]] : 0
		goal = ld[j] == "read" ? ok_read : ld[j] == "read-many" ? ok_many : ld[j] == "refresh" ? ok_refresh : 0
		printf "%-9s userd/gotrue %6.1fx%s\n", ld[j], r, goal ? sprintf("  goal >= %dx: %s", goal, r >= goal ? "met" : "MISSED") : ""
	}
	q = split("idle reads refreshes peak", ph, " ")
	for (j = 1; j <= q; j++) {
		u = rss["userd", ph[j]]; g = rss["gotrue", ph[j]]
		printf "RSS %-9s userd %d MB vs gotrue %d MB%s\n", ph[j], u, g, ph[j] == "peak" ? "" : sprintf("  goal below: %s", u < g ? "met" : "MISSED")
	}
}' "$out/rss" "$out/rows"

if awk '$5 > 0 { bad = 1 } END { exit !bad }' "$out/rows"; then
	echo "run.sh: some loads had errors (above): their figures are not a result" >&2
	exit 1
fi
