#!/usr/bin/env bash
# etcd-ratio.sh: the etcd target (docs/performance.md, "Measuring Leasehold
# on etcd"; issue 24 item 5), reproducibly:
# renewals through one `leasehold serve` replica on a 3-member etcd as a
# fraction of the raw compare-and-put transactions the same etcd does with
# the same concurrency.
#
# Starts 3 etcd members (Debian's etcd-server: apt-get install -y
# etcd-server) on 127.0.0.1 with free ports and data under $OUT, one
# replica on them, and then ROUNDS times, alternately, `bench etcd-cas`
# (raw) and `bench max` (through the replica), each for DURATION with
# CLIENTS clients over 1000 leases. The machine is shared and noisy, so the
# two run side by side, round after round, and the script prints every
# pair's ratio and their range, with the CPU time per 1,000 operations of
# etcd (all members), the replica and each generator (setup included), and
# the load average: on a machine whose cores the processes share, every
# CPU-ms the replica and bench max spend is taken from etcd. Results, logs
# and a CPU profile of the replica (taken during the last max run) are
# left in $OUT (server.pprof; embedded.pprof for the embedded server).
#
# Unless EMBEDDED=0 it also starts `serve` on the embedded store (data in
# $OUT/embedded) and runs the same bench max against it in every round,
# before or after the replica's run in turn, and prints the replica's CPU
# per renewal as a multiple of the embedded server's (issue 34's target:
# at most 1.3x) and etcd's CPU per renewal through the replica as a
# multiple of its CPU per raw compare-and-put (at most 1.1x).
#
#   scripts/etcd-ratio.sh BINARY OUT [DURATION] [ROUNDS]
#
# With RATE_NODES=N the replica and the embedded server are driven at the
# same fixed load instead, `bench rate` with N leases renewed every 10 s
# (N/10 renewals a second, in a namespace of their own each run), so that
# their CPU per renewal is compared at equal throughput: under bench max
# the embedded server runs several times faster than the replica, and a
# server's CPU per renewal falls as its throughput rises (larger commit
# batches, fewer wake-ups per request). The raw etcd runs are then paced
# the same way (bench etcd-cas --interval 10s over N keys), so etcd's CPU
# per operation through the replica and raw compare at equal throughput,
# and "ratio" is 1 whenever both keep up with the schedule.
#
# etcd's CPU is counted from the end of each run's setup (its "setup of
# ... done" line) to the run's end, so writing the run's keys or creating
# its leases is not charged to the measured operations.
#
# Environment: CLIENTS (default 64), CONNS (bench max connections, default
# 4), SERVER_ENV (extra environment for the replica), SERVER_FLAGS (extra
# serve flags), RAW_FLAGS (extra bench etcd-cas flags: RAW_FLAGS=--leader
# sends the raw transactions to the etcd leader, as the replica does, for
# the stricter yardstick), BENCH_BIN (the binary that runs both benches,
# default BINARY: A/B runs of two servers then share one load generator),
# PROFILE=0 to skip the profile, EMBEDDED=0 to skip the embedded server.
set -euo pipefail
bin=$(realpath "$1") out=$2
gen=$(realpath "${BENCH_BIN:-$1}") duration=${3:-20s} rounds=${4:-3}
clients=${CLIENTS:-64}
rm -rf "$out"
mkdir -p "$out"
out=$(realpath "$out")
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
cluster="" clients_urls=()
declare -A peer client
for m in 1 2 3; do
	peer[$m]=http://127.0.0.1:$(free_port)
	client[$m]=http://127.0.0.1:$(free_port)
	cluster+="${cluster:+,}m$m=${peer[$m]}"
	clients_urls+=("${client[$m]}")
done
for m in 1 2 3; do
	etcd --name "m$m" --data-dir "$out/etcd-m$m" \
		--listen-peer-urls "${peer[$m]}" --initial-advertise-peer-urls "${peer[$m]}" \
		--listen-client-urls "${client[$m]}" --advertise-client-urls "${client[$m]}" \
		--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token leasehold-ratio \
		>"$out/etcd-m$m.log" 2>&1 &
	pids+=($!)
done
endpoints=$(IFS=,; echo "${clients_urls[*]}")
for url in "${clients_urls[@]}"; do
	for _ in $(seq 1 100); do
		curl -sf "$url/health" | grep -q '"health":"true"' && break
		sleep 0.2
	done
	curl -sf "$url/health" | grep -q '"health":"true"' || { echo "etcd at $url is not healthy; see $out/etcd-m*.log" >&2; exit 1; }
done

# shellcheck disable=SC2086 # SERVER_ENV and SERVER_FLAGS are lists of words
env ${SERVER_ENV:-} "$bin" serve --data-dir "$out/replica" --secure-port 0 --etcd-servers "$endpoints" ${SERVER_FLAGS:-} \
	>"$out/server.out" 2>"$out/server.log" &
server=$!
pids+=("$server")
# shellcheck source=scripts/serve-fresh.sh
. "$(dirname "$0")/serve-fresh.sh" # await_serving
await_serving "$out/server.log" "the replica"
kc=$out/replica/admin.kubeconfig
embedded=""
if [ "${EMBEDDED:-1}" = 1 ]; then
	# shellcheck disable=SC2086 # SERVER_ENV and SERVER_FLAGS are lists of words
	env ${SERVER_ENV:-} "$bin" serve --data-dir "$out/embedded" --secure-port 0 ${SERVER_FLAGS:-} \
		>"$out/embedded.out" 2>"$out/embedded.log" &
	embedded=$!
	pids+=("$embedded")
	await_serving "$out/embedded.log" "the embedded server"
fi

# cpu_ms PID...: the CPU time (user+system) the processes have used, in ms.
cpu_ms() {
	local total=0 p
	for p in "$@"; do
		# Fields 14 and 15 of /proc/PID/stat, after the parenthesised name.
		read -r -a f < <(sed 's/^.*) //' "/proc/$p/stat")
		total=$(( total + f[11] + f[12] ))
	done
	echo $(( total * 1000 / $(getconf CLK_TCK) ))
}
etcd_pids=("${pids[@]:0:3}")
# per1000 CPU_MS OPS_JSON: CPU-ms per 1,000 operations of a run.
per1000() { python3 -c 'import json,sys; print(round(int(sys.argv[1]) * 1000 / max(1, json.load(open(sys.argv[2]))["ops"])))' "$1" "$2"; }

# run_embedded ROUND: the same bench max against the embedded server (with
# a profile of it in $OUT/embedded.pprof in the last round).
run_embedded() {
	[ -n "$embedded" ] || return 0
	local eprof=()
	if [ "$1" = "$rounds" ] && [ "${PROFILE:-1}" = 1 ]; then
		(sleep 3; kubectl --kubeconfig "$out/embedded/admin.kubeconfig" get --raw "/debug/pprof/profile?seconds=$(( ${duration%s} / 2 ))" >"$out/embedded.pprof" 2>/dev/null || true) &
		eprof=($!)
	fi
	# shellcheck disable=SC2046 # load prints words
	"$gen" bench $(load "$out/embedded/admin.kubeconfig" "embedded-$1") --clients "$clients" --connections "${CONNS:-4}" --client lean \
		--duration "$duration" --server-pid "$embedded" --output json >"$out/embedded-$1.json" 2>"$out/embedded-$1.log"
	[ ${#eprof[@]} = 0 ] || wait "${eprof[@]}"
}

# load KUBECONFIG NAMESPACE: the bench mode and flags that drive a server,
# bench max unless RATE_NODES is set.
load() {
	if [ -n "${RATE_NODES:-}" ]; then
		echo rate --nodes "$RATE_NODES" --interval 10s --namespace "$2" --kubeconfig "$1"
	else
		echo max --kubeconfig "$1"
	fi
}

# raw_pacing: the bench etcd-cas flags that pace it as load paces the
# servers, none unless RATE_NODES is set.
raw_pacing() {
	[ -z "${RATE_NODES:-}" ] || echo --leases "$RATE_NODES" --interval 10s
}

# etcd_cpu_after_setup RESULT LOG COMMAND...: runs COMMAND (a bench, its
# stdout to RESULT, its stderr to LOG) and prints the CPU-ms the etcd
# members used from the end of its setup to its end.
etcd_cpu_after_setup() {
	local result=$1 log=$2 e0="" p
	shift 2
	"$@" >"$result" 2>"$log" &
	p=$!
	while kill -0 "$p" 2>/dev/null; do
		if grep -q '^setup of .* done' "$log" 2>/dev/null; then
			e0=$(cpu_ms "${etcd_pids[@]}")
			break
		fi
		sleep 0.05
	done
	wait "$p" || { echo "bench failed; see $log" >&2; return 1; }
	[ -n "$e0" ] || { echo "no setup line in $log" >&2; return 1; }
	echo $(( $(cpu_ms "${etcd_pids[@]}") - e0 ))
}

ratios=()
for r in $(seq 1 "$rounds"); do
	# shellcheck disable=SC2046,SC2086 # raw_pacing prints words; RAW_FLAGS is a list of words
	etcd_ms=$(etcd_cpu_after_setup "$out/raw-$r.json" "$out/raw-$r.log" /usr/bin/time -f '%U %S' -o "$out/raw-$r.time" \
		"$gen" bench etcd-cas --etcd-servers "$endpoints" --clients "$clients" --namespace "round$r" $(raw_pacing) ${RAW_FLAGS:-} \
		--duration "$duration" --output json)
	raw_etcd=$(per1000 "$etcd_ms" "$out/raw-$r.json")
	raw_gen=$(per1000 "$(awk '{printf "%d", ($1 + $2) * 1000}' "$out/raw-$r.time")" "$out/raw-$r.json")
	prof=()
	if [ "$r" = "$rounds" ] && [ "${PROFILE:-1}" = 1 ]; then
		# A profile of the middle of the last max run.
		secs=$(( ${duration%s} / 2 ))
		(sleep 3; kubectl --kubeconfig "$kc" get --raw "/debug/pprof/profile?seconds=$secs" >"$out/server.pprof" 2>/dev/null || true) &
		prof=($!)
	fi
	# The embedded server's run goes before the replica's in even rounds.
	(( r % 2 )) || run_embedded "$r"
	# shellcheck disable=SC2046 # load prints words
	etcd_ms=$(etcd_cpu_after_setup "$out/max-$r.json" "$out/max-$r.log" /usr/bin/time -f '%U %S' -o "$out/max-$r.time" \
		"$gen" bench $(load "$kc" "replica-$r") --clients "$clients" --connections "${CONNS:-4}" --client lean \
		--duration "$duration" --server-pid "$server" --output json)
	max_etcd=$(per1000 "$etcd_ms" "$out/max-$r.json")
	max_gen=$(per1000 "$(awk '{printf "%d", ($1 + $2) * 1000}' "$out/max-$r.time")" "$out/max-$r.json")
	(( r % 2 == 0 )) || run_embedded "$r"
	[ ${#prof[@]} = 0 ] || wait "${prof[@]}"
	raw=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["throughput"])' "$out/raw-$r.json")
	read -r max cpu < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["throughput"], d["server"]["cpuMsPer1000Ops"])' "$out/max-$r.json")
	ratio=$(python3 -c "print(f'{$max/$raw:.3f}')")
	ratios+=("$ratio")
	printf 'round %d: raw %.0f/s  max %.0f/s  ratio %s  CPU-ms per 1000: raw (etcd %s, generator %s)  max (etcd %s, replica %.0f, generator %s)  load %s\n' \
		"$r" "$raw" "$max" "$ratio" "$raw_etcd" "$raw_gen" "$max_etcd" "$cpu" "$max_gen" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/summary.txt"
	if [ -n "$embedded" ]; then
		read -r emb ecpu < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["throughput"], d["server"]["cpuMsPer1000Ops"])' "$out/embedded-$r.json")
		python3 -c "print(f'round $r: replica/embedded {$cpu/$ecpu:.2f} (replica {$cpu:.0f}, embedded {$ecpu:.0f} CPU-ms per 1000, embedded {$emb:.0f}/s)  etcd through replica/raw {$max_etcd/$raw_etcd:.2f}')" | tee -a "$out/summary.txt"
	fi
done
printf '%s\n' "${ratios[@]}" | sort -n | python3 -c 'import sys, statistics
r = [float(x) for x in sys.stdin]
print(f"ratio range: {min(r):.3f}-{max(r):.3f}, median {statistics.median(r):.3f} over {len(r)} rounds")' | tee -a "$out/summary.txt"
