#!/bin/bash
# scripts/bench-audit.sh BINARY [ROUNDS] [DURATION]: whole-server audit cost: leasehold bench max (64 clients, protobuf,
# HTTP/2+TLS, durable) as 1000 real nodes (bearer tokens), against serve
# with no audit, Metadata for every request in batch mode, and the shipped
# default policy; rounds alternate the three. Port 16443 must be free; each
# line gives throughput and the server's CPU-ms per 1,000 renewals, and the
# audit log's line count (rotated files included) shows nothing was dropped.
set -u
BIN=$1; ROUNDS=${2:-3}; DUR=${3:-20s}
W=${WORKDIR:-$(mktemp -d)}; mkdir -p $W
printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n' > $W/metadata.yaml
: > $W/tokens.csv; chmod 600 $W/tokens.csv
for r in $(seq 1 $ROUNDS); do
  for cfg in none metadata default; do
    D=$W/data-$cfg-$r; rm -rf $D
    ARGS=(serve --data-dir $D --secure-port 16443 --token-auth-file $W/tokens.csv)
    case $cfg in
      metadata) ARGS+=(--audit-log-path $D.audit.log --audit-log-mode batch --audit-policy-file $W/metadata.yaml);;
      default) ARGS+=(--audit-log-path $D.audit.log --audit-log-mode batch);;
    esac
    $BIN "${ARGS[@]}" > $D.log 2>&1 &
    PID=$!
    for i in $(seq 1 100); do [ -f $D/admin.kubeconfig ] && grep -q '"serving"' $D.log && break; sleep 0.2; done
    $BIN bench max --kubeconfig $D/admin.kubeconfig --node-tokens $W/tokens.csv --duration 4s > /dev/null 2>&1
    sleep 2
    OUT=$($BIN bench max --kubeconfig $D/admin.kubeconfig --node-tokens $W/tokens.csv --duration $DUR --server-pid $PID 2>&1 | tail -1)
    echo "round $r $cfg: $OUT"
    kill -TERM $PID; wait $PID
    [ -f $D.audit.log ] && echo "  audit lines: $(cat $D.audit*.log | wc -l)"
  done
done
