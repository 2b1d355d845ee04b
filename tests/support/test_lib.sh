# Shared by the shell tests: source it after `set -u` (or `set -euo pipefail`).
#   own_network_namespace "$@"
#                           as root, re-runs the calling script (first thing, before it creates
#                           anything) in network and mount namespaces of its own; see below
#   hold_hugepages_lock / release_hugepages_lock
#                           take (waiting, bounded) / give back this machine's hugepage lock; see below
#   test_begin TAG          makes $work (a temporary directory) and arranges cleanup at exit:
#                           every tracked process is killed and waited for, $work removed
#   track PID               kill PID at exit unless it was reaped with one of:
#   reap PID / stop PID     wait for PID / kill it and wait; both return its exit status
#   fail MESSAGE            "FAIL: MESSAGE" on stderr, then the function on_fail if the test
#                           defines one (to show its logs), and exit 1
#   require_root WHY        fail unless root
#   require_executable PATH WHAT
#   wait_for_ready LOG PID  wait (30 s) for a `ready ADDRESS` line; print ADDRESS
#   wait_for_socket SOCKET PID LOG [SECONDS]
#                           wait (30 s unless told) for a unix socket: abstract (DPDK memif's default, as
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

# The bounds are long: a DPDK process under ASan starts in 1-2 s alone, in several times that on a
# machine busy with other tests.
wait_for_ready() {
  local log=$1 pid=$2 address
  for _ in $(seq 300); do
    address=$(awk '/^ready /{print $2; exit}' "$log")
    [ -n "$address" ] && { echo "$address"; return 0; }
    _fail_if_exited "$pid" "$log" "the server"
    sleep 0.1
  done
  cat "$log" >&2
  fail "the server printed no ready line within 30 s"
}

wait_for_socket() {
  local socket=$1 pid=$2 log=$3 seconds=${4:-30}
  for _ in $(seq $((seconds * 10))); do
    grep -q "@$socket\$" /proc/net/unix && return 0
    [ -S "$socket" ] && return 0
    _fail_if_exited "$pid" "$log" "the server"
    sleep 0.1
  done
  fail "the server did not open $socket within $seconds s"
}

# Network state of a test (taps, veths, addresses and routes, nftables tables, sysctls of its
# interfaces, loopback ports, memif's abstract unix sockets, `ip netns` names) lives in a network
# namespace of its own, so it cannot meet another test's: meson runs two tests at once, and other
# checkouts on the same machine run the same tests under the same names. The mount namespace that
# comes with it shows this network namespace in /sys (sysfs lists the interfaces of the namespace
# that mounts it) and keeps the test's `ip netns add` names in a /run/netns of its own. Everything
# goes away with the test's last process, even when it is killed.
# tests/support/own_network_namespace.h does the same for C++ tests. Without root it does nothing:
# the test skips or fails on its own root check.
own_network_namespace() {
  [ "$(id -u)" = 0 ] || return 0
  if [ "${BYPASS_TEST_OWN_NETNS:-}" != "$$" ]; then  # exec keeps the PID: set once we are inside
    BYPASS_TEST_OWN_NETNS=$$ exec unshare --net --mount -- "$BASH" "$0" "$@"
  fi
  # unshare(1) made every mount private: what is mounted here stays in this namespace.
  mount -t sysfs sysfs /sys || fail "cannot mount this network namespace's sysfs on /sys"
  mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns || fail "cannot mount a private /run/netns"
  ip link set lo up || fail "cannot bring up loopback in the test's network namespace"
}

# Hugepages are the one DPDK resource a network namespace does not separate: 2 MiB pages shared by
# the whole machine (tools/setup.sh reserves 512). Tests that need them (vhost-user) hold this lock
# (flock on a machine-wide file) while their processes run, so two of them never ask for the same
# free pages at once; every other DPDK test runs with dpdk.no_huge=yes. Released when the script
# and the processes it started (they inherit the descriptor) have exited, or by release_hugepages_lock.
hugepages_lock_file=/run/lock/bypass-test-hugepages.lock
hold_hugepages_lock() {
  exec {hugepages_lock_fd}>"$hugepages_lock_file" || fail "cannot open $hugepages_lock_file"
  flock -w 600 "$hugepages_lock_fd" || fail "another test held the hugepage lock ($hugepages_lock_file) for 10 minutes"
}
release_hugepages_lock() {
  if [ -n "${hugepages_lock_fd:-}" ]; then exec {hugepages_lock_fd}>&-; fi
  hugepages_lock_fd=
}
