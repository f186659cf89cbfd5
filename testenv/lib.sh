# shellcheck shell=bash
# Shared settings and helpers for the testenv scripts. Sourced, not run.

TESTENV_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$TESTENV_DIR/.." && pwd)

# Versions: every cached output is keyed by them.
K8S_VERSION=v1.34.4
ETCD_VERSION=3.6.4
KIND_VERSION=v0.33.0
ATTACHER_VERSION=v4.12.0
PROVISIONER_VERSION=v6.4.0
CSI_SANITY_VERSION=v5.6.0

# Everything expensive lives here, outside the repository.
CACHE_DIR=${NODEDOWN_CACHE:-/var/cache/nodedown}
K8S_BIN="$CACHE_DIR/k8s-$K8S_VERSION/nodedown-k8s"
KIND_BIN="$CACHE_DIR/kind-$KIND_VERSION/kind"
# Content keys: a change to a script or file that goes into an output gives it a new name.
tree_hash() { (cd "$TESTENV_DIR" && find "$@" -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-10); }
ROOTFS_KEY=$(tree_hash build-rootfs.sh)
ROOTFS_TAR="$CACHE_DIR/rootfs-bookworm-$ROOTFS_KEY.tar"
# testenv's CSI driver (keyed by its source), the external-attacher, the external-provisioner and
# csi-sanity (by version).
CSI_KEY=$(tree_hash csi)
CSI_BIN="$CACHE_DIR/csi-$CSI_KEY/nodedown-csi"
ATTACHER_BIN="$CACHE_DIR/external-attacher-$ATTACHER_VERSION/csi-attacher"
PROVISIONER_BIN="$CACHE_DIR/external-provisioner-$PROVISIONER_VERSION/csi-provisioner"
CSI_SANITY_BIN="$CACHE_DIR/csi-sanity-$CSI_SANITY_VERSION/csi-sanity"
NODE_KEY=$(tree_hash build-rootfs.sh build-node-image.sh build-csi.sh node docker/runc-wrapper csi)
NODE_IMAGE="nodedown/node:${K8S_VERSION}-${NODE_KEY}"
# nodedown reads the current node image name from here (or NODEDOWN_NODE_IMAGE).
NODE_IMAGE_FILE="$CACHE_DIR/node-image"
# The host directory every node mounts: the "shared" storage that lets a volume follow its pod.
SHARED_DIR=${NODEDOWN_SHARED_DIR:-/var/lib/nodedown/shared}

export GOFLAGS=-buildvcs=false

step_start=0
step() { # step NAME: prints the previous step's duration and starts timing a new one
  step_end
  step_name=$1
  step_start=${EPOCHREALTIME/./}
  printf '==> %s\n' "$step_name" >&2
}
step_end() {
  if [ "$step_start" != 0 ]; then
    local us=$(( ${EPOCHREALTIME/./} - step_start ))
    printf '    %s: %d.%01ds\n' "$step_name" $((us / 1000000)) $((us % 1000000 / 100000)) >&2
    step_start=0
  fi
}
die() { printf 'testenv: %s\n' "$*" >&2; exit 1; }
