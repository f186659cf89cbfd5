# shellcheck shell=bash
# Shared settings and helpers for the testenv scripts. Sourced, not run.

TESTENV_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$TESTENV_DIR/.." && pwd)

# Versions: every cached output is keyed by them.
K8S_VERSION=v1.34.4
ETCD_VERSION=3.6.4
KIND_VERSION=v0.33.0
NODE_IMAGE_REV=1 # bump when anything under testenv/node changes
NODE_IMAGE="nodedown/node:${K8S_VERSION}-r${NODE_IMAGE_REV}"

# Everything expensive lives here, outside the repository.
CACHE_DIR=${NODEDOWN_CACHE:-/var/cache/nodedown}
K8S_BIN="$CACHE_DIR/k8s-$K8S_VERSION/nodedown-k8s"
KIND_BIN="$CACHE_DIR/kind-$KIND_VERSION/kind"
ROOTFS_TAR="$CACHE_DIR/rootfs-bookworm-r${NODE_IMAGE_REV}.tar"
# The host directory every node mounts: the "shared" storage that lets a volume follow its pod.
SHARED_DIR=${NODEDOWN_SHARED_DIR:-/var/lib/nodedown/shared}

export GOFLAGS=-buildvcs=false

step_start=0
step() { # step NAME: prints the previous step's duration and starts timing a new one
  step_end
  step_name=$1
  step_start=$(date +%s.%N)
  printf '==> %s\n' "$step_name" >&2
}
step_end() {
  if [ "$step_start" != 0 ]; then
    printf '    %s: %.1fs\n' "$step_name" "$(echo "$(date +%s.%N) - $step_start" | bc)" >&2
    step_start=0
  fi
}
die() { printf 'testenv: %s\n' "$*" >&2; exit 1; }
