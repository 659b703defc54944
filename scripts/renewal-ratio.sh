#!/usr/bin/env bash
# renewal-ratio.sh: issue 25 item 3, reproducibly: the server CPU a lease
# renewal costs in `leasehold bench max` (64 clients, protobuf, HTTP/2+TLS,
# durable embedded store) against what a trivial Go HTTP/2+TLS handler
# costs per request (`leasehold bench baseline`: same TLS configuration,
# certificate, clients and request bytes; it answers each PUT with its own
# body).
#
# Starts a fresh `leasehold serve` (data under $OUT/data, every write
# fsynced) and `leasehold bench baseline` on its certificates, then ROUNDS
# times runs bench max for DURATION against each, the order alternating
# from round to round, each with --server-pid so that the CPU accounting is
# the same. The machine is shared and noisy, so the two run side by side,
# round after round; the script prints each round's CPU-ms per 1,000
# renewals of both servers and their ratio, with the generator's CPU and
# the load average, then the ratio's range and median. With PROFILE=1 (the
# default) a CPU profile of serve is taken during its last run
# ($OUT/server.pprof: go tool pprof -top BINARY $OUT/server.pprof).
#
#   scripts/renewal-ratio.sh BINARY OUT [DURATION] [ROUNDS]
#
# Environment: CLIENT (bench --client: typed, the default, or lean),
# CLIENTS (default 64), CONNS (connections, default 4), CONTENT (protobuf,
# the default, or json), SERVER_ENV and SERVER_FLAGS (extra environment and
# flags for serve), PROFILE=0 to skip the profile. PIN=1 pins serve and
# the baseline to CPU ${SERVER_CPU:-0} and the generator to CPU
# ${BENCH_CPU:-1} with taskset (the Go runtime then runs each server with
# GOMAXPROCS 1), so each server's figure is its own on one core.
set -euo pipefail
bin=$(realpath "$1") out=$2 duration=${3:-20s} rounds=${4:-5}
rm -rf "$out"
mkdir -p "$out"
out=$(realpath "$out")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
server_prefix=() gen_prefix=()
if [ "${PIN:-0}" = 1 ]; then
	server_prefix=(taskset -c "${SERVER_CPU:-0}")
	gen_prefix=(taskset -c "${BENCH_CPU:-1}")
fi

# shellcheck source=scripts/serve-fresh.sh
. "$(dirname "$0")/serve-fresh.sh" # await_serving

# shellcheck disable=SC2086 # SERVER_ENV and SERVER_FLAGS are lists of words
env ${SERVER_ENV:-} "${server_prefix[@]}" "$bin" serve --data-dir "$out/data" --secure-port 0 ${SERVER_FLAGS:-} \
	>"$out/server.out" 2>"$out/server.log" &
server=$!
pids+=("$server")
await_serving "$out/server.log" "leasehold serve"
"${server_prefix[@]}" "$bin" bench baseline --data-dir "$out/data" --kubeconfig-out "$out/baseline.kubeconfig" \
	>"$out/baseline.out" 2>"$out/baseline.log" &
baseline=$!
pids+=("$baseline")
await_serving "$out/baseline.log" "leasehold bench baseline"

# run NAME PID KUBECONFIG ROUND [PROFILE]: one bench max run against a
# server, its result in $OUT/NAME-ROUND.json.
run() {
	local name=$1 pid=$2 kc=$3 r=$4 prof=()
	if [ "${5:-0}" = 1 ]; then
		# A profile of the middle of the run.
		local secs=$(( ${duration%s} / 2 ))
		(sleep 3; kubectl --kubeconfig "$kc" get --raw "/debug/pprof/profile?seconds=$secs" >"$out/server.pprof" 2>/dev/null || true) &
		prof=($!)
	fi
	/usr/bin/time -f '%U %S' -o "$out/$name-$r.time" "${gen_prefix[@]}" "$bin" bench max --kubeconfig "$kc" \
		--clients "${CLIENTS:-64}" --connections "${CONNS:-4}" --client "${CLIENT:-typed}" \
		--content-type "${CONTENT:-protobuf}" --duration "$duration" --server-pid "$pid" \
		--output json >"$out/$name-$r.json" 2>"$out/$name-$r.log"
	[ ${#prof[@]} = 0 ] || wait "${prof[@]}"
}

ratios=()
for r in $(seq 1 "$rounds"); do
	profile=0
	[ "$r" = "$rounds" ] && [ "${PROFILE:-1}" = 1 ] && profile=1
	if (( r % 2 )); then
		run serve "$server" "$out/data/admin.kubeconfig" "$r" "$profile"
		run baseline "$baseline" "$out/baseline.kubeconfig" "$r"
	else
		run baseline "$baseline" "$out/baseline.kubeconfig" "$r"
		run serve "$server" "$out/data/admin.kubeconfig" "$r" "$profile"
	fi
	line=$(python3 - "$out" "$r" <<'EOF'
import json, sys
out, r = sys.argv[1], sys.argv[2]
def load(name):
    d = json.load(open(f"{out}/{name}-{r}.json"))
    u, s = open(f"{out}/{name}-{r}.time").read().split()
    gen = (float(u) + float(s)) * 1e6 / max(1, d["ops"])
    return d, gen
s, sgen = load("serve")
b, bgen = load("baseline")
if s["errorsTotal"] or b["errorsTotal"]:
    print(f"ERRORS serve {s['errors']} baseline {b['errors']}", file=sys.stderr)
sc, bc = s["server"]["cpuMsPer1000Ops"], b["server"]["cpuMsPer1000Ops"]
print(f"{sc / bc:.3f} serve {s['throughput']:.0f}/s {sc:.1f} CPU-µs/renewal (generator {sgen:.0f})"
      f"  baseline {b['throughput']:.0f}/s {bc:.1f} CPU-µs/request (generator {bgen:.0f})")
EOF
)
	ratios+=("${line%% *}")
	printf 'round %d: ratio %s  load %s\n' "$r" "$line" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/summary.txt"
done
printf '%s\n' "${ratios[@]}" | python3 -c 'import sys, statistics
r = [float(x) for x in sys.stdin]
print(f"ratio range: {min(r):.3f}-{max(r):.3f}, median {statistics.median(r):.3f} over {len(r)} rounds")' | tee -a "$out/summary.txt"
