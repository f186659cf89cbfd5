#!/usr/bin/env bash
# testenv/tests/multi-attach.sh [CONTEXT]   (default kind-nodedown)
#
# The attach rule of testenv's attaching storage (class nodedown-attach), through the API:
#  1. a static ReadWriteOnce PersistentVolume of the CSI driver, a claim, pod A on one worker:
#     A Running, a VolumeAttachment for (volume, A's node) attached;
#  2. pod B on another worker with the same claim: B is not Running, a Warning
#     FailedAttachVolume "Multi-Attach error" event names B, and the only VolumeAttachment of
#     the volume is still A's node's;
#  3. A deleted: the volume is detached from A's node (its VolumeAttachment gone) and attached
#     to B's (B Running) — detach and attach through the external-attacher;
#  4. the same with a ReadWriteMany volume: two pods on two nodes Running at once, two
#     VolumeAttachments attached.
# An EXIT trap deletes the namespace, the PersistentVolumes and their directories.
set -euo pipefail

ctx=${1:-kind-nodedown}
. "$(dirname "$0")/lib.sh"

suffix=$(printf '%04x%04x' $RANDOM $RANDOM)
ns=testenv-attach-$suffix
image=nodedown.local/busybox:testenv
created=""

gone() { local out; out=$(k get "$@" --ignore-not-found -o name 2>/dev/null) && [ -z "$out" ]; }
cleanup() {
  local rc=$?
  trap - EXIT
  set +e
  k() { kubectl --context "$ctx" --request-timeout=20s "$@"; }
  if [ "$rc" != 0 ]; then
    log "diagnostics:"
    { k -n "$ns" get pods -o wide; k get volumeattachments; k -n "$ns" get events --sort-by=.lastTimestamp | tail -15; } 2>&1 | sed 's/^/    /'
  fi
  if [ -n "$created" ]; then
    k delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1
    wait_for 120 "namespace $ns deleted" gone namespace "$ns"
    for pv in "$ns-rwo" "$ns-rwx"; do
      k delete pv "$pv" --ignore-not-found --wait=false >/dev/null 2>&1
      wait_for 60 "PersistentVolume $pv deleted" gone pv "$pv"
    done
    # The volumes' directories on the shared storage, removed from inside a node.
    n=$(docker ps --filter "label=io.x-k8s.kind.cluster=${ctx#kind-}" --format '{{.Names}}' | head -1)
    [ -n "$n" ] && docker exec "$n" sh -c "rm -rf /mnt/nodedown-shared/csi/volumes/$ns.* /mnt/nodedown-shared/csi/attachments/$ns.* /mnt/nodedown-shared/csi/meta/$ns.*"
  fi
  if [ "$rc" = 0 ]; then log "PASS multi-attach"; else log "FAIL multi-attach (exit $rc)"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

workers=($(k get nodes -l '!node-role.kubernetes.io/control-plane' -o name | sed 's|^node/||'))
[ "${#workers[@]}" -ge 2 ] || fail "precondition: need at least 2 workers"
node_a=${workers[0]} node_b=${workers[1]}
log "context $ctx, namespace $ns, nodes $node_a and $node_b"
created=1
k create namespace "$ns" >/dev/null
sa_exists() { k -n "$ns" get serviceaccount default >/dev/null 2>&1; }
wait_for 30 "service account default in $ns" sa_exists

volume() { # volume NAME MODE: a static PV of the attaching class, pre-bound to claim NAME
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: $ns-$1}
spec:
  capacity: {storage: 1Gi}
  accessModes: [$2]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: nodedown-attach
  claimRef: {namespace: $ns, name: $1}
  csi:
    driver: csi.nodedown.dev
    volumeHandle: $ns.$1
    volumeAttributes: {nodedown.dev/provision: on-publish}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1, namespace: $ns}
spec:
  accessModes: [$2]
  storageClassName: nodedown-attach
  volumeName: $ns-$1
  resources: {requests: {storage: 1Gi}}
YAML
}
pod() { # pod NAME NODE CLAIM
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $ns}
spec:
  nodeName: $2
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: $image
    imagePullPolicy: Never
    command: [sh, -c, "echo \$(hostname) >> /data/who; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: $3}}]
YAML
}
running() { [ "$(k -n "$ns" get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; }
# "node attached" of every VolumeAttachment of PV $1, one per line, sorted
attachments() {
  k get volumeattachments -o jsonpath="{range .items[?(@.spec.source.persistentVolumeName==\"$1\")]}{.spec.nodeName} {.status.attached}{\"\\n\"}{end}" | sort
}
attached_to() { [ "$(attachments "$1")" = "$2" ]; } # attached_to PV "node true[\nnode true]"
multi_attach_event() { # a FailedAttachVolume Multi-Attach event on pod $1
  k -n "$ns" get events --field-selector "involvedObject.name=$1,reason=FailedAttachVolume" \
    -o jsonpath='{range .items[*]}{.type} {.message}{"\n"}{end}' | grep -q '^Warning Multi-Attach error'
}

log "step 1: ReadWriteOnce volume, pod A on $node_a"
volume rwo ReadWriteOnce
pod a "$node_a" rwo
wait_for 90 "pod a Running" running a
wait_for 30 "volume attached to $node_a only" attached_to "$ns-rwo" "$node_a true"

log "step 2: pod B on $node_b with the same claim"
pod b "$node_b" rwo
wait_for 60 "a Multi-Attach error event on pod b" multi_attach_event b
running b && fail "pod b is Running while the volume is attached to $node_a"
attached_to "$ns-rwo" "$node_a true" || fail "VolumeAttachments of $ns-rwo: $(attachments "$ns-rwo" | tr '\n' ';'), want only $node_a"
log "    Multi-Attach error on b; VolumeAttachments: $(attachments "$ns-rwo" | tr '\n' ';')"

log "step 3: pod A deleted: detach from $node_a, attach to $node_b"
k -n "$ns" delete pod a --wait=false >/dev/null
wait_for 150 "pod b Running" running b
attached_to "$ns-rwo" "$node_b true" || fail "VolumeAttachments of $ns-rwo: $(attachments "$ns-rwo" | tr '\n' ';'), want only $node_b"
who=$(k -n "$ns" exec b -- cat /data/who)
[ "$(echo "$who" | grep -c .)" = 2 ] || fail "/data/who should name both pods' hosts (data followed the volume): $who"

log "step 4: ReadWriteMany volume: pods on $node_a and $node_b at once"
volume rwx ReadWriteMany
pod many-a "$node_a" rwx
pod many-b "$node_b" rwx
wait_for 90 "pod many-a Running" running many-a
wait_for 90 "pod many-b Running" running many-b
want=$(printf '%s true\n%s true' "$node_a" "$node_b" | sort)
wait_for 30 "volume attached to both nodes" attached_to "$ns-rwx" "$want"
