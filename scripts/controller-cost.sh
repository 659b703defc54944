#!/usr/bin/env bash
# controller-cost.sh: what the node lifecycle controller and the garbage
# collector spend per renewal inside `serve` (docs/performance.md, "What the
# controllers pay"), reproducibly.
#
#   scripts/controller-cost.sh BINARY OUT [NODES]
#
# Starts a fresh `BINARY serve` (embedded store, free port) pinned to CPU 0
# (GOMAXPROCS 1) and `bench rate --register-nodes` pinned to CPU 1, NODES
# (default 20,000) Ready Nodes owning their leases, each lease renewed every
# 10 s (NODES/10 renewals a second). Once renewals run and the first monitor
# passes are over, it takes a 30 s CPU profile of the server (OUT/cpu.pprof)
# and reads the server's CPU time from /proc over the same 30 s, then prints
# the server's CPU-µs per renewal, the share of the profile's samples whose
# stack is in either controller's package (their own goroutines: the GC's
# event loop and workers, the node monitor), and the product, the two
# controllers' CPU-µs per renewal. What the watch cache spends delivering
# their events is not in that share (it runs on the cache's goroutines).
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,18p "$0"; exit 2; }
bin=$1 out=$2 nodes=${3:-20000}
rate=$((nodes / 10))
mkdir -p "$out"
# shellcheck source=scripts/serve-fresh.sh
. "$(dirname "$0")/serve-fresh.sh"
SERVER_PREFIX="taskset -c 0" serve_fresh "$bin" "$out"
kc=$out/data/admin.kubeconfig
taskset -c 1 "$bin" bench rate --kubeconfig "$kc" --nodes "$nodes" --interval 10s --client lean --clients 64 \
	--duration 100s --register-nodes >"$out/result.txt" 2>"$out/bench.log" &
bench=$!
trap 'kill "$bench" "$server" 2>/dev/null; wait 2>/dev/null || true' EXIT
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The first progress line comes once the fleet is registered and renewals run.
for _ in $(seq 1 300); do
	grep -q ' last: ' "$out/bench.log" 2>/dev/null && break
	sleep 1
done
sleep 20
s0=$(cpu "$server") t0=$(date +%s.%N)
kubectl --kubeconfig "$kc" get --raw '/debug/pprof/profile?seconds=30' >"$out/cpu.pprof"
s1=$(cpu "$server") t1=$(date +%s.%N)
wait "$bench" || true
share=$(go tool pprof -top -nodecount=1000000 -focus 'internal/controller/(garbagecollector|nodelifecycle)' "$out/cpu.pprof" 2>/dev/null |
	sed -n 's/.*accounting for .*, \([0-9.]*\)% of .* total.*/\1/p')
python3 - "$s0" "$s1" "$t0" "$t1" "$(getconf CLK_TCK)" "$rate" "${share:-0}" <<'PY'
import sys
s0, s1, t0, t1, hz, rate, share = map(float, sys.argv[1:])
per = (s1 - s0) / hz / (t1 - t0) / rate * 1e6
print(f"server: {per:.1f} CPU-µs per renewal at {rate:.0f} renewals/s; controllers {share:.1f}% of its profile: {per * share / 100:.2f} CPU-µs per renewal")
PY
tail -1 "$out/result.txt"
