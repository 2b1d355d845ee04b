#!/bin/bash
# `bypass-bench ceph-mon-version` on bad input: each case must exit non-zero with exactly one line
# on stderr (naming the problem) and nothing on stdout. Needs no Ceph: the "monitors" here are a
# malformed address, a closed port and a listener that accepts but never speaks.
set -u
bench="$1"
dir=$(mktemp -d)
silent_pid=
cleanup() {
  if [ -n "$silent_pid" ]; then kill "$silent_pid" 2>/dev/null; fi
  rm -rf "$dir"
}
trap cleanup EXIT
failures=0

# expect_failure NAME STATUS PATTERN ARGS...: run bypass-bench ARGS, check exit status STATUS,
# an empty stdout (unless allow_stdout=1: the rate mode's progress lines) and a single stderr
# line matching PATTERN (grep -E).
allow_stdout=0
expect_failure() {
  local name="$1" want_status="$2" pattern="$3"
  shift 3
  timeout 60 "$bench" "$@" >"$dir/out" 2>"$dir/err"
  local status=$?
  local lines
  lines=$(wc -l <"$dir/err")
  if [ "$status" -ne "$want_status" ] || { [ "$allow_stdout" = 0 ] && [ -s "$dir/out" ]; } || [ "$lines" -ne 1 ] ||
     ! grep -Eq -- "$pattern" "$dir/err"; then
    echo "FAIL: $name: status $status (want $want_status), stderr $lines lines (want 1 matching '$pattern'):"
    cat "$dir/err" "$dir/out"
    failures=$((failures + 1))
  else
    echo "ok: $name: $(cat "$dir/err")"
  fi
}

expect_failure "malformed --mon" 2 "--mon: 'v2:not-an-ip:3300' is not a msgr2 monitor address" \
  ceph-mon-version --mon v2:not-an-ip:3300
expect_failure "msgr1 --mon" 2 "is not a msgr2 monitor address" ceph-mon-version --mon v1:127.0.0.1:6789
expect_failure "missing --mon" 2 "--mon ADDR is required" ceph-mon-version
expect_failure "bad --timeout" 2 "--timeout: 'soon' is not a duration" ceph-mon-version --mon v2:127.0.0.1:3300 --timeout soon
expect_failure "unknown flag" 2 "unknown argument '--mons'" ceph-mon-version --mons v2:127.0.0.1:3300
expect_failure "closed port" 1 "monitor v2:127.0.0.1:1/0: connection refused" \
  ceph-mon-version --mon v2:127.0.0.1:1 --timeout 20s

# The rate mode (--duration / --count) and its flags.
expect_failure "duration and count" 2 "--duration and --count exclude each other" \
  ceph-mon-version --mon v2:127.0.0.1:3300 --duration 1s --count 10
expect_failure "depth without rate mode" 2 "--depth applies to the rate mode only: add --duration or --count" \
  ceph-mon-version --mon v2:127.0.0.1:3300 --depth 4
expect_failure "output without rate mode" 2 "--output applies to the rate mode only" \
  ceph-mon-version --mon v2:127.0.0.1:3300 --output "$dir/r.json"
expect_failure "depth 0" 2 "--depth: '0' is not in 1..1024" ceph-mon-version --mon v2:127.0.0.1:3300 --count 5 --depth 0
expect_failure "depth too deep" 2 "--depth: '4096' is not in 1..1024" \
  ceph-mon-version --mon v2:127.0.0.1:3300 --count 5 --depth 4096
expect_failure "bad count" 2 "--count: " ceph-mon-version --mon v2:127.0.0.1:3300 --count many
expect_failure "zero duration" 2 "--duration: '0s' must be positive" ceph-mon-version --mon v2:127.0.0.1:3300 --duration 0s
expect_failure "bad warmup" 2 "--warmup: 'later' is not a duration" \
  ceph-mon-version --mon v2:127.0.0.1:3300 --duration 1s --warmup later
expect_failure "unwritable output" 1 "--output: cannot write '$dir/no-such-dir/r.json': No such file or directory" \
  ceph-mon-version --mon v2:127.0.0.1:1 --count 5 --output "$dir/no-such-dir/r.json"
expect_failure "rate mode, closed port" 1 "monitor v2:127.0.0.1:1/0: connection refused" \
  ceph-mon-version --mon v2:127.0.0.1:1 --duration 5s --timeout 20s

# A peer that accepts the TCP connection and then says nothing: only the timeout ends the wait.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
conns = []
deadline = time.time() + 60
while time.time() < deadline:
    s.settimeout(1)
    try: conns.append(s.accept()[0])
    except socket.timeout: pass
' >"$dir/port" &
silent_pid=$!
for _ in $(seq 50); do [ -s "$dir/port" ] && break; sleep 0.1; done
port=$(cat "$dir/port")
started=$(date +%s)
expect_failure "silent monitor" 1 "monitor v2:127.0.0.1:$port/0 did not answer within 2s" \
  ceph-mon-version --mon "v2:127.0.0.1:$port" --timeout 2s
elapsed=$(($(date +%s) - started))
if [ "$elapsed" -gt 10 ]; then
  echo "FAIL: silent monitor: took ${elapsed}s with --timeout 2s"; failures=$((failures + 1))
fi
# The rate mode must not wait out its --duration when no reply comes, and writes no result file.
started=$(date +%s)
allow_stdout=1
expect_failure "rate mode, silent monitor" 1 "monitor v2:127.0.0.1:$port/0 did not answer within 2s" \
  ceph-mon-version --mon "v2:127.0.0.1:$port" --duration 60s --timeout 2s --output "$dir/silent.json"
allow_stdout=0
elapsed=$(($(date +%s) - started))
if [ "$elapsed" -gt 10 ]; then
  echo "FAIL: rate mode, silent monitor: took ${elapsed}s with --timeout 2s"; failures=$((failures + 1))
fi
if [ -e "$dir/silent.json" ]; then
  echo "FAIL: rate mode, silent monitor: left a result file"; failures=$((failures + 1))
fi

[ "$failures" -eq 0 ] && echo "PASS" && exit 0
exit 1
