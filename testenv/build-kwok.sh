#!/usr/bin/env bash
# Builds kwok v0.8.0 (sigs.k8s.io/kwok, simulated nodes and pods) from the Go module proxy,
# cached as $CACHE/kwok-v0.8.0/kwok, for nodedown's simulated provider (`provider: kwok`,
# README "Simulated nodes"). Needs Go >= 1.26 (its go.mod). Under two minutes warm-proxy here.
set -euo pipefail
KWOK_VERSION=v0.8.0
CACHE_DIR=${NODEDOWN_CACHE:-/var/cache/nodedown}
KWOK_BIN="$CACHE_DIR/kwok-$KWOK_VERSION/kwok"
[ -x "$KWOK_BIN" ] && exit 0
echo "testenv: building kwok $KWOK_VERSION from the Go module proxy" >&2
gobin=$(mktemp -d "$CACHE_DIR/kwok-bin.XXXXXX")
trap 'rm -rf "$gobin"' EXIT
GOBIN=$gobin GOFLAGS=-buildvcs=false CGO_ENABLED=0 go install -trimpath -ldflags="-s -w" \
  "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
mkdir -p "$(dirname "$KWOK_BIN")"
mv "$gobin/kwok" "$KWOK_BIN"
