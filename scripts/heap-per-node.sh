#!/usr/bin/env bash
# heap-per-node.sh: where the server's live heap goes, per node of a fleet.
#
# Starts a fresh `leasehold serve` on the embedded store, registers NODES
# Ready Nodes with their leases in kube-node-lease and renews every lease
# every 10 s (`bench rate --register-nodes`) for DURATION, then takes a heap
# profile after a forced collection (/debug/pprof/heap?gc=1) and prints the
# live heap per node and its largest parts. An empty server's live heap is
# measured the same way first and subtracted.
#
#   scripts/heap-per-node.sh BINARY OUT [DURATION]
#
# Environment: NODES (default 20000); SERVER_ENV and SERVER_FLAGS as for
# bench-rate.sh. OUT keeps both profiles
# (empty.pb.gz, fleet.pb.gz) for `go tool pprof -top -inuse_space`.
set -euo pipefail
bin=$1 out=$2 duration=${3:-90s}
nodes=${NODES:-20000}
mkdir -p "$out"
# shellcheck source=scripts/serve-fresh.sh
. "$(dirname "$0")/serve-fresh.sh"
serve_fresh "$bin" "$out"
kc=$out/data/admin.kubeconfig
live() { # live heap in bytes, from the profile's in-use total after a forced GC
	kubectl --kubeconfig "$kc" get --raw '/debug/pprof/heap?gc=1' >"$out/$1.pb.gz"
	go tool pprof -top -unit=B -nodecount=1 -inuse_space "$out/$1.pb.gz" 2>/dev/null |
		sed -n 's/.* of \([0-9]*\)B total.*/\1/p'
}
sleep 5
empty=$(live empty)
"$bin" bench rate --kubeconfig "$kc" --nodes "$nodes" --interval 10s --client lean --clients 64 \
	--duration "$duration" --register-nodes >"$out/result.txt" 2>"$out/bench.log"
fleet=$(live fleet)
awk -v e="$empty" -v f="$fleet" -v n="$nodes" 'BEGIN{printf "live heap: empty %.1f MB, with %d nodes %.1f MB: %.0f bytes per node (Node + lease)\n", e/1e6, n, f/1e6, (f-e)/n}'
go tool pprof -top -inuse_space -nodecount=25 "$out/fleet.pb.gz" 2>/dev/null | sed -n '5,32p'
