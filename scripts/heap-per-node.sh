#!/usr/bin/env bash
# heap-per-node.sh: where the server's live heap goes, per node of a fleet.
#
# Starts a fresh `leasehold serve` on the embedded store, registers NODES
# Ready Nodes with their leases in kube-node-lease and renews every lease
# every 10 s (`bench rate --register-nodes`) for DURATION, then takes a heap
# profile after a forced collection (/debug/pprof/heap?gc=1) and prints the
# live heap per node and its largest parts. An empty server's live heap is
# measured the same way first and subtracted. The live heap is the runtime's
# own count (go_memstats_heap_alloc_bytes right after that collection, the
# server idle); the profile's total, a sample, is printed beside it.
#
# "Empty" means a server that has done once everything the fleet run makes
# it do per server rather than per node: the fleet's first node registered
# and its lease renewed for 5 s by the same bench client (discovery and
# OpenAPI documents built), then left unchanged until both went cold (the
# watch cache's compressors for leases, nodes and events made: about
# 1.5 MB each). Without that, a fixed
# 10 MB counted as 500 bytes per node at 20,000 nodes.
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
live() { # live heap in bytes after a forced GC; the profile's sampled total on stderr
	kubectl --kubeconfig "$kc" get --raw '/debug/pprof/heap?gc=1' >"$out/$1.pb.gz"
	kubectl --kubeconfig "$kc" get --raw /metrics | awk '$1=="go_memstats_heap_alloc_bytes"{printf "%d\n", $2}'
	go tool pprof -top -unit=B -nodecount=1 -inuse_space "$out/$1.pb.gz" 2>/dev/null |
		sed -n 's/.* of \([0-9]*\)B total.*/(profile total \1 B)/p' >&2
}
# The fleet's first node, run alone: the first object of a resource to go
# cold is its compressor's dictionary, so it must look like the fleet's.
"$bin" bench rate --kubeconfig "$kc" --nodes 1 --interval 1s --client lean --clients 1 \
	--duration 5s --register-nodes >"$out/warm-up.txt" 2>&1
sleep 25 # DefaultColdAfter (15 s) and a demote round (3.75 s), with margin
empty=$(live empty)
"$bin" bench rate --kubeconfig "$kc" --nodes "$nodes" --interval 10s --client lean --clients 64 \
	--duration "$duration" --register-nodes >"$out/result.txt" 2>"$out/bench.log"
fleet=$(live fleet)
awk -v e="$empty" -v f="$fleet" -v n="$nodes" 'BEGIN{printf "live heap: empty %.1f MB, with %d nodes %.1f MB: %.0f bytes per node (Node + lease)\n", e/1e6, n, f/1e6, (f-e)/n}'
go tool pprof -top -inuse_space -nodecount=25 "$out/fleet.pb.gz" 2>/dev/null | sed -n '5,32p'
