#!/bin/bash
# `bypass-bench run` end to end on one transport: a 2 s job (queue depth 1 and 8, plus a stream
# case) must exit 0 with non-zero messages and no errors in the table, and its JSON must pass
# check_result_json.py and be readable by `bypass-bench compare`; once more over IPv6 ([::1] on
# posix, [fd00:95::1] on dpdk). A bad job must fail before anything starts, in one line. Every
# case names its link: posix the kernel; dpdk the link auto picks without hugepages (memif), a
# forced vhost-user pair, and the job's own memif port.
#   bench_run_test.sh BYPASS_BENCH CHECKER posix|dpdk
# dpdk runs server and client as two DPDK processes over net_memif and over a vhost-user pair (root;
# the vhost-user client needs 128 MiB of free hugepages, which tools/setup.sh reserves).
set -u
bench="$1" checker="$2" transport="$3"
work=$(mktemp -d /tmp/bypass-bench-run-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

if [ "$transport" = dpdk ] && [ "$(id -u)" != 0 ]; then
  fail "the dpdk run needs root (DPDK memory and memif); run as root"
fi
if [ ! -x /usr/bin/python3 ]; then fail "/usr/bin/python3 is missing (tools/setup.sh installs it)"; fi

# A memif socket of this run only (abstract: no file is left behind).
sock="/run/bypass-bench-run-test-$$.sock"
net=10.95.$(( $$ % 250 ))
cat >"$work/job.yaml" <<JOB
ms:
  workers: 1
dpdk:
  netmask: 255.255.255.0
  no_huge: auto
  memory: 256M
  in_memory: true
  rss: false
  link_wait: 30s
bench:
  transports: [$transport]
  message_size: 4K
  iodepth: [1, 8]
  warmup: 300ms
  duration: 2s
  progress: log
  server:
    cpus: "1"
    dpdk: ['dpdk.vdev=["net_memif0,role=server,socket=$sock"]', dpdk.host_ip=$net.1]
  client:
    cpus: "0"
    dpdk: ['dpdk.vdev=["net_memif0,role=client,socket=$sock"]', dpdk.host_ip=$net.2]
JOB

# Bad input: one clear line, exit status 2, and nothing started.
start=$(date +%s)
"$bench" -c "$work/job.yaml" --set bench.iodepth=0 run >"$work/bad.out" 2>"$work/bad.err"
status=$?
[ "$status" = 2 ] || fail "iodepth 0: exit status $status, expected 2"
grep -q "bench.iodepth: '0' is outside 1..65536" "$work/bad.err" || { cat "$work/bad.err"; fail "iodepth 0: unclear error"; }
[ "$(wc -l <"$work/bad.err")" = 1 ] || { cat "$work/bad.err"; fail "iodepth 0: more than one line"; }
[ ! -s "$work/bad.out" ] || { cat "$work/bad.out"; fail "iodepth 0: something started"; }
[ $(( $(date +%s) - start )) -le 5 ] || fail "iodepth 0: the error took more than 5 s"

run() {  # NAME EXPECTED_CASES TRANSPORT[:LINK] [--set ...]
  local name="$1" cases="$2" expected="$3"; shift 3
  timeout 180 "$bench" -c "$work/job.yaml" --set "bench.output=$work/$name.json" "$@" run >"$work/$name.out" 2>&1
  local status=$?
  cat "$work/$name.out"
  [ "$status" = 0 ] || fail "$name: bypass-bench run exited with status $status"
  grep -q "^ *$transport 4KiB d1 " "$work/$name.out" || fail "$name: no '$transport 4KiB d1' row in the table"
  /usr/bin/python3 "$checker" "$work/$name.json" "$cases" "$expected" || fail "$name: the JSON result is incomplete"
  # And the result file reader (bench_result_file.cc) accepts it: compare reads it back.
  "$bench" compare "$work/$name.json" >"$work/$name.compare" 2>&1 || { cat "$work/$name.compare"; fail "$name: compare cannot read the result"; }
}
if [ "$transport" = posix ]; then
  run reqrep 2 posix:kernel
  grep -q "^ *posix 4KiB d1 *kernel, 4 copies " "$work/reqrep.out" || fail "reqrep: the table does not name the link"
  run stream 1 posix:kernel --set bench.mode=stream --set bench.iodepth=1 --set bench.duration=1s
  # Over IPv6 loopback: the server listens on [::1] and the client reaches it there.
  run ipv6 1 posix:kernel --set "bench.server_address=[::1]:0" --set bench.iodepth=1 --set bench.duration=1s
  grep -q "^== posix: server ready at \[::1\]:[0-9]" "$work/ipv6.out" || fail "ipv6: the server is not on [::1]"
else
  # The link `run` picks: without hugepages (dpdk.no_huge=yes hides them) auto falls back to memif
  # copy mode and says why; the sides keep only their addresses (the link gives them their ports).
  own_sides=(--set "bench.server.dpdk=[dpdk.host_ip=$net.1]" --set "bench.client.dpdk=[dpdk.host_ip=$net.2]")
  run reqrep 2 dpdk:memif --set bench.dpdk_link=auto --set dpdk.no_huge=yes "${own_sides[@]}"
  grep -q "^== dpdk link: memif, 4 payload copies per round trip (auto: net_memif in copy mode: .*not vhost-user: it needs hugepages on the client, whose dpdk.no_huge is yes (--set)" "$work/reqrep.out" ||
    fail "reqrep: no line naming the link auto chose and why"
  grep -q "^ *dpdk 4KiB d1 *memif, 4 copies " "$work/reqrep.out" || fail "reqrep: the table does not name the link"
  # A forced link runs as named (vhost-user: the client's 128 MiB on hugepages, which
  # tools/setup.sh reserves; the server takes some too only where there are enough for both).
  run stream 1 dpdk:vhost-user --set bench.dpdk_link=vhost-user --set dpdk.memory=128M "${own_sides[@]}" \
    --set bench.mode=stream --set bench.iodepth=1 --set bench.duration=1s
  grep -q "^== dpdk link: vhost-user, 2 payload copies per round trip (bench.dpdk_link=vhost-user (--set)" "$work/stream.out" ||
    fail "stream: no line naming the forced link"
  # Over IPv6 through both userspace stacks, on the job's own memif port: the server listens on the
  # address given, the client takes one on its prefix (fd00:95::<its dpdk.host_ip>), both after
  # Duplicate Address Detection.
  run ipv6 1 dpdk:net_memif --set "bench.server_address=[fd00:95::1]:0" --set bench.iodepth=1 --set bench.duration=1s
  grep -q "^== dpdk: server ready at \[fd00:95::1\]:[0-9]" "$work/ipv6.out" || fail "ipv6: the server is not on [fd00:95::1]"
fi
echo "PASS: $transport run"
