#!/usr/bin/env bash
# Regenerates zz_generated.openapi.go with the ecosystem generator,
# k8s.io/kube-openapi/cmd/openapi-gen, at exactly the kube-openapi version
# pinned in go.mod, over the API packages whose types Leasehold serves
# (internal/served).
# Run from anywhere: `go generate ./internal/openapi` or this script.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "${here}"

version="$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)"

# Input packages: served.OpenAPIPackages, the one list of what serve
# exposes (internal/served): every served group version's types, the meta
# types used in requests and responses, and version.Info for /version.
listed="$(go run ../served/openapipackages)"
mapfile -t pkgs <<<"${listed}"
readonly_pkgs="$(IFS=,; echo "${pkgs[*]}")"

# The API rule violations report lists upstream naming exceptions in the
# k8s.io types (the same ones Kubernetes records in its own known-violations
# list); they are not ours to fix, so the report is kept out of the tree.
report="$(mktemp)"
trap 'rm -f "${report}"' EXIT

go run "k8s.io/kube-openapi/cmd/openapi-gen@${version}" \
  --output-dir "${here}" \
  --output-pkg github.com/leasehold/leasehold/internal/openapi \
  --output-file zz_generated.openapi.go \
  --go-header-file "${here}/boilerplate.go.txt" \
  --readonly-pkg "${readonly_pkgs}" \
  --report-filename "${report}" \
  "${pkgs[@]}"
