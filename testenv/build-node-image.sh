#!/usr/bin/env bash
# Builds the kind node image $NODE_IMAGE from the cached rootfs, the multi-call Kubernetes
# binary and testenv/node/files, with Docker's classic builder (works offline, keeps
# STOPSIGNAL). Skipped when the image exists.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
mkdir -p "$CACHE_DIR"
if docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
  echo "$NODE_IMAGE" > "$NODE_IMAGE_FILE"
  exit 0
fi
[ -x "$K8S_BIN" ] || die "missing $K8S_BIN (run testenv/build-k8s.sh)"
[ -f "$ROOTFS_TAR" ] || die "missing $ROOTFS_TAR (run testenv/build-rootfs.sh)"
[ -x "$CSI_BIN" ] && [ -x "$ATTACHER_BIN" ] && [ -x "$PROVISIONER_BIN" ] ||
  die "missing $CSI_BIN, $ATTACHER_BIN or $PROVISIONER_BIN (run testenv/build-csi.sh)"

ctx=$(mktemp -d "$CACHE_DIR/node-context.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
ln "$ROOTFS_TAR" "$ctx/rootfs.tar" 2>/dev/null || cp "$ROOTFS_TAR" "$ctx/rootfs.tar"

ov="$ctx/overlay"
mkdir -p "$ov"
cp -a "$TESTENV_DIR/node/files/." "$ov/"
install -D -m 0755 "$K8S_BIN" "$ov/usr/local/bin/nodedown-k8s"
for c in kubelet kubeadm kubectl kube-proxy kube-apiserver kube-controller-manager kube-scheduler etcd; do
  ln -s nodedown-k8s "$ov/usr/local/bin/$c"
done
install -D -m 0755 "$TESTENV_DIR/docker/runc-wrapper" "$ov/usr/local/libexec/nodedown/runc-wrapper"
mkdir -p "$ov/kind/images"
echo "$K8S_VERSION" > "$ov/kind/version"

# The images kubeadm will ask containerd for, under exactly the names it uses.
mapfile -t refs < <("$K8S_BIN" kubeadm config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null)
[ "${#refs[@]}" -gt 0 ] || die "kubeadm config images list printed nothing"
pause=$(printf '%s\n' "${refs[@]}" | grep '/pause:')
sed -i "s#@PAUSE_IMAGE@#$pause#" "$ov/etc/containerd/config.toml"
tar -xOf "$ROOTFS_TAR" ./usr/bin/catatonit > "$ctx/catatonit"
# Debian's static busybox, for the small image testenv's own tests run (cached .deb).
bbdir="$CACHE_DIR/busybox-static"
if [ ! -x "$bbdir/bin/busybox" ]; then
  mkdir -p "$bbdir.tmp" && (cd "$bbdir.tmp" && apt-get download -q busybox-static >/dev/null)
  dpkg-deb -x "$bbdir.tmp"/busybox-static_*.deb "$bbdir.tmp" && rm -rf "$bbdir" && mv "$bbdir.tmp" "$bbdir"
fi
python3 "$TESTENV_DIR/node/images.py" "$ov/kind/images/images.tar" "$K8S_BIN" "$ctx/catatonit" "$bbdir/bin/busybox" \
  --binary-image "nodedown.local/csi-driver:testenv" "$CSI_BIN" \
  --binary-image "nodedown.local/csi-attacher:$ATTACHER_VERSION" "$ATTACHER_BIN" \
  --binary-image "nodedown.local/csi-provisioner:$PROVISIONER_VERSION" "$PROVISIONER_BIN" \
  "${refs[@]}"
echo "$K8S_VERSION-$NODE_KEY" > "$ov/kind/images/revision"

# systemd: enable our units, keep gettys off the container's tty.
wants="$ov/etc/systemd/system/multi-user.target.wants"
mkdir -p "$wants"
for u in kubelet nodedown-preload nodedown-net kube-proxy; do
  ln -sf "/etc/systemd/system/$u.service" "$wants/$u.service"
done
ln -sf /lib/systemd/system/containerd.service "$wants/containerd.service"
for u in getty.target console-getty.service systemd-udevd.service; do
  ln -sf /dev/null "$ov/etc/systemd/system/$u"
done
tar -C "$ov" -cf "$ctx/overlay.tar" .
rm -rf "$ov"

cat > "$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
ADD rootfs.tar /
ADD overlay.tar /
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]
DOCKERFILE
DOCKER_BUILDKIT=0 docker build -q -t "$NODE_IMAGE" "$ctx" >/dev/null
echo "$NODE_IMAGE" > "$NODE_IMAGE_FILE"
# Older node images of testenv are dead weight (a cluster still using one keeps it: rmi fails).
docker images --format '{{.Repository}}:{{.Tag}}' nodedown/node | grep -vx "$NODE_IMAGE" | xargs -r docker rmi >/dev/null 2>&1 || true
