#!/usr/bin/env bash
# The topology of compose.yaml without Docker: Redis, two gateway instances (`npm start`) sharing it, and
# nginx in front of them with deploy/nginx.conf; then scripts/cluster-check.mjs through nginx, a rolling
# restart under load (each instance in turn: SIGTERM while runs stream from it, marked down in nginx while
# it drains, start again, ready, back in nginx's rotation, while scripts/rolling-restart.mjs sends runs through nginx without pause: not one
# may fail, and the runs in flight at each SIGTERM must finish), a failover check (one instance gone,
# nginx serves everything from the other), and SIGTERM to both instances, which must exit 0.
#
#   bash scripts/cluster-local.sh [cluster-check options]
#
# Needs redis-server and nginx on PATH (or in /usr/sbin); installs nothing. Runs everything as the current
# user on 127.0.0.1 and free ports, with every file (nginx's pid, logs and temp files, Redis' data) in one
# temporary directory, removed at the end (kept, with its path printed, when something failed, or with
# KEEP_TMP=1). Builds the gateway first (npm run build) when dist/ is missing or older than the sources,
# once, so that the two instances do not both build at start-up.
#
# Environment: as for `npm start` (a provider key selects provider mode; demo mode otherwise), plus
#   LOG_LEVEL           the gateways' log level (default info; logs go to the temporary directory)
#   READY_TIMEOUT_S     how long to wait for each process to be ready (default 60)
#   SHUTDOWN_GRACE_MS   passed to the gateways (default 25000, as in compose.yaml)
#   ROLLING_WORKERS     runs the load sends at once during the rolling restart (default 6)
#   DRAIN_CHECK=off     skip the rolling restart
#   REDIS_CLUSTER=1     a Redis Cluster instead of one Redis server: three primaries with a replica each (six
#                       redis-server processes, joined by redis-cli --cluster create), named to the gateways in
#                       REDIS_CLUSTER_NODES
#   NGINX_CONF=<file>   another nginx configuration with the same markers (default deploy/nginx.conf), e.g. an
#                       older one, to compare its rolling restart
#   KEEP_TMP=1          keep the temporary directory
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

say() { printf '== %s\n' "$*"; }
fail() { printf 'cluster-local: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------------
# Prerequisites

find_tool() {
  command -v "$1" 2>/dev/null && return 0
  for dir in /usr/sbin /usr/local/sbin /sbin; do
    if [ -x "$dir/$1" ]; then echo "$dir/$1"; return 0; fi
  done
  return 1
}
missing=()
redis_server=$(find_tool redis-server) || missing+=(redis-server)
if [ "${REDIS_CLUSTER:-}" = 1 ]; then redis_cli=$(find_tool redis-cli) || missing+=(redis-cli); fi
nginx=$(find_tool nginx) || missing+=(nginx-light)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "cluster-local: missing ${missing[*]}. On Debian or Ubuntu: apt-get install -y redis-server nginx-light (or nginx)" >&2
  exit 1
fi

# ---------------------------------------------------------------------------------------------------
# Clean-up: every process this script started, by its id; the temporary directory.

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cluster-local.XXXXXX")
declare -A pids=()
status=1

stop_process() { # name, signal, seconds to wait before SIGKILL
  local name=$1 signal=$2 seconds=$3 pid=${pids[$1]:-}
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill "-$signal" "$pid" 2>/dev/null || true
    local waited=0
    while kill -0 "$pid" 2>/dev/null && [ $waited -lt $((seconds * 10)) ]; do sleep 0.1; waited=$((waited + 1)); done
    if kill -0 "$pid" 2>/dev/null; then
      echo "cluster-local: $name (pid $pid) still running after ${seconds}s: SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || true
  unset "pids[$name]"
}

cleanup() {
  trap - EXIT INT TERM
  stop_process load TERM 10
  for name in gateway-a gateway-b; do stop_process "$name" TERM 30; done
  stop_process nginx TERM 10
  stop_process redis TERM 10
  for node in 1 2 3 4 5 6; do stop_process "redis-$node" TERM 10; done
  if [ "$status" -ne 0 ]; then
    for log in "$tmp"/*.log; do
      [ -s "$log" ] || continue
      echo "---- last lines of $log" >&2
      tail -n 25 "$log" | cut -c1-400 >&2
    done
  fi
  if [ "$status" -eq 0 ] && [ "${KEEP_TMP:-}" != 1 ]; then
    rm -rf "$tmp"
  else
    echo "cluster-local: logs and configuration kept in $tmp" >&2
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'status=130; exit 130' INT TERM

# ---------------------------------------------------------------------------------------------------
# Helpers

free_port() {
  node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

ready_timeout=${READY_TIMEOUT_S:-60}

# Waits until GET <url> answers 200, while process <name> lives.
wait_http() { # name, url
  local name=$1 url=$2 deadline=$((SECONDS + ready_timeout))
  until node -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))' "$url"; do
    kill -0 "${pids[$name]}" 2>/dev/null || fail "$name exited before it was ready (see $tmp/$name.log)"
    [ $SECONDS -lt "$deadline" ] || fail "$name not ready at $url after ${ready_timeout}s"
    sleep 0.3
  done
}

# ---------------------------------------------------------------------------------------------------
# Build once, before the instances start.

built=dist/.built
if [ ! -f "$built" ] || [ -n "$(find src generated schema explorer tsconfig.json tsconfig.build.json package.json -newer "$built" -print -quit 2>/dev/null)" ]; then
  say "building the gateway (npm run build)"
  npm run -s build
fi

# ---------------------------------------------------------------------------------------------------
# Redis (append-only file, as in compose.yaml)

wait_redis() { # name, port: until the server answers PING
  local name=$1 port=$2
  deadline=$((SECONDS + ready_timeout))
  until node -e '
    const socket = require("node:net").connect(Number(process.argv[1]), "127.0.0.1");
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (data) => process.exit(String(data).startsWith("+PONG") ? 0 : 1));
    socket.on("error", () => process.exit(1));
    setTimeout(() => process.exit(1), 2000);' "$port"; do
    kill -0 "${pids[$name]}" 2>/dev/null || fail "$name exited (see $tmp/$name.log)"
    [ $SECONDS -lt "$deadline" ] || fail "$name not answering after ${ready_timeout}s"
    sleep 0.2
  done
}

if [ "${REDIS_CLUSTER:-}" = 1 ]; then
  cluster_nodes=()
  for node in 1 2 3 4 5 6; do
    port=$(free_port)
    mkdir -p "$tmp/redis-$node"
    "$redis_server" --bind 127.0.0.1 --port "$port" --dir "$tmp/redis-$node" --appendonly yes --save '' \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
      --daemonize no --protected-mode yes >"$tmp/redis-$node.log" 2>&1 &
    pids[redis-$node]=$!
    cluster_nodes+=("127.0.0.1:$port")
  done
  for node in 1 2 3 4 5 6; do wait_redis "redis-$node" "${cluster_nodes[$((node - 1))]##*:}"; done
  say "Redis Cluster on ${cluster_nodes[*]} (three primaries, a replica each)"
  "$redis_cli" --cluster create "${cluster_nodes[@]}" --cluster-replicas 1 --cluster-yes >"$tmp/redis-cluster-create.log" 2>&1 \
    || fail "redis-cli --cluster create failed (see $tmp/redis-cluster-create.log)"
  deadline=$((SECONDS + ready_timeout))
  for address in "${cluster_nodes[@]}"; do
    until "$redis_cli" -p "${address##*:}" cluster info 2>/dev/null | grep -q cluster_state:ok; do
      [ $SECONDS -lt "$deadline" ] || fail "the Redis Cluster is not ok after ${ready_timeout}s"
      sleep 0.2
    done
  done
  redis_kind='a Redis Cluster of 3 primaries and 3 replicas'
  redis_env=(REDIS_CLUSTER_NODES="$(IFS=,; echo "${cluster_nodes[*]}")")
else
  redis_port=$(free_port)
  mkdir -p "$tmp/redis"
  say "redis-server on 127.0.0.1:$redis_port"
  "$redis_server" --bind 127.0.0.1 --port "$redis_port" --dir "$tmp/redis" --appendonly yes --save '' \
    --daemonize no --protected-mode yes >"$tmp/redis.log" 2>&1 &
  pids[redis]=$!
  wait_redis redis "$redis_port"
  redis_env=(REDIS_URL="redis://127.0.0.1:$redis_port")
fi

# ---------------------------------------------------------------------------------------------------
# Two gateway instances, as compose.yaml configures them (but on loopback).

declare -A ports=()
start_instance() { # name: npm start on its port (logs appended to $tmp/<name>.log, a restart's after the first's)
  local name=$1
  env "${redis_env[@]}" NODE_ENV=production HOST=127.0.0.1 PORT="${ports[$name]}" \
    TRUST_PROXY=1 SHUTDOWN_GRACE_MS="${SHUTDOWN_GRACE_MS:-25000}" LOG_LEVEL="${LOG_LEVEL:-info}" \
    npm start >>"$tmp/$name.log" 2>&1 &
  pids[$name]=$!
}
for name in gateway-a gateway-b; do
  ports[$name]=$(free_port)
  say "$name: npm start on 127.0.0.1:${ports[$name]}"
  start_instance "$name"
done
for name in gateway-a gateway-b; do wait_http "$name" "http://127.0.0.1:${ports[$name]}/ready"; done
grep -ho 'Copilot Gateway ready at [^"]*' "$tmp/gateway-a.log" | head -n 1 | sed 's/^/   /'

# ---------------------------------------------------------------------------------------------------
# nginx with deploy/nginx.conf, its upstreams and port made local, its temp files under $tmp.

nginx_port=$(free_port)
mkdir -p "$tmp/nginx/logs"
conf="$tmp/nginx/nginx.conf"
temp_paths="client_body_temp_path $tmp/nginx/client_body; proxy_temp_path $tmp/nginx/proxy; fastcgi_temp_path $tmp/nginx/fastcgi; uwsgi_temp_path $tmp/nginx/uwsgi; scgi_temp_path $tmp/nginx/scgi;"
sed -e "s|server gateway-a:4000 |server 127.0.0.1:${ports[gateway-a]} |" \
    -e "s|server gateway-b:4000 |server 127.0.0.1:${ports[gateway-b]} |" \
    -e "s|listen 8080;|listen 127.0.0.1:$nginx_port;|" \
    -e "s|^http {|http {\n    $temp_paths|" \
    "${NGINX_CONF:-deploy/nginx.conf}" >"$conf"
# Not above this shell's hard limit of open files (nginx would only log an alert, at every start).
hard_nofile=$(ulimit -Hn)
if [ "$hard_nofile" != unlimited ] && [ "$hard_nofile" -lt 65536 ]; then
  sed -i "s|^worker_rlimit_nofile .*|worker_rlimit_nofile $hard_nofile;|" "$conf"
fi
for expected in "server 127.0.0.1:${ports[gateway-a]} " "server 127.0.0.1:${ports[gateway-b]} " "listen 127.0.0.1:$nginx_port;" "proxy_temp_path $tmp"; do
  grep -qF "$expected" "$conf" || fail "deploy/nginx.conf no longer has the lines this script adapts (looked for \"$expected\" after rewriting it)"
done
nginx_globals="pid $tmp/nginx/nginx.pid; daemon off; user $(id -un) $(id -gn);"
nginx_args=(-p "$tmp/nginx/" -c "$conf" -g "$nginx_globals")
# -e (nginx >= 1.19.5): its own start-up errors to stderr rather than to a log file under /var/log.
case "$("$nginx" -h 2>&1)" in *'-e filename'*) nginx_args=(-e stderr "${nginx_args[@]}") ;; esac
"$nginx" "${nginx_args[@]}" -t >"$tmp/nginx-test.log" 2>&1 \
  || { cat "$tmp/nginx-test.log" >&2; fail "nginx -t rejected the configuration"; }
say "nginx $("$nginx" -v 2>&1 | sed 's|.*/||') on 127.0.0.1:$nginx_port -> 127.0.0.1:${ports[gateway-a]}, 127.0.0.1:${ports[gateway-b]}"
"$nginx" "${nginx_args[@]}" >"$tmp/nginx.log" 2>&1 &
pids[nginx]=$!
wait_http nginx "http://127.0.0.1:$nginx_port/health"

# ---------------------------------------------------------------------------------------------------
# The checks through nginx.

base="http://127.0.0.1:$nginx_port"
say "node scripts/cluster-check.mjs $base $*"
check_status=0
node scripts/cluster-check.mjs "$base" "$@" || check_status=$?

# Shutdown: an instance told SIGTERM finishes its runs (SHUTDOWN_GRACE_MS gives them time) and exits 0.
results=()
exit_code() { # name, what: waits for the instance's npm start to exit (at most the grace period and 15 s), and records how
  local name=$1 what=$2 pid=${pids[$1]} rc=0 limit=$(( ${SHUTDOWN_GRACE_MS:-25000} / 1000 + 15 )) start=$SECONDS
  while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - start)) -lt "$limit" ]; do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    results+=("FAIL $name $what: still running ${limit}s after SIGTERM (killed)")
    stop_process "$name" KILL 5
    return
  fi
  wait "$pid" || rc=$?
  unset "pids[$name]"
  if [ -n "${children[$name]:-}" ] && kill -0 "${children[$name]}" 2>/dev/null; then
    results+=("FAIL $name $what: npm exited $rc but its node process ${children[$name]} is still running")
  elif [ "$rc" -eq 0 ]; then
    results+=("PASS $name $what: SIGTERM, exit code 0")
  else
    results+=("FAIL $name $what: SIGTERM, exit code $rc (see $tmp/$name.log)")
  fi
}
declare -A children=()
note_child() { children[$1]=$(pgrep -P "${pids[$1]}" 2>/dev/null | head -n 1 || true); } # npm's node process
for name in gateway-a gateway-b; do note_child "$name"; done

# Takes an instance out of nginx's rotation (down) or puts it back (up): its two server lines marked `down`
# or not, the configuration tested, and nginx reloaded (SIGHUP to its master). Returns once every worker of
# the previous configuration has stopped taking connections (exited, or "shutting down": it only finishes
# the requests it has), so that from then on no new connection reaches an instance marked down.
nginx_workers() { # master pid: its workers taking connections (not those "shutting down"); none is no error
  { ps -o pid= -o args= --ppid "$1" || true; } | awk '/worker process$/ { print $1 }'
}
nginx_route() { # name, up|down
  local address="127.0.0.1:${ports[$1]}" master=${pids[nginx]} old new deadline=$((SECONDS + 30))
  if [ "$2" = down ]; then
    sed -i "s|^\( *server $address [^;]*\);|\1 down;|" "$conf"
  else
    sed -i "s|^\( *server $address [^;]*\) down;|\1;|" "$conf"
  fi
  "$nginx" "${nginx_args[@]}" -t >"$tmp/nginx-test.log" 2>&1 \
    || { cat "$tmp/nginx-test.log" >&2; fail "nginx -t rejected the configuration with $1 $2"; }
  old=$(nginx_workers "$master")
  kill -HUP "$master"
  while :; do
    kill -0 "$master" 2>/dev/null || fail "nginx exited while reloading (see $tmp/nginx.log)"
    new=$(nginx_workers "$master")
    if [ -n "$new" ] && ! grep -qxF -f <(printf '%s\n' $old) <(printf '%s\n' $new); then return 0; fi
    [ $SECONDS -lt $deadline ] || fail "nginx did not reload (workers $new, before $old; see $tmp/nginx.log)"
    sleep 0.05
  done
}

# Rolling restart: each instance in turn, while runs stream from it, is taken out of nginx's rotation and
# told SIGTERM: gateway-a as DEPLOYMENT.md tells operators (marked down and nginx reloaded, then SIGTERM),
# gateway-b as a platform does (SIGTERM, and marked down a moment later, while it drains). Each exits,
# starts again, is ready, and is back in nginx's rotation (another reload) before the next one. All the
# while scripts/rolling-restart.mjs sends runs through nginx (GraphQL, graphql-ws, AG-UI) without pause:
# those nginx sends to gateway-b between its SIGTERM and the reload are refused and sent on (the load sends
# runs until one is). Not one may fail, and the runs in flight on an instance when it got SIGTERM must finish. (Without the reload, nginx keeps opening
# connections to the instance until its listener closes, and one that the system had accepted for it but
# the process had not yet taken is reset: a 502 for a POST, which nginx must not send again. See
# DEPLOYMENT.md, "Rolling restart".)
rolling_status=0
if [ "${DRAIN_CHECK:-on}" = off ]; then
  say "rolling restart: skipped (DRAIN_CHECK=off)"
else
  say "rolling restart: gateway-a then gateway-b (marked down in nginx and SIGTERM, start, ready, back in rotation) under load through nginx"
  coproc LOAD { exec node scripts/rolling-restart.mjs "$base" --workers "${ROLLING_WORKERS:-6}" 2>>"$tmp/load.log"; }
  pids[load]=$LOAD_PID
  load_in=${LOAD[1]} load_out=${LOAD[0]}
  ask() { # command: one line to the load generator; its answer in $answer
    answer="no answer"
    echo "$1" >&"$load_in"
    read -r -t $((ready_timeout + 60)) answer <&"$load_out" || true
  }
  for name in gateway-a gateway-b; do
    address="127.0.0.1:${ports[$name]}"
    ask "hold $address"
    case $answer in held*) ;; *) results+=("FAIL rolling restart, $name: $answer"); rolling_status=1; break ;; esac
    if [ "$name" = gateway-a ]; then
      # As DEPLOYMENT.md tells operators: out of rotation first, then SIGTERM.
      nginx_route "$name" down
      say "  $name: runs streaming on it (graphql-ws, AG-UI); marked down in nginx (reloaded); SIGTERM"
      started_at=$SECONDS
      kill -TERM "${pids[$name]}"
    else
      # As a platform does (Kubernetes' endpoints): SIGTERM, and out of rotation a moment later. Meanwhile
      # runs are sent until nginx has sent one the draining instance refused (421) on to the other.
      say "  $name: runs streaming on it (graphql-ws, AG-UI); SIGTERM"
      started_at=$SECONDS
      kill -TERM "${pids[$name]}"
      ask "sendon $address"
      case $answer in
        senton*) say "  $name: ${answer#senton } run(s) it refused while draining sent on by nginx to the other" ;;
        *) results+=("FAIL rolling restart, $name: $answer"); rolling_status=1 ;;
      esac
      nginx_route "$name" down
      if [ -n "${children[$name]:-}" ] && kill -0 "${children[$name]}" 2>/dev/null; then
        say "  $name: marked down in nginx (reloaded) while it drains"
      else
        say "  $name: marked down in nginx (reloaded) only after it had exited: this restart was SIGTERM alone"
      fi
    fi
    exit_code "$name" "restart"
    say "  $name: exited after $((SECONDS - started_at))s; npm start again"
    start_instance "$name"
    wait_http "$name" "http://$address/ready"
    note_child "$name"
    nginx_route "$name" up
    ask "routed $address"
    case $answer in routed*) ;; *) results+=("FAIL rolling restart, $name: $answer"); rolling_status=1; break ;; esac
    say "  $name: ready, and nginx sends requests to it again ($((SECONDS - started_at))s after SIGTERM)"
  done
  echo stop >&"$load_in"
  summary=""
  read -r -t 120 summary <&"$load_out" || true
  load_rc=0
  wait "${pids[load]}" || load_rc=$?
  unset "pids[load]"
  # A request sent again must not have reached an instance the first time (each logs every request's id).
  reached=""
  for id in $(node -e 'try { console.log(JSON.parse(process.argv[1].replace(/^summary /, "")).resentIds.join(" ")) } catch {}' "$summary"); do
    if grep -q "\"requestId\":\"$id\"" "$tmp"/gateway-*.log; then reached+=" $id"; fi
  done
  if [ -n "$reached" ]; then
    results+=("FAIL rolling restart: requests sent again after their connection closed had reached an instance:$reached")
    rolling_status=1
  fi
  if [ -z "$summary" ]; then
    results+=("FAIL rolling restart: no summary from scripts/rolling-restart.mjs (exit code $load_rc, see $tmp/load.log)")
    rolling_status=1
  else
    results+=("$(node -e '
      const s = JSON.parse(process.argv[1].replace(/^summary /, ""));
      const kinds = Object.entries(s.byKind).map(([kind, t]) => `${t.sent} ${kind}`).join(", ");
      const pass = s.failed === 0 && s.heldFinished === s.held && Number(process.argv[2]) === 0;
      console.log(`${pass ? "PASS" : "FAIL"} rolling restart: ${s.sent} runs sent through nginx (${kinds}) while both ` +
        `instances restarted in turn: ${s.failed} failed, ${s.sentOn} refused by a draining instance and sent on by ` +
        `nginx, ${s.reconnected} graphql-ws sockets told 1001 before their run started and connected again, ` +
        `${s.resentIds.length} requests on a kept-alive connection nginx closed before answering (its reload) sent again, ` +
        `${s.heldFinished} of ${s.held} runs in flight at a SIGTERM finished` +
        (s.failures.length ? `; failures: ${s.failures.join(" | ")}` : ""));' "$summary" "$rolling_status")")
    case ${results[-1]} in PASS*) ;; *) rolling_status=1 ;; esac
  fi
fi

# Failover: gateway-a stopped, nginx must send everything to gateway-b.
kill -TERM "${pids[gateway-a]}"
exit_code gateway-a shutdown

say "failover: gateway-a stopped, requests through nginx"
if node -e '
  const base = process.argv[1];
  (async () => {
    const answers = [];
    for (let i = 0; i < 6; i += 1) {
      const health = await fetch(`${base}/health`);
      const hello = await fetch(`${base}/api/copilotkit`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: "{ hello }" }) });
      const body = await hello.json();
      answers.push(`${health.status}/${hello.status}${body.data?.hello ? "" : " " + JSON.stringify(body)}`);
    }
    const ok = answers.every((answer) => answer === "200/200");
    console.log(`${ok ? "PASS" : "FAIL"} failover: with gateway-a stopped, 6 x (GET /health, hello) through nginx: ${answers.join(" ")}`);
    process.exit(ok ? 0 : 1);
  })().catch((error) => { console.log(`FAIL failover: ${error.message}`); process.exit(1); });' "$base"; then
  failover_status=0
else
  failover_status=1
fi
kill -TERM "${pids[gateway-b]}"
exit_code gateway-b shutdown
printf '%s\n' "${results[@]}"

status=0
[ "$check_status" -eq 0 ] || status=1
[ "$failover_status" -eq 0 ] || status=1
[ "$rolling_status" -eq 0 ] || status=1
for result in "${results[@]}"; do
  case $result in FAIL*) status=1 ;; esac
done
if [ "$status" -eq 0 ]; then
  echo "cluster-local: PASS (${redis_kind:-Redis}, 2 gateways and nginx on loopback: cluster-check, $([ "${DRAIN_CHECK:-on}" = off ] && echo 'rolling restart skipped' || echo 'rolling restart'), failover, shutdown)"
else
  echo "cluster-local: FAIL" >&2
fi
