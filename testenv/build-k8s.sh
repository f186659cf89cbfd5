#!/usr/bin/env bash
# Builds the Kubernetes components and etcd as one multi-call binary (testenv/k8s) and kind,
# from the Go module proxy. Outputs are cached by version; a present output is not rebuilt.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ ! -x "$K8S_BIN" ]; then
  mkdir -p "$(dirname "$K8S_BIN")"
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date -X $pkg.gitCommit=nodedown-testenv"
  done
  ldflags+=" -X go.etcd.io/etcd/api/v3/version.GitSHA=nodedown-testenv"
  (cd "$TESTENV_DIR/k8s" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$K8S_BIN.tmp" .)
  mv "$K8S_BIN.tmp" "$K8S_BIN"
fi

if [ ! -x "$KIND_BIN" ]; then
  mkdir -p "$(dirname "$KIND_BIN")"
  gobin=$(mktemp -d)
  GOBIN=$gobin CGO_ENABLED=0 go install -trimpath -ldflags="-s -w" "sigs.k8s.io/kind@$KIND_VERSION"
  mv "$gobin/kind" "$KIND_BIN"
  rmdir "$gobin"
fi
