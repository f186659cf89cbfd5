#!/usr/bin/env bash
# testenv/tests/csi-sanity.sh [CONTEXT]   (the context is not used: this runs on the host)
#
# csi-sanity (kubernetes-csi/csi-test, cached by testenv/build-csi.sh) against testenv's CSI
# driver: the driver's controller and node services on one unix socket, with a throwaway
# storage root, mount and staging directories under a temporary directory; twice, on the
# bind-mounted and on the fenced (FUSE) data path. Passes when csi-sanity reports no failed spec. The driver process is ended by its PID; leftover mounts
# under the temporary directory are unmounted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../lib.sh"

[ -x "$CSI_BIN" ] || fail "missing $CSI_BIN (run testenv/up or testenv/build-csi.sh)"
[ -x "$CSI_SANITY_BIN" ] || fail "missing $CSI_SANITY_BIN (run testenv/up or testenv/build-csi.sh)"
work=$(mktemp -d /tmp/nodedown-csi-sanity.XXXXXX)
driver_pid=""
cleanup() {
  local rc=$?
  trap - EXIT
  set +e
  [ -n "$driver_pid" ] && kill "$driver_pid" 2>/dev/null && wait "$driver_pid" 2>/dev/null
  # Unmount anything csi-sanity left mounted (deepest first), then remove the directory.
  awk -v w="$work" '$5 ~ "^"w {print $5}' /proc/self/mountinfo | sort -r | xargs -r -n1 umount
  [ "$rc" = 0 ] || { log "driver log:"; tail -30 "$work/driver.log" | sed 's/^/    /'; }
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

mkdir -p "$work/root"
# A zone: the driver declares VOLUME_ACCESSIBILITY_CONSTRAINTS, so csi-sanity expects the node's
# accessible topology and makes its volumes with that topology as their requirement (zonal).
NODE_NAME=sanity-node "$CSI_BIN" all --endpoint "unix://$work/csi.sock" --root "$work/root" \
  --node-address 127.0.0.1 --zone zone-sanity >"$work/driver.log" 2>&1 &
driver_pid=$!
socket_there() { [ -S "$work/csi.sock" ]; }
wait_for 20 "the driver's socket" socket_there
# Twice: volumes on the bind-mounted data path (the default), then on the fenced one (the
# StorageClass parameter nodedown.dev/data-path: fuse, served through FUSE by the node service).
printf 'nodedown.dev/data-path: fuse\n' > "$work/fuse-params.yaml"
for pass in bind fuse; do
  params=()
  [ "$pass" = fuse ] && params=(--csi.testvolumeparameters "$work/fuse-params.yaml")
  log "csi-sanity $CSI_SANITY_VERSION against $(basename "$CSI_BIN") (pid $driver_pid), data path $pass"
  "$CSI_SANITY_BIN" --csi.endpoint "$work/csi.sock" --csi.mountdir "$work/mnt" \
    --csi.stagingdir "$work/stage" "${params[@]}" --ginkgo.no-color >"$work/sanity.log" 2>&1 || {
    grep -E "^\s*\[FAIL\]|Ran [0-9]+ of|Passed" "$work/sanity.log" | head -40
    fail "csi-sanity failed on the $pass data path (log above)"
  }
  summary=$(grep -E "^(SUCCESS|FAIL)!|Passed \|" "$work/sanity.log" | tail -1)
  ran=$(grep -E "^Ran [0-9]+ of" "$work/sanity.log" | tail -1)
  log "$ran"
  log "$summary"
  # Ginkgo's summary: "Ran N of M Specs" and "SUCCESS! -- P Passed | F Failed | …". Specs must
  # have run, and exactly zero failed (a grep for "0 Failed" would also match "10 Failed").
  [[ "$ran" =~ ^Ran\ ([0-9]+)\ of ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] ||
    fail "csi-sanity ran no specs on the $pass data path ($ran)"
  [[ "$summary" =~ (^|[^0-9])([0-9]+)\ Failed ]] && [ "${BASH_REMATCH[2]}" -eq 0 ] ||
    fail "csi-sanity reported failures on the $pass data path ($summary)"
done
fuse_stages=$(grep -c 'NodeStageVolume.*nodedown.dev/data-path.*fuse.*-> ok' "$work/driver.log" || true)
[ "${fuse_stages:-0}" -gt 0 ] || fail "the fuse pass staged no volume on the fenced data path"
log "the fuse pass staged $fuse_stages volume(s) through FUSE"
