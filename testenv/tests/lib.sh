# shellcheck shell=bash
# Helpers shared by testenv's shell tests. Sourced after `ctx` is set.

k() { kubectl --context "$ctx" "$@"; }

t0=${EPOCHREALTIME/./}
now_us() { echo "${EPOCHREALTIME/./}"; }
secs() { printf '%d.%01ds' $(($1 / 1000000)) $(($1 % 1000000 / 100000)); } # secs MICROSECONDS
log() { printf '[%6s] %s\n' "$(secs $(( $(now_us) - t0 )))" "$*"; }
fail() { log "FAIL: $*"; exit 1; }
# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every second until it succeeds
wait_for() {
  local timeout=$1 what=$2; shift 2
  local deadline=$(( SECONDS + timeout ))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || { fail "timed out after ${timeout}s waiting for $what"; return 1; }
    sleep 1
  done
}
