#!/usr/bin/env bash
# dashboard-cost.sh: what `leasehold dashboard` spends per renewal it shows
# (docs/performance.md, "What a watcher pays"), reproducibly.
#
#   scripts/dashboard-cost.sh SERVER_BINARY BINARY OUT [NODES]
#
# Starts a fresh `SERVER_BINARY serve` (embedded store, free port), a
# `BINARY dashboard` on it, and `BINARY bench rate` renewing NODES leases
# (default 20,000) in kube-node-lease every 10 s (NODES/10 renewals a
# second) for 70 s; in the middle 30 s of the renewals it reads the
# dashboard's and the server's CPU time from /proc and prints each as
# cores and as CPU-µs per renewal, per renewal the generator completed in
# those 30 s (its progress lines), which is fewer than NODES/10 a second
# when the machine cannot keep up. Two server binaries with one BINARY
# compare what the server's watch streams cost their watcher. VIEWERS=N
# (default 0) keeps N pages open on the dashboard throughout (curl reading
# its event stream, as a browser tab does) and prints how many node leases
# the last summary they received counted; DASHBOARD_FLAGS (words) are added
# to the dashboard's flags (e.g. --cpu-profile FILE).
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,17p "$0"; exit 2; }
srv=$1 bin=$2 out=$3 nodes=${4:-20000}
rate=$((nodes / 10))
mkdir -p "$out"
# shellcheck source=scripts/serve-fresh.sh
. "$(dirname "$0")/serve-fresh.sh"
serve_fresh "$srv" "$out"
kc=$out/data/admin.kubeconfig
# shellcheck disable=SC2086 # DASHBOARD_FLAGS is a list of words
"$bin" dashboard ${DASHBOARD_FLAGS:-} --kubeconfig "$kc" --listen 127.0.0.1:0 >"$out/dashboard.out" 2>"$out/dashboard.log" &
dash=$!
viewers=()
trap 'kill "${viewers[@]}" "$dash" "$server" 2>/dev/null; wait 2>/dev/null || true' EXIT
sleep 3
url=$(sed -n 's/^Dashboard: //p' "$out/dashboard.out")
for i in $(seq 1 "${VIEWERS:-0}"); do
	curl -sN "${url}events" >"$out/viewer-$i.sse" 2>&1 &
	viewers+=($!)
done
"$bin" bench rate --kubeconfig "$kc" --nodes "$nodes" --interval 10s --client lean --duration 70s --namespace kube-node-lease >"$out/bench.out" 2>&1 &
bench=$!
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The first progress line comes once the leases exist and renewals run.
for _ in $(seq 1 300); do
	grep -q ' last: ' "$out/bench.out" 2>/dev/null && break
	sleep 1
done
sleep 20
# ops is the generator's count of renewals done, from its last progress line.
ops() { grep -o 'total: *[0-9]*' "$out/bench.out" | tail -1 | grep -o '[0-9]*'; }
d0=$(cpu "$dash") s0=$(cpu "$server") t0=$(date +%s.%N) o0=$(ops)
sleep 30
d1=$(cpu "$dash") s1=$(cpu "$server") t1=$(date +%s.%N) o1=$(ops)
wait "$bench" || true
python3 - "$d0" "$d1" "$s0" "$s1" "$t0" "$t1" "$(getconf CLK_TCK)" "$rate" "$o0" "$o1" <<'PY'
import sys
d0, d1, s0, s1, t0, t1, hz, target, o0, o1 = map(float, sys.argv[1:])
t = t1 - t0
# Progress lines come every second: the count is at most a second old at
# either end, which shifts the window but not its length.
rate = (o1 - o0) / t
print(f"renewals: {rate:.0f}/s done of {target:.0f}/s asked")
for name, a, b in (("dashboard", d0, d1), ("server", s0, s1)):
    cores = (b - a) / hz / t
    print(f"{name}: {cores:.3f} cores, {cores / rate * 1e6:.1f} CPU-µs per renewal at {rate:.0f} renewals/s")
PY
tail -1 "$out/bench.out"
for i in $(seq 1 "${VIEWERS:-0}"); do
	echo "viewer $i: $(grep -c '^event: summary' "$out/viewer-$i.sse") summaries, the last counting $(grep '^data: {"now"' "$out/viewer-$i.sse" | tail -1 | grep -o '"nodeLeases":[0-9]*')"
done
