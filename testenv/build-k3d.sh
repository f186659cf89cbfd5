#!/usr/bin/env bash
# Builds the k3d CLI v5.8.3 from the Go module proxy (cached as $CACHE/k3d-v5.8.3/k3d), for
# nodedown's k3d provider tests (tests/k3d.rs). k3s itself cannot be had here (no image
# registry, and its source is not served), so no k3d cluster is created on these machines: the
# tests cover what k3d does without k3s (its config schema, listing clusters, nodedown's errors).
#
# Why not `go install …@v5.8.3`: the proxy here lists no versions of the module (it serves the
# exact version only), and go install asks for the list to check deprecations; the module's
# vendor directory is incomplete (it belongs to a go.work). So: download, copy, build as the
# main module with -mod=mod.
set -euo pipefail
K3D_VERSION=v5.8.3
CACHE_DIR=${NODEDOWN_CACHE:-/var/cache/nodedown}
K3D_BIN="$CACHE_DIR/k3d-$K3D_VERSION/k3d"
[ -x "$K3D_BIN" ] && exit 0
echo "testenv: building k3d $K3D_VERSION from the Go module proxy" >&2
dir=$(GOFLAGS=-mod=mod go mod download -json "github.com/k3d-io/k3d/v5@$K3D_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { echo "testenv: could not download k3d $K3D_VERSION" >&2; exit 1; }
mkdir -p "$CACHE_DIR"
src=$(mktemp -d "$CACHE_DIR/k3d-src.XXXXXX")
trap 'rm -rf "$src"' EXIT
cp -r "$dir/." "$src" && chmod -R u+w "$src" && rm -rf "$src/vendor"
mkdir -p "$(dirname "$K3D_BIN")"
(cd "$src" && GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -mod=mod -trimpath \
  -ldflags="-s -w -X github.com/k3d-io/k3d/v5/version.Version=$K3D_VERSION" -o "$K3D_BIN.tmp" .)
mv "$K3D_BIN.tmp" "$K3D_BIN"
