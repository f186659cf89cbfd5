#!/usr/bin/env bash
# Raises the host's inotify limits to what a 7-node kind cluster needs, when they are lower.
# Every node container runs systemd, journald, containerd and the kubelet, each holding inotify
# instances that count against root's one limit of the host (fs.inotify.max_user_instances,
# 128 by default): with 1 + 6 nodes the later nodes' systemd cannot start ("Failed to allocate
# manager object: Too many open files") and `kind create cluster` gives up with "could not find
# a log line that matches Reached target Multi-User System". kind's known-issues page gives the
# same remedy. Only ever raises a limit; idempotent.
set -euo pipefail
raise() { # raise KEY MIN
  local now
  now=$(sysctl -n "$1")
  if [ "$now" -lt "$2" ]; then
    echo "    raising $1 from $now to $2 (kind nodes share it)" >&2
    sysctl -qw "$1=$2"
  fi
}
raise fs.inotify.max_user_instances 8192
raise fs.inotify.max_user_watches 524288
