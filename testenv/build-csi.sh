#!/usr/bin/env bash
# Builds testenv's storage that attaches: the nodedown-csi driver (testenv/csi, keyed by its
# source), the real kubernetes-csi external-attacher and csi-sanity (both from the Go module
# proxy, keyed by version). A present output is not rebuilt.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ ! -x "$CSI_BIN" ]; then
  mkdir -p "$(dirname "$CSI_BIN")"
  (cd "$TESTENV_DIR/csi" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$CSI_BIN.tmp" .)
  mv "$CSI_BIN.tmp" "$CSI_BIN"
fi

if [ ! -x "$ATTACHER_BIN" ]; then
  # The attacher's go.mod has replace directives, so `go install module@version` refuses it:
  # build it as the main module from a copy of the downloaded source.
  dir=$(GOFLAGS=-mod=mod go mod download -json "github.com/kubernetes-csi/external-attacher/v4@$ATTACHER_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || die "could not download external-attacher $ATTACHER_VERSION"
  src=$(mktemp -d "$CACHE_DIR/attacher-src.XXXXXX")
  cp -r "$dir/." "$src" && chmod -R u+w "$src"
  mkdir -p "$(dirname "$ATTACHER_BIN")"
  (cd "$src" && CGO_ENABLED=0 go build -mod=mod -trimpath \
    -ldflags="-s -w -X main.version=$ATTACHER_VERSION" -o "$ATTACHER_BIN.tmp" ./cmd/csi-attacher)
  mv "$ATTACHER_BIN.tmp" "$ATTACHER_BIN"
  rm -rf "$src"
fi

if [ ! -x "$CSI_SANITY_BIN" ]; then
  gobin=$(mktemp -d)
  GOBIN=$gobin CGO_ENABLED=0 go install -trimpath -ldflags="-s -w" \
    "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@$CSI_SANITY_VERSION"
  mkdir -p "$(dirname "$CSI_SANITY_BIN")"
  mv "$gobin/csi-sanity" "$CSI_SANITY_BIN"
  rmdir "$gobin"
fi
