#!/usr/bin/env bash
# bench-rate.sh: the fleet-scale lease measurement (docs/performance.md,
# "The fleet target: 100,000 nodes"), reproducibly.
#
# Starts a fresh `leasehold serve` on the embedded store (a free port on
# 127.0.0.1, data under $OUT/data), runs `leasehold bench rate` against it
# (NODES leases renewed every 10 s by 256 lean clients over 8 connections),
# then saves the server's /metrics and stops it. The result line, the
# generator's resource use and the server's log are left in $OUT.
#
#   scripts/bench-rate.sh BINARY OUT [DURATION] [extra bench flags...]
#   AS_NODES=1 scripts/bench-rate.sh BINARY OUT [DURATION] [--register-nodes]
#
# With --register-nodes every simulated node is also a Ready Node owning its
# lease in kube-node-lease: the server then carries a fleet's Nodes, node
# monitor and garbage-collector graph, not only its leases.
#
# With AS_NODES=1 every simulated node renews (and registers) as itself, as
# real nodes do: the server starts with --token-auth-file $OUT/node-tokens.csv
# (empty at first), bench fills the file with one token per node
# (--node-tokens), waits until the server has re-read it, and sends each
# node's requests with its own token, judged by the Node authorizer and
# NodeRestriction. The leases are then in kube-node-lease.
#
# Environment: NODES (default 100000), CONNS (default 8), AS_NODES (0 or 1),
# SERVER_ENV and BENCH_ENV (extra environment, e.g. BENCH_ENV=GODEBUG=gctrace=1),
# SERVER_FLAGS (extra serve flags, e.g. SERVER_FLAGS="--memory-limit 0"),
# BENCH_BIN (the binary that runs `bench rate`, default BINARY: A/B runs of
# two servers then share one load generator).
# PIN=1 pins the server to CPU ${SERVER_CPU:-0} and the generator to CPU
# ${BENCH_CPU:-1} with taskset: each then has one core of its own, and the Go
# runtime runs the server with GOMAXPROCS 1 (it sizes GOMAXPROCS by the CPUs
# the process may run on). The figures are then the server's alone on one
# core, whatever the generator costs.
# BASELINE=1 runs the same load against `leasehold bench baseline` (a
# trivial Go HTTP/2+TLS handler that echoes every PUT and POST, on the
# certificates of a fresh serve's data directory) instead of serve: the
# latency the generator, the connections and the machine add by
# themselves, which a server's figures include. Compare a server's p99 with
# it in the same session. AS_NODES does not apply.
# Nothing else may run on the machine meanwhile: server and generator share
# its cores, and every figure depends on that.
set -euo pipefail
bin=$1 out=$2 duration=${3:-10m}
gen=${BENCH_BIN:-$bin}
shift $(( $# < 3 ? $# : 3 ))
data=$out/data
# shellcheck source=scripts/serve-fresh.sh
. "$(dirname "$0")/serve-fresh.sh"
mkdir -p "$out"
server_flags=() bench_flags=()
if [ "${AS_NODES:-0}" = 1 ]; then
	tokens=$out/node-tokens.csv
	rm -f "$tokens"
	install -m 600 /dev/null "$tokens"
	server_flags=(--token-auth-file "$tokens")
	bench_flags=(--node-tokens "$tokens")
fi
gen_prefix=()
if [ "${PIN:-0}" = 1 ]; then
	SERVER_PREFIX="taskset -c ${SERVER_CPU:-0}"
	gen_prefix=(taskset -c "${BENCH_CPU:-1}")
fi
serve_fresh "$bin" "$out" "${server_flags[@]}"
kubeconfig=$data/admin.kubeconfig
if [ "${BASELINE:-0}" = 1 ]; then
	[ "${AS_NODES:-0}" = 0 ] || { echo "BASELINE=1 and AS_NODES=1 do not go together" >&2; exit 1; }
	kill "$server"
	wait "$server" 2>/dev/null || true
	# shellcheck disable=SC2086 # SERVER_PREFIX is a list of words
	${SERVER_PREFIX:-} "$bin" bench baseline --data-dir "$data" --kubeconfig-out "$out/baseline.kubeconfig" \
		>"$out/baseline.out" 2>"$out/server.log" &
	server=$!
	await_serving "$out/server.log" "leasehold bench baseline"
	kubeconfig=$out/baseline.kubeconfig
fi
timer=()
[ -x /usr/bin/time ] && timer=(/usr/bin/time -v -o "$out/bench.time")
# shellcheck disable=SC2086
env ${BENCH_ENV:-} "${timer[@]}" "${gen_prefix[@]}" "$gen" bench rate --kubeconfig "$kubeconfig" \
	--nodes "${NODES:-100000}" --interval 10s --client lean --clients 256 --connections "${CONNS:-8}" \
	--duration "$duration" --server-pid "$server" "${bench_flags[@]}" "$@" >"$out/result.txt" 2>"$out/bench.log"
[ "${BASELINE:-0}" = 1 ] || kubectl --kubeconfig "$kubeconfig" get --raw /metrics >"$out/metrics.txt" 2>/dev/null || true
cat "$out/result.txt"
