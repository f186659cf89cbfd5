#!/usr/bin/env bash
# testenv/tests/pod-network.sh [CONTEXT]   (default kind-nodedown)
#
# Checks the pod network of a testenv cluster:
# - pod A (HTTP server, busybox httpd) and pod B (client) are pinned to two DIFFERENT workers;
#   B fetches http://<A's pod IP>:8080/ and must get A's random token (pod-to-pod across nodes);
# - B opens a TCP connection to the API server through the `kubernetes` Service ClusterIP
#   (kube-proxy DNAT + route back to the pod) and fetches https://<ClusterIP>/version, which
#   must report the server's gitVersion.
# Everything lives in a fresh namespace testenv-podnet-<random>, deleted on exit.
set -euo pipefail

ctx=${1:-kind-nodedown}
. "$(dirname "$0")/lib.sh"

ns=testenv-podnet-$(printf '%04x%04x' $RANDOM $RANDOM)
token=token-$(printf '%04x%04x%04x%04x' $RANDOM $RANDOM $RANDOM $RANDOM)
image=nodedown.local/busybox:testenv

created=""
gone() { # gone KIND NAME: the API server says there is no such object
  local out
  out=$(k get "$@" --ignore-not-found -o name 2>/dev/null) && [ -z "$out" ]
}
cleanup() {
  local rc=$?
  trap - EXIT
  set +e
  # Bounded from here on: a failure must not hang the trap.
  fail() { log "cleanup: $*"; return 1; }
  k() { kubectl --context "$ctx" --request-timeout=20s "$@"; }
  if [ "$rc" != 0 ]; then
    log "diagnostics:"
    k -n "$ns" get pods -o wide 2>&1 | sed 's/^/    /'
  fi
  if [ -n "$created" ]; then
    log "cleanup: deleting namespace $ns"
    k delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1
    wait_for 60 "namespace $ns deleted" gone namespace "$ns"
  fi
  if [ "$rc" = 0 ]; then log "PASS pod-network"; else log "FAIL pod-network (exit $rc)"; fi
  exit "$rc"
}
trap cleanup EXIT
# On a signal, exit through the EXIT trap with the conventional status (so it is not 0).
trap 'exit 130' INT
trap 'exit 143' TERM

log "context $ctx, namespace $ns"
k get --raw /readyz >/dev/null 2>&1 || fail "the API server of context $ctx is not reachable/ready"

# Two Ready workers (nodes without the control-plane role).
ready_workers=$(k get nodes -l '!node-role.kubernetes.io/control-plane' -o \
  jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
  awk '$2 == "True" {print $1}' | sort)
read -r node_a node_b _ <<<"$(echo $ready_workers)" || true
[ -n "${node_a:-}" ] && [ -n "${node_b:-}" ] ||
  fail "need two Ready workers, found: $(echo $ready_workers)"
log "server on $node_a, client on $node_b"

created=1
k create namespace "$ns" >/dev/null
sa_exists() { k -n "$ns" get serviceaccount default >/dev/null 2>&1; }
wait_for 30 "service account default in $ns" sa_exists

k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: server
spec:
  nodeSelector: {kubernetes.io/hostname: $node_a}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: $image
    imagePullPolicy: Never
    env: [{name: TOKEN, value: "$token"}]
    command: [sh, -c, 'mkdir -p /www && echo "\$TOKEN" > /www/index.html && exec httpd -f -p 8080 -h /www']
    ports: [{containerPort: 8080}]
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  nodeSelector: {kubernetes.io/hostname: $node_b}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: $image
    imagePullPolicy: Never
    command: [sh, -c, 'exec sleep 3600']
EOF
log "pods created; waiting for Ready"
k -n "$ns" wait --for=condition=Ready pod/server pod/client --timeout=120s >/dev/null ||
  fail "pods not Ready within 120s"

read -r a_node a_ip <<<"$(k -n "$ns" get pod server -o jsonpath='{.spec.nodeName} {.status.podIP}')"
read -r b_node b_ip <<<"$(k -n "$ns" get pod client -o jsonpath='{.spec.nodeName} {.status.podIP}')"
log "server $a_ip on $a_node, client $b_ip on $b_node"
[ "$a_node" = "$node_a" ] && [ "$b_node" = "$node_b" ] && [ "$a_node" != "$b_node" ] ||
  fail "pods are not on the two different workers asked for"
[ -n "$a_ip" ] && [ -n "$b_ip" ] || fail "a pod has no IP"

# 1. Pod to pod across nodes. (busybox 1.35's `wget -T` segfaults: bound it with `timeout`.)
log "client -> http://$a_ip:8080/"
got=""
for attempt in 1 2 3 4 5; do
  got=$(k -n "$ns" exec client -- timeout 5 wget -q -O - "http://$a_ip:8080/" 2>&1) && break
  log "  attempt $attempt failed: $(echo "$got" | tail -n1)"
  got=""
  sleep 2
done
[ "$got" = "$token" ] || fail "cross-node HTTP: expected '$token', got '$got'"
log "ok: got the token from $a_node's pod"

# 2. Pod to API server through the kubernetes Service (kube-proxy).
api_ip=$(k -n default get service kubernetes -o jsonpath='{.spec.clusterIP}')
[ -n "$api_ip" ] || fail "no ClusterIP for service default/kubernetes"
log "client -> tcp $api_ip:443 (kubernetes service)"
# busybox nc has no -z; with stdin at EOF it exits 0 after a successful connect, 1 on timeout.
out=$(k -n "$ns" exec client -- timeout 10 nc -w 3 "$api_ip" 443 </dev/null 2>&1) ||
  fail "no TCP connection from the pod to $api_ip:443: $out"
log "ok: TCP connection made"
want=$(k version -o json 2>/dev/null | sed -n '/"serverVersion"/,/}/s/.*"gitVersion": *"\([^"]*\)".*/\1/p')
[ -n "$want" ] || fail "cannot read the server version with kubectl"
log "client -> https://$api_ip/version"
out=$(k -n "$ns" exec client -- timeout 10 wget --no-check-certificate -q -O - "https://$api_ip/version" 2>&1) ||
  fail "https://$api_ip/version from the pod failed: $out"
echo "$out" | grep -q "\"gitVersion\": *\"$want\"" ||
  fail "https://$api_ip/version from the pod did not report gitVersion $want: $out"
log "ok: API server $want answered through the service"
