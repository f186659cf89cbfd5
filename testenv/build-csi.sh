#!/usr/bin/env bash
# Builds testenv's storage that attaches: the nodedown-csi driver (testenv/csi, keyed by its
# source), the real kubernetes-csi external-attacher and external-provisioner and csi-sanity
# (from the Go module proxy, keyed by version). A present output is not rebuilt.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ ! -x "$CSI_BIN" ]; then
  mkdir -p "$(dirname "$CSI_BIN")"
  (cd "$TESTENV_DIR/csi" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$CSI_BIN.tmp" .)
  mv "$CSI_BIN.tmp" "$CSI_BIN"
fi

# build_sidecar MODULE VERSION CMD OUT: a kubernetes-csi sidecar from the Go module proxy. Their
# go.mod files have replace directives, so `go install module@version` refuses them: build each
# as the main module from a copy of the downloaded source.
build_sidecar() {
  local module=$1 version=$2 cmd=$3 out=$4 dir src
  [ -x "$out" ] && return 0
  dir=$(GOFLAGS=-mod=mod go mod download -json "$module@$version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || die "could not download $module $version"
  src=$(mktemp -d "$CACHE_DIR/sidecar-src.XXXXXX")
  cp -r "$dir/." "$src" && chmod -R u+w "$src"
  mkdir -p "$(dirname "$out")"
  (cd "$src" && CGO_ENABLED=0 go build -mod=mod -trimpath \
    -ldflags="-s -w -X main.version=$version" -o "$out.tmp" "./cmd/$cmd")
  mv "$out.tmp" "$out"
  rm -rf "$src"
}
build_sidecar github.com/kubernetes-csi/external-attacher/v4 "$ATTACHER_VERSION" csi-attacher "$ATTACHER_BIN"
# The provisioner serves the classes of csi.nodedown.dev that are not nodedown-attach (whose
# volumes nodedown makes itself): a class `nodedown qualify` makes from a testdriver file's
# FromName or FromFile.
build_sidecar github.com/kubernetes-csi/external-provisioner/v6 "$PROVISIONER_VERSION" csi-provisioner "$PROVISIONER_BIN"

if [ ! -x "$CSI_SANITY_BIN" ]; then
  gobin=$(mktemp -d)
  GOBIN=$gobin CGO_ENABLED=0 go install -trimpath -ldflags="-s -w" \
    "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@$CSI_SANITY_VERSION"
  mkdir -p "$(dirname "$CSI_SANITY_BIN")"
  mv "$gobin/csi-sanity" "$CSI_SANITY_BIN"
  rmdir "$gobin"
fi
