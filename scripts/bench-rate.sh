#!/usr/bin/env bash
# bench-rate.sh: the fleet-scale lease measurement of SPEC §9, reproducibly.
#
# Starts a fresh `leasehold serve` on the embedded store (a free port on
# 127.0.0.1, data under $OUT/data), runs `leasehold bench rate` against it
# (NODES leases renewed every 10 s by 256 lean clients over 8 connections),
# then saves the server's /metrics and stops it. The result line, the
# generator's resource use and the server's log are left in $OUT.
#
#   scripts/bench-rate.sh BINARY OUT [DURATION] [extra bench flags...]
#
# With --register-nodes every simulated node is also a Ready Node owning its
# lease in kube-node-lease: the server then carries a fleet's Nodes, node
# monitor and garbage-collector graph, not only its leases.
#
# Environment: NODES (default 100000), CONNS (default 8), SERVER_ENV and
# BENCH_ENV (extra environment, e.g. BENCH_ENV=GODEBUG=gctrace=1).
# Nothing else may run on the machine meanwhile: server and generator share
# its cores, and every figure depends on that.
set -euo pipefail
bin=$1 out=$2 duration=${3:-10m}
shift $(( $# < 3 ? $# : 3 ))
data=$out/data
rm -rf "$data"
mkdir -p "$data"
# shellcheck disable=SC2086 # SERVER_ENV and BENCH_ENV are lists of VAR=value words
env ${SERVER_ENV:-} "$bin" serve --data-dir "$data" --secure-port 0 >"$out/server.out" 2>"$out/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 150); do
	grep -q '"msg":"serving"' "$out/server.log" 2>/dev/null && break
	sleep 0.2
done
grep -q '"msg":"serving"' "$out/server.log" || { echo "server did not start; see $out/server.log" >&2; exit 1; }
timer=()
[ -x /usr/bin/time ] && timer=(/usr/bin/time -v -o "$out/bench.time")
# shellcheck disable=SC2086
env ${BENCH_ENV:-} "${timer[@]}" "$bin" bench rate --kubeconfig "$data/admin.kubeconfig" \
	--nodes "${NODES:-100000}" --interval 10s --client lean --clients 256 --connections "${CONNS:-8}" \
	--duration "$duration" --server-pid "$server" "$@" >"$out/result.txt" 2>"$out/bench.log"
kubectl --kubeconfig "$data/admin.kubeconfig" get --raw /metrics >"$out/metrics.txt" 2>/dev/null || true
cat "$out/result.txt"
