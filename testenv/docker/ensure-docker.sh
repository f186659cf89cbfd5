#!/usr/bin/env bash
# Makes sure a Docker engine that can run kind's --privileged node containers is up.
# Idempotent: a healthy daemon (answering, with the wrapper as default runtime) is left alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v dockerd >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1; then
  echo "installing docker.io and jq from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q docker.io jq >/dev/null
fi

install -D -m 0755 "$here/runc-wrapper" /usr/local/libexec/nodedown/runc-wrapper
want_config=$(jq -n '{
  "runtimes": {"nodedown-runc": {"path": "/usr/local/libexec/nodedown/runc-wrapper"}},
  "default-runtime": "nodedown-runc",
  "storage-driver": "overlay2"
}')

if docker info --format '{{.DefaultRuntime}}' 2>/dev/null | grep -qx nodedown-runc; then
  exit 0
fi

mkdir -p /etc/docker
if [ ! -f /etc/docker/daemon.json ] || [ "$(jq -S . /etc/docker/daemon.json)" != "$(jq -S . <<<"$want_config")" ]; then
  echo "$want_config" > /etc/docker/daemon.json
fi

if pid=$(cat /var/run/docker.pid 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
  # A daemon runs but does not answer with our runtime: it was started by us earlier with
  # another config (or is still starting). Give it a moment before deciding.
  for _ in $(seq 1 30); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if docker info --format '{{.DefaultRuntime}}' 2>/dev/null | grep -qx nodedown-runc; then exit 0; fi
  echo "dockerd (pid $pid) runs without the nodedown-runc default runtime; reloading its config" >&2
  kill -HUP "$pid"
  sleep 2
  docker info --format '{{.DefaultRuntime}}' | grep -qx nodedown-runc && exit 0
  echo "dockerd did not pick up /etc/docker/daemon.json; stop it and run testenv/up again" >&2
  exit 1
fi

rm -f /var/run/docker.pid
mkdir -p /var/log/nodedown
# containerd is started by dockerd itself (managed mode).
setsid nohup dockerd >/var/log/nodedown/dockerd.log 2>&1 < /dev/null &
for _ in $(seq 1 60); do
  if [ -S /var/run/docker.sock ] && docker info >/dev/null 2>&1; then
    docker info --format '{{.DefaultRuntime}}' | grep -qx nodedown-runc && exit 0
  fi
  sleep 1
done
echo "dockerd did not come up within 60s; see /var/log/nodedown/dockerd.log" >&2
tail -20 /var/log/nodedown/dockerd.log >&2
exit 1
