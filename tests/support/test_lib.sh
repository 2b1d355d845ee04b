# Shared by the shell tests: source it after `set -u` (or `set -euo pipefail`).
#   test_begin TAG          makes $work (a temporary directory) and arranges cleanup at exit:
#                           every tracked process is killed and waited for, $work removed
#   track PID               kill PID at exit unless it was reaped with one of:
#   reap PID / stop PID     wait for PID / kill it and wait; both return its exit status
#   fail MESSAGE            "FAIL: MESSAGE" on stderr, then the function on_fail if the test
#                           defines one (to show its logs), and exit 1
#   require_root WHY        fail unless root
#   require_executable PATH WHAT
#   wait_for_ready LOG PID  wait (10 s) for a `ready ADDRESS` line; print ADDRESS
#   wait_for_socket SOCKET PID LOG [SECONDS]
#                           wait (10 s unless told) for a unix socket: abstract (DPDK memif's default, as
#                           listed in /proc/net/unix) or a file (vhost-user)
# A process that exits while it is waited for fails the test with its log.

_tracked_pids=()

_test_cleanup() {
  local pid
  for pid in ${_tracked_pids[@]+"${_tracked_pids[@]}"}; do kill "$pid" 2>/dev/null; done
  for pid in ${_tracked_pids[@]+"${_tracked_pids[@]}"}; do wait "$pid" 2>/dev/null; done
  [ -n "${work:-}" ] && rm -rf "$work"
  return 0
}

test_begin() {
  work=$(mktemp -d "/tmp/bypass-$1.XXXXXX")
  trap _test_cleanup EXIT
}

track() { _tracked_pids+=("$1"); }

reap() {
  local pid=$1 rc=0 kept=() p
  wait "$pid" 2>/dev/null || rc=$?
  for p in ${_tracked_pids[@]+"${_tracked_pids[@]}"}; do [ "$p" = "$pid" ] || kept+=("$p"); done
  _tracked_pids=(${kept[@]+"${kept[@]}"})
  return "$rc"
}

stop() {
  kill "$1" 2>/dev/null
  reap "$1"
}

fail() {
  echo "FAIL: $*" >&2
  if declare -F on_fail >/dev/null; then on_fail >&2; fi
  exit 1
}

require_root() { [ "$(id -u)" = 0 ] || fail "needs root ($1)"; }

require_executable() { [ -x "$1" ] || fail "$2 '$1' is not executable"; }

_fail_if_exited() {  # PID LOG WHAT
  if ! kill -0 "$1" 2>/dev/null; then
    cat "$2" >&2
    fail "$3 exited early"
  fi
}

wait_for_ready() {
  local log=$1 pid=$2 address
  for _ in $(seq 100); do
    address=$(awk '/^ready /{print $2; exit}' "$log")
    [ -n "$address" ] && { echo "$address"; return 0; }
    _fail_if_exited "$pid" "$log" "the server"
    sleep 0.1
  done
  cat "$log" >&2
  fail "the server printed no ready line within 10 s"
}

wait_for_socket() {
  local socket=$1 pid=$2 log=$3 seconds=${4:-10}
  for _ in $(seq $((seconds * 10))); do
    grep -q "@$socket\$" /proc/net/unix && return 0
    [ -S "$socket" ] && return 0
    _fail_if_exited "$pid" "$log" "the server"
    sleep 0.1
  done
  fail "the server did not open $socket within $seconds s"
}
