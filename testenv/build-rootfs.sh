#!/usr/bin/env bash
# Debian bookworm rootfs for the node image (debootstrap from Debian's packages), cached as a tar.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ -f "$ROOTFS_TAR" ] && exit 0
command -v debootstrap >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null; }
mkdir -p "$CACHE_DIR"
dir=$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")
trap 'rm -rf "$dir"' EXIT
# The Debian mirror apt already uses (the only one reachable here).
mirror=$(grep -hE '^URIs:.*/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2; exit}' || true)
[ -n "$mirror" ] || mirror=$(grep -hE '^deb .*/debian/? bookworm' /etc/apt/sources.list 2>/dev/null | awk '{print $2; exit}' || true)
[ -n "$mirror" ] || die "cannot find the Debian mirror this machine uses (looked in /etc/apt)"
debootstrap --variant=minbase \
  --include=systemd,systemd-sysv,dbus,containerd,runc,iptables,iproute2,containernetworking-plugins,procps,ca-certificates,conntrack,jq,kmod,catatonit,util-linux,mount \
  bookworm "$dir" "$mirror" >"$CACHE_DIR/debootstrap.log" 2>&1 || { tail -20 "$CACHE_DIR/debootstrap.log" >&2; die "debootstrap failed"; }
rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
tar -C "$dir" -cf "$ROOTFS_TAR.tmp" .
mv "$ROOTFS_TAR.tmp" "$ROOTFS_TAR"
