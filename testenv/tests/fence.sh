#!/usr/bin/env bash
# testenv/tests/fence.sh [CONTEXT]   (default kind-nodedown)
#
# The storage-side fence of testenv's driver (class nodedown-fence, NetworkFenceClass
# nodedown-fence), through the API as a platform would use it:
#  1. a claim of class nodedown-fence, a pod on one worker that opens /data/ledger ONCE and
#     appends a numbered line through that open file descriptor every 0.2 s, logging "ok N" or
#     "refused N" for each write;
#  2. a NetworkFence (cidrs: the worker's address) -> status.result Succeeded (the stand-in
#     controller called the driver's FenceClusterNetwork), then the writes through the file
#     opened before the fence fail ("refused"), and the storage holds no line written after
#     the first refusal; the node plugin logged the refusal and the fence controller reported it
#     as an Event (reason ClientRefused) on the NetworkFence;
#  3. the NetworkFence deleted -> gone (its finalizer: unfenced first), the storage's fence table
#     empty, and the same open file writes again;
#  4. the writer stopped: every write it saw acknowledged ("ok N") is in the storage, and no
#     refused one.
# An EXIT trap deletes the NetworkFence (finalizer included) and the namespace.
set -euo pipefail

ctx=${1:-kind-nodedown}
. "$(dirname "$0")/lib.sh"

suffix=$(printf '%04x%04x' $RANDOM $RANDOM)
ns=testenv-fence-$suffix
fence=testenv-fence-$suffix
image=nodedown.local/busybox:testenv
created=""
node_container() { docker ps --filter "label=io.x-k8s.kind.cluster=${ctx#kind-}" --format '{{.Names}}' | head -1; }

gone() { local out; out=$(k get "$@" --ignore-not-found -o name 2>/dev/null) && [ -z "$out" ]; }
cleanup() {
  local rc=$?
  trap - EXIT
  set +e
  k() { kubectl --context "$ctx" --request-timeout=20s "$@"; }
  if [ "$rc" != 0 ]; then
    log "diagnostics:"
    { k get networkfences; k -n "$ns" get pods -o wide; k -n "$ns" logs w --tail=5;
      k -n nodedown-csi logs deploy/csi-controller -c fence-controller --tail=10; } 2>&1 | sed 's/^/    /'
  fi
  if [ -n "$created" ]; then
    k delete networkfence "$fence" --ignore-not-found --wait=false >/dev/null 2>&1
    if ! wait_for 30 "NetworkFence $fence deleted" gone networkfence "$fence"; then
      k patch networkfence "$fence" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
      n=$(node_container)
      [ -n "$n" ] && docker exec "$n" sh -c 'echo "[]" > /mnt/nodedown-shared/csi/fences.json'
    fi
    k delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1
    wait_for 120 "namespace $ns deleted" gone namespace "$ns"
  fi
  if [ "$rc" = 0 ]; then log "PASS fence"; else log "FAIL fence (exit $rc)"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

k get networkfenceclass nodedown-fence >/dev/null || fail "precondition: NetworkFenceClass nodedown-fence (testenv/up applies it)"
node=$(k get nodes -l '!node-role.kubernetes.io/control-plane' -o name | sed 's|^node/||' | head -1)
addr=$(k get node "$node" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
[ -n "$addr" ] || fail "precondition: node $node has no InternalIP"
log "context $ctx, namespace $ns, node $node ($addr)"
created=1
k create namespace "$ns" >/dev/null
sa_exists() { k -n "$ns" get serviceaccount default >/dev/null 2>&1; }
wait_for 30 "service account default in $ns" sa_exists

log "step 1: a claim of nodedown-fence, a writer on $node appending through one open file"
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: $ns}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: nodedown-fence
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: w, namespace: $ns}
spec:
  nodeName: $node
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: $image
    imagePullPolicy: Never
    command:
    - sh
    - -c
    - |
      exec 3>>/data/ledger
      i=0
      while [ ! -e /tmp/stop ]; do
        i=\$((i+1))
        if echo "rec \$i" >&3 2>/dev/null; then echo "ok \$i"; else echo "refused \$i"; fi
        usleep 200000
      done
      echo stopped
      sleep 3600
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
YAML
running() { [ "$(k -n "$ns" get pod w -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; }
wait_for 120 "pod w Running" running
pv=$(k -n "$ns" get pvc data -o jsonpath='{.spec.volumeName}')
vol=$(k get pv "$pv" -o jsonpath='{.spec.csi.volumeHandle}')
path=$(k get pv "$pv" -o jsonpath='{.spec.csi.volumeAttributes.nodedown\.dev/data-path}')
[ "$path" = fuse ] || fail "PersistentVolume $pv: data path '$path', want fuse (the class's parameter)"
# The volume is served through FUSE on the node, not bind-mounted.
mounts=$(docker exec "$node" grep -c "nodedown-csi:$vol " /proc/self/mountinfo || true)
[ "${mounts:-0}" -ge 1 ] || fail "no FUSE mount of volume $vol on $node"
count() { k -n "$ns" logs w 2>/dev/null | grep -c "^$1 " || true; }
oks() { [ "$(count ok)" -ge "$1" ]; }
wait_for 30 "5 acknowledged writes" oks 5
stored() { docker exec "$(node_container)" sh -c "cat /mnt/nodedown-shared/csi/volumes/$vol/ledger"; }

log "step 2: NetworkFence $fence for $addr/32"
k apply -f - >/dev/null <<YAML
apiVersion: csiaddons.openshift.io/v1alpha1
kind: NetworkFence
metadata: {name: $fence}
spec:
  networkFenceClassName: nodedown-fence
  fenceState: Fenced
  cidrs: [$addr/32]
YAML
requested=$(now_us)
succeeded() { [ "$(k get networkfence "$fence" -o jsonpath='{.status.result}')" = Succeeded ]; }
wait_for 30 "NetworkFence $fence Succeeded" succeeded
log "    Succeeded $(secs $(( $(now_us) - requested ))) after the request: $(k get networkfence "$fence" -o jsonpath='{.status.message}')"
refused() { [ "$(count refused)" -ge 3 ]; }
wait_for 30 "writes through the open file refused" refused
# Outputs are read whole before they are searched: a grep that stops at its first match would
# end the pipe while kubectl still writes (SIGPIPE, exit 141 under pipefail).
wlog=$(k -n "$ns" logs w)
first_refused=$(grep -m1 '^refused ' <<<"$wlog" | cut -d' ' -f2)
stored_now=$(stored)
if grep -qx "rec $first_refused" <<<"$stored_now"; then fail "the storage holds rec $first_refused, which the writer saw refused"; fi
last_stored=$(tail -1 <<<"$stored_now")
log "    first refused write: rec $first_refused; last line in the storage: $last_stored"
[ "$last_stored" = "rec $((first_refused - 1))" ] || fail "the storage's last line is '$last_stored', want rec $((first_refused - 1)) (nothing after the fence)"
plugin=$(k -n nodedown-csi get pods -l app=nodedown-csi-node --field-selector "spec.nodeName=$node" -o name)
plog=$(k -n nodedown-csi logs "$plugin" -c csi-driver)
grep -q "fence: refused .* of node $node ($addr) on volume $vol" <<<"$plog" || fail "the node plugin on $node logged no refusal for volume $vol"

refusal_event() {
  local messages
  messages=$(k -n default get events --field-selector "involvedObject.kind=NetworkFence,involvedObject.name=$fence,reason=ClientRefused" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
  grep -q "of node $node ($addr) on volume $vol at " <<<"$messages"
}
wait_for 15 "the fence controller's ClientRefused event on $fence" refusal_event
log "    $(k -n default get events --field-selector "involvedObject.name=$fence,reason=ClientRefused" -o jsonpath='{.items[0].message}')"

log "step 3: the NetworkFence deleted: unfenced, then gone"
k delete networkfence "$fence" --wait=false >/dev/null
wait_for 30 "NetworkFence $fence gone (unfenced by its finalizer)" gone networkfence "$fence"
table=$(docker exec "$(node_container)" cat /mnt/nodedown-shared/csi/fences.json)
[ "$table" = "[]" ] || fail "the storage's fence table after the unfence: $table, want []"
before=$(count ok)
again() { [ "$(count ok)" -ge $((before + 3)) ]; }
wait_for 30 "the same open file writing again" again
last_log=$(k -n "$ns" logs w | tail -1)
case "$last_log" in ok*) ;; *) fail "the writer's last line is '$last_log', want ok" ;; esac

log "step 4: every acknowledged write is in the storage, no refused one"
k -n "$ns" exec w -- touch /tmp/stop
stopped() { k -n "$ns" logs w | tail -1 | grep -qx stopped; }
wait_for 10 "the writer stopped" stopped
acked=$(k -n "$ns" logs w | sed -n 's/^ok /rec /p' | sort)
have=$(stored | sort)
missing=$(comm -23 <(echo "$acked") <(echo "$have") | head -3)
extra=$(comm -13 <(echo "$acked") <(echo "$have") | head -3)
[ -z "$missing" ] || fail "acknowledged but not in the storage: $missing"
[ -z "$extra" ] || fail "in the storage but refused (or never acknowledged): $extra"
log "    $(echo "$acked" | grep -c .) acknowledged writes, all in the storage; $(count refused) refused, none in it"
