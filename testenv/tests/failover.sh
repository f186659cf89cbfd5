#!/usr/bin/env bash
# testenv/tests/failover.sh [CONTEXT]   (default kind-nodedown)
#
# The nodedown scenario by hand, with kubectl and docker:
#  1. a 1-replica StatefulSet whose pod appends a numbered line to /data/log every 0.5s (and
#     syncs), on a ReadWriteOnce claim bound to a PersistentVolume on the shared storage;
#  2. hard power-off of the worker it runs on (docker kill);
#  3. asserts the Node goes NotReady and the pod is stuck Terminating;
#  4. adds the out-of-service taint to that node;
#  5. asserts a NEW pod (other UID) is Running and Ready on ANOTHER worker, and that /data/log
#     still holds, unchanged, every line written before the kill (and that the new pod appends);
#  6. restarts the node, waits for Ready, removes the taint, asserts no node has it, deletes
#     the namespace and the PersistentVolume.
# An EXIT trap always heals: node container started and Ready, taint removed, namespace,
# PersistentVolume and the volume's directory on the shared storage deleted (all bounded).
set -euo pipefail

ctx=${1:-kind-nodedown}
. "$(dirname "$0")/lib.sh"

suffix=$(printf '%04x%04x' $RANDOM $RANDOM)
ns=testenv-failover-$suffix
sts=web
claim=data-$sts-0
pv=$ns-data
volume_dir=/mnt/nodedown-shared/$ns/$claim # inside the nodes
taint_key=node.kubernetes.io/out-of-service
image=nodedown.local/busybox:testenv

killed_node=""   # set once the node's container has been killed, until it is Ready again
tainted=""       # set once the out-of-service taint has been added, until it is removed
created=""       # set once the namespace is about to be created
cleaned=""       # set once the namespace and the PersistentVolume are deleted

node_ready() { # node_ready NODE: its Ready condition is True
  [ "$(k get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
node_back() { # node_back NODE SINCE: Ready, and its kubelet renewed its Lease after SINCE (epoch s)
  # (right after a kill the Ready condition is still the stale True for up to ~16s)
  local renew
  node_ready "$1" || return 1
  renew=$(k -n kube-node-lease get lease "$1" -o jsonpath='{.spec.renewTime}' 2>/dev/null) || return 1
  [ -n "$renew" ] && [ "$(date -d "$renew" +%s)" -gt "$2" ]
}
node_not_ready() { # Ready is False or Unknown
  local s
  s=$(k get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') || return 1
  [ "$s" = False ] || [ "$s" = Unknown ]
}
container_running() { [ "$(docker inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ]; }
has_taint() { # has_taint NODE
  local keys
  keys=$(k get node "$1" -o jsonpath='{range .spec.taints[*]}{.key}{"\n"}{end}') &&
    grep -qx "$taint_key" <<<"$keys"
}
nodes_with_taint() {
  k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" "}{range .spec.taints[*]}{.key}{" "}{end}{"\n"}{end}' |
    awk -v key="$taint_key" '{for (i = 2; i <= NF; i++) if ($i == key) print $1}'
}
gone() { # gone KIND NAME: the API server says there is no such object
  local out
  out=$(k get "$@" --ignore-not-found -o name 2>/dev/null) && [ -z "$out" ]
}
pod_state() { # "uid|node|phase|ready|deletionTimestamp" of pod web-0, or nothing
  k -n "$ns" get pod "$sts-0" --ignore-not-found -o \
    jsonpath='{.metadata.uid}|{.spec.nodeName}|{.status.phase}|{.status.conditions[?(@.type=="Ready")].status}|{.metadata.deletionTimestamp}'
}

cleanup() {
  local rc=$?
  trap - EXIT
  set +e
  # Bounded waits only from here on: a failure must not hang the trap.
  fail() { log "cleanup: $*"; return 1; }
  k() { kubectl --context "$ctx" --request-timeout=20s "$@"; }
  if [ "$rc" != 0 ]; then
    log "diagnostics:"
    { k get nodes; k -n "$ns" get pods -o wide; k -n "$ns" get pvc; } 2>&1 | sed 's/^/    /'
  fi
  if [ -n "$killed_node" ]; then
    local since
    since=$(date +%s)
    if ! container_running "$killed_node"; then
      log "cleanup: starting node container $killed_node"
      docker start "$killed_node" >/dev/null
    fi
    wait_for 180 "node $killed_node Ready" node_back "$killed_node" "$since" &&
      log "cleanup: node $killed_node Ready"
  fi
  if [ -n "$tainted" ] && has_taint "$tainted"; then
    log "cleanup: removing $taint_key from $tainted"
    k taint node "$tainted" "$taint_key-" >/dev/null
  fi
  if [ -n "$created" ] && [ -z "$cleaned" ]; then
    log "cleanup: deleting namespace $ns and PersistentVolume $pv"
    k delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1
    wait_for 90 "namespace $ns deleted" gone namespace "$ns"
    k delete pv "$pv" --ignore-not-found --wait=false >/dev/null 2>&1
    wait_for 30 "PersistentVolume $pv deleted" gone pv "$pv"
  fi
  # The volume's directory on the shared storage (files written by root in the pod): remove
  # it from inside a running node, where the shared directory is mounted.
  for n in $([ -n "$created" ] && k get nodes -o name 2>/dev/null | sed 's|^node/||'); do
    container_running "$n" && docker exec "$n" test -d /mnt/nodedown-shared || continue
    docker exec "$n" rm -rf "/mnt/nodedown-shared/$ns" || log "cleanup: cannot remove $ns from the shared storage"
    break
  done
  if [ "$rc" = 0 ]; then log "PASS failover"; else log "FAIL failover (exit $rc)"; fi
  exit "$rc"
}
trap cleanup EXIT
# On a signal, exit through the EXIT trap with the conventional status (so it is not 0).
trap 'exit 130' INT
trap 'exit 143' TERM

log "context $ctx, namespace $ns"
k get --raw /readyz >/dev/null 2>&1 || fail "the API server of context $ctx is not reachable/ready"

# Preconditions: all nodes Ready, no out-of-service taint anywhere, two Ready workers.
not_ready=$(k get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
  awk '$2 != "True" {print $1}')
[ -z "$not_ready" ] || fail "precondition: nodes not Ready: $(echo $not_ready)"
[ -z "$(nodes_with_taint)" ] || fail "precondition: nodes with $taint_key: $(echo $(nodes_with_taint))"
workers=$(k get nodes -l '!node-role.kubernetes.io/control-plane' -o name | sed 's|^node/||')
[ "$(echo "$workers" | grep -c .)" -ge 2 ] || fail "precondition: need at least 2 workers"

log "step: create namespace, PersistentVolume $pv, StatefulSet $sts"
created=1
k create namespace "$ns" >/dev/null
sa_exists() { k -n "$ns" get serviceaccount default >/dev/null 2>&1; }
wait_for 30 "service account default in $ns" sa_exists
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $pv
  labels: {app.kubernetes.io/part-of: testenv-failover}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: nodedown-shared
  hostPath: {path: $volume_dir, type: DirectoryOrCreate}
  claimRef: {namespace: $ns, name: $claim}
EOF
k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata:
  name: $sts
spec:
  clusterIP: None
  selector: {app: $sts}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: $sts
spec:
  replicas: 1
  serviceName: $sts
  selector:
    matchLabels: {app: $sts}
  template:
    metadata:
      labels: {app: $sts}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 5
      containers:
      - name: writer
        image: $image
        imagePullPolicy: Never
        env:
        - name: NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        command:
        - sh
        - -c
        - |
          trap 'exit 0' TERM
          i=\$(wc -l < /data/log 2>/dev/null || echo 0)
          while true; do
            i=\$((i + 1))
            echo "\$i \$(date '+%Y-%m-%dT%H:%M:%S') \$NODE_NAME" >> /data/log
            sync
            sleep 0.5
          done
        readinessProbe:
          exec: {command: [test, -s, /data/log]}
          periodSeconds: 1
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      storageClassName: nodedown-shared
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
EOF

log "step: wait for $sts-0 Running and Ready"
k -n "$ns" wait --for=condition=Ready "pod/$sts-0" --timeout=120s >/dev/null 2>&1 ||
  fail "pod $sts-0 not Ready within 120s"
[ "$(k -n "$ns" get pvc "$claim" -o jsonpath='{.status.phase}/{.spec.volumeName}')" = "Bound/$pv" ] ||
  fail "claim $claim is not Bound to $pv"
IFS='|' read -r old_uid node phase ready _ <<<"$(pod_state)"
[ "$phase" = Running ] && [ "$ready" = True ] || fail "pod $sts-0 is $phase/ready=$ready"
echo "$workers" | grep -qx "$node" || fail "pod $sts-0 runs on $node, which is not a worker"
log "pod $sts-0 (uid $old_uid) Running and Ready on $node"

sleep 3 # let it write a few lines
lines_before=$(k -n "$ns" exec "$sts-0" -- sh -c 'wc -l < /data/log' | tr -d ' \r')
[ "$lines_before" -gt 0 ] 2>/dev/null || fail "no lines in /data/log before the kill ('$lines_before')"
sum_before=$(k -n "$ns" exec "$sts-0" -- sh -c "head -n $lines_before /data/log | md5sum" | cut -d' ' -f1)
log "recorded $lines_before lines (md5 of them $sum_before), last: $(k -n "$ns" exec "$sts-0" -- sh -c "sed -n ${lines_before}p /data/log")"

log "step: docker kill $node"
killed_node=$node
docker kill "$node" >/dev/null
t_kill=$(now_us)

log "step: wait (<= 60s) for node $node NotReady"
wait_for 60 "node $node NotReady" node_not_ready "$node"
log "node $node NotReady ($(k get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')) $(secs $(( $(now_us) - t_kill ))) after the kill"

log "step: wait (<= 60s) for pod $sts-0 Terminating"
pod_terminating() {
  local uid n _p _r del
  IFS='|' read -r uid n _p _r del <<<"$(pod_state)"
  [ "$uid" = "$old_uid" ] && [ -n "$del" ]
}
wait_for 60 "pod $sts-0 (uid $old_uid) Terminating" pod_terminating
sleep 2
IFS='|' read -r uid n _ _ del <<<"$(pod_state)"
[ "$uid" = "$old_uid" ] && [ -n "$del" ] && [ "$n" = "$node" ] ||
  fail "pod $sts-0 is not stuck Terminating on $node (uid $uid, node $n, deletionTimestamp '$del')"
node_not_ready "$node" || fail "node $node is Ready again while its container is killed"
log "pod $sts-0 stuck Terminating (deletionTimestamp $del) $(secs $(( $(now_us) - t_kill ))) after the kill"

log "step: taint $node $taint_key=nodeshutdown:NoExecute"
k taint node "$node" "$taint_key=nodeshutdown:NoExecute" >/dev/null
tainted=$node
t_taint=$(now_us)

log "step: wait (<= 180s) for a new $sts-0 Running and Ready on another worker"
new_pod_ready() {
  local uid n phase ready del
  IFS='|' read -r uid n phase ready del <<<"$(pod_state)"
  [ -n "$uid" ] && [ "$uid" != "$old_uid" ] && [ -n "$n" ] && [ "$n" != "$node" ] &&
    [ "$phase" = Running ] && [ "$ready" = True ] && [ -z "$del" ]
}
wait_for 180 "a new pod $sts-0 Running and Ready on a worker other than $node" new_pod_ready
IFS='|' read -r new_uid new_node _ _ _ <<<"$(pod_state)"
echo "$workers" | grep -qx "$new_node" || fail "new pod runs on $new_node, which is not a worker"
log "new pod $sts-0 (uid $new_uid) Running and Ready on $new_node $(secs $(( $(now_us) - t_taint ))) after the taint, $(secs $(( $(now_us) - t_kill ))) after the kill"

log "step: check /data/log on $new_node"
lines_after=$(k -n "$ns" exec "$sts-0" -- sh -c 'wc -l < /data/log' | tr -d ' \r')
[ "$lines_after" -ge "$lines_before" ] 2>/dev/null ||
  fail "/data/log has $lines_after lines after the failover, $lines_before before the kill"
sum_after=$(k -n "$ns" exec "$sts-0" -- sh -c "head -n $lines_before /data/log | md5sum" | cut -d' ' -f1)
[ "$sum_after" = "$sum_before" ] ||
  fail "the first $lines_before lines of /data/log changed (md5 $sum_before before, $sum_after after)"
numbered=$(k -n "$ns" exec "$sts-0" -- awk '$1 != NR {print NR; exit}' /data/log)
[ -z "$numbered" ] || fail "/data/log is not numbered 1, 2, 3...: line $numbered is wrong"
new_pod_writes() {
  local last
  last=$(k -n "$ns" exec "$sts-0" -- tail -n 1 /data/log) && [[ "$last" == *" $new_node" ]]
}
wait_for 10 "the new pod to append to /data/log" new_pod_writes
summary=$(k -n "$ns" exec "$sts-0" -- awk -v old="$node" \
  '$3 == old {o++} {last = $0} END {printf "%d lines, %d of them by the pod on %s; last: %s", NR, o, old, last}' /data/log)
log "ok: the $lines_before lines from before the kill are unchanged; now $summary"

log "step: docker start $node, wait (<= 180s) for Ready"
t_start=$(now_us)
docker start "$node" >/dev/null
wait_for 180 "node $node Ready after docker start" node_back "$node" "$(( t_start / 1000000 ))"
log "node $node Ready $(secs $(( $(now_us) - t_start ))) after docker start"
killed_node=""

log "step: remove $taint_key from $node"
k taint node "$node" "$taint_key-" >/dev/null
left=$(nodes_with_taint)
[ -z "$left" ] || fail "nodes still have $taint_key: $(echo $left)"
tainted=""
log "ok: no node has $taint_key"

log "step: delete namespace $ns and PersistentVolume $pv"
k delete namespace "$ns" --wait=false >/dev/null
wait_for 90 "namespace $ns deleted" gone namespace "$ns"
k delete pv "$pv" --wait=false >/dev/null
wait_for 30 "PersistentVolume $pv deleted" gone pv "$pv"
cleaned=1
log "ok: deleted"

all_nodes_ready() {
  [ -z "$(k get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    awk '$2 != "True" {print $1}')" ]
}
wait_for 60 "all nodes Ready" all_nodes_ready
log "ok: all $(k get nodes -o name | grep -c .) nodes Ready"
