#!/usr/bin/env bash
# The fio suite: Debian's fio drives libfio_bypass.so.
#   fio_test.sh ENGINE SOURCE_ROOT SANITIZE CASE
# CASE:
#   posix   one fio process: a receiver and 2 sending jobs, randwrite bsrange=4k-64k verify=md5
#           iodepth 16, then randrw verify=crc32c; the JSON must show no error and I/O in both
#           directions (the verify reads) on every sender, requests served on the receiver; then
#           a receiver and a sender process, one job each, whose job threads poll their stacks
#           (bypass_poll=auto: the receiving process must have no worker thread), and beside them
#           a polled depth-1 sender whose session sends (almost) no ACK frames (perf dump)
#   dpdk    examples/fio/dpdk-{receiver,sender}.fio as two fio processes over net_memif, crc32c
#   errors  every bad input and fault, each with its message: an unknown engine option, bad
#           bypass_set / bypass_config, no port, no size, verify on the receiver, a receiver that is
#           not there, two jobs on a stack one of them polls, one that dies mid-run, a payload that
#           does not verify
#   rdma    examples/fio/rdma.fio (receiver and sender in one process, crc32c) inside the
#           soft-RoCE guest (tools/rxe-vm); exit 77 when the guest cannot boot here
# In the sanitizer build the engine carries ASan, and fio does not: fio runs with the ASan runtime
# preloaded (it must come first), LeakSanitizer checking the engine at fio's exit.
set -uo pipefail
engine=$1 root=$2 sanitize=$3 case=$4

work=$(mktemp -d /tmp/bypass-fio-test.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

export FIO_BYPASS_ENGINE=$engine
fio=(fio)
if [[ $sanitize == *address* ]]; then
  fio=(env LD_PRELOAD="$(gcc -print-file-name=libasan.so)" fio)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
fi
cd "$work" || exit 1

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# run_fio NAME TIMEOUT FIO-ARGS...: fio's stdout and stderr in NAME.out, its JSON (when asked
# for) in NAME.json; returns fio's status.
run_fio() {
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "${fio[@]}" --output-format=json --output="$name.json" "$@" >"$name.out" 2>&1
}

# check_json FILE JOBS: FILE reports JOBS jobs, none with an error; the senders read and wrote
# (verify reads back), the receiver served requests.
check_json() {
  python3 - "$1" "$2" <<'PY' || { cat "${1%.json}.out"; fail "$1: unexpected results"; }
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
bad = [] if len(jobs) == int(sys.argv[2]) else [f"{len(jobs)} jobs reported, expected {sys.argv[2]}"]
for j in jobs:
    name, r, w = j["jobname"], j["read"], j["write"]
    if j["error"] != 0:
        bad.append(f"{name}: error {j['error']}")
    elif name.startswith("receiver"):
        if r["iops"] <= 0: bad.append(f"{name}: served nothing")
    elif r["iops"] <= 0 or w["iops"] <= 0 or r["io_bytes"] <= 0 or w["io_bytes"] <= 0:
        bad.append(f"{name}: read {r['io_bytes']} B at {r['iops']:.0f}/s, wrote {w['io_bytes']} B at {w['iops']:.0f}/s")
    print(f"{name}: read {r['io_bytes']} B {r['iops']:.0f} IOPS, write {w['io_bytes']} B {w['iops']:.0f} IOPS")
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY
}

# expect NAME PATTERN: NAME's fio exited non-zero and said PATTERN (extended regex).
expect() {
  local name=$1 pattern=$2 status=$3
  [ "$status" != 0 ] || { cat "$name.out"; fail "$name: fio exited 0"; }
  [ "$status" != 124 ] || { cat "$name.out"; fail "$name: fio hung (killed by timeout)"; }
  grep -qE "$pattern" "$name.out" || { cat "$name.out"; fail "$name: no line matching: $pattern"; }
  echo "ok: $name: $(grep -m1 -E "$pattern" "$name.out")"
}

case "$case" in
posix)
  port=$(free_port)
  cat > posix.fio <<EOF
[global]
ioengine=external:$engine
ms_type=posix
port=$port
thread

[receiver]
receiver=1
rw=read
size=256m

[sender]
rw=randwrite
bsrange=4k-64k
iodepth=16
size=16m
verify=md5
numjobs=2
EOF
  run_fio randwrite-md5 120 posix.fio || { status=$?; cat randwrite-md5.out; fail "randwrite verify=md5: fio exited $status"; }
  check_json randwrite-md5.json 3
  sed -i 's/^rw=randwrite/rw=randrw/; s/^verify=md5/verify=crc32c/' posix.fio
  run_fio randrw-crc32c 120 posix.fio || { status=$?; cat randrw-crc32c.out; fail "randrw verify=crc32c: fio exited $status"; }
  check_json randrw-crc32c.json 3
  # Two processes, one job each: bypass_poll=auto (the default) has each job's thread poll its own
  # stack (ms.worker_threads false), so neither process has a worker thread; randrw verified.
  port=$(free_port)
  poll=(--ioengine=external:"$engine" --thread --ms_type=posix --port="$port")
  run_fio polled-receiver 120 "${poll[@]}" --name=receiver --receiver=1 --rw=read --size=64m &
  pids+=($!)
  for _ in $(seq 1 300); do  # listening: its stack has started (and any worker thread with it)
    [ -n "$(ss -Hltn "( sport = :$port )")" ] && break
    sleep 0.1
  done
  receiver_pid=$(for pid in $(pgrep -f -- "--port=$port"); do [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = fio ] && echo "$pid"; done)
  [ -n "$receiver_pid" ] || { cat polled-receiver.out; fail "bypass_poll=auto: no receiving fio listening on port $port"; }
  workers=$(cat /proc/"$receiver_pid"/task/*/comm 2>/dev/null | grep -c '^bypass-w')
  [ "$workers" = 0 ] || fail "bypass_poll=auto, posix, one job: the receiving fio runs $workers worker threads (expected its job thread to poll)"
  # Beside it, a polled sender at depth 1 (fio queues each request after the loop iteration that
  # delivered the previous reply): its lossy session must send no ACK frame per reply (the next
  # request's ack_seq carries it), so its messenger's acks_sent stays far below msgs_sent.
  run_fio polled-depth1 120 "${poll[@]}" --name=depth1 --rw=write --bs=4k --iodepth=1 --size=8m --time_based \
    --runtime=3 --bypass_set="ms.admin_socket=$work/depth1.asok" &
  depth1=$!
  # iodepth_batch_submit: the sender commits its requests in batches, so auto polls there too and
  # each batch leaves in one write (send_message_unflushed, then flush_output at fio's commit).
  run_fio polled-sender 120 "${poll[@]}" --name=sender --rw=randrw --bs=4k --iodepth=16 --iodepth_batch_submit=16 \
    --size=8m --verify=crc32c &
  sender=$!
  # The depth-1 sender's counters once it has sent 300 requests, or its last before it ended.
  admin_status=1
  while kill -0 "$depth1" 2>/dev/null; do
    sleep 0.1
    [ -S "$work/depth1.asok" ] && "$FIO_TEST_ADMIN" "$work/depth1.asok" perf dump > depth1-perf.new 2>&1 || continue
    mv depth1-perf.new depth1-perf.json
    admin_status=0
    python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["messengers"][0]["counters"]["msgs_sent"] < 300)' \
      depth1-perf.json 2>/dev/null && break
  done
  wait "$sender"
  sender_status=$?
  wait "$depth1"
  depth1_status=$?
  wait "${pids[0]}"
  receiver_status=$?
  pids=()
  [ "$admin_status" = 0 ] || { cat depth1-perf.new polled-depth1.out; fail "bypass-admin perf dump of the depth-1 sender failed throughout its run"; }
  [ "$depth1_status" = 0 ] || { cat polled-depth1.out polled-receiver.out; fail "bypass_poll=auto, depth 1: the sending fio exited $depth1_status"; }
  python3 - depth1-perf.json <<'PY' || fail "the polled depth-1 sender's ACK frames (depth1-perf.json)"
import json, sys
counters = json.load(open(sys.argv[1]))["messengers"][0]["counters"]
sent, acks = counters["msgs_sent"], counters["acks_sent"]
print(f"depth-1 sender: {sent} messages sent, {acks} ACK frames")
if sent < 100:
    sys.exit(f"only {sent} requests sent within its run: too few to count its ACK frames")
if acks * 4 >= sent:
    sys.exit(f"{acks} ACK frames for {sent} requests: replies are acknowledged with frames of their own")
PY
  [ "$sender_status" = 0 ] || { cat polled-sender.out polled-receiver.out; fail "bypass_poll=auto (job): the sending fio exited $sender_status"; }
  [ "$receiver_status" = 0 ] || { cat polled-receiver.out; fail "bypass_poll=auto (job): the receiving fio exited $receiver_status"; }
  check_json polled-sender.json 1
  check_json polled-receiver.json 1
  ;;

dpdk)
  [ "$(id -u)" = 0 ] || fail "the dpdk case needs root (DPDK memory and memif)"
  # The examples as they are, but with a socket, addresses and paths of this run's own.
  net=$(( $$ % 250 )) sock=/run/bypass-fio-test-$$.sock
  for f in dpdk-receiver.fio dpdk-sender.fio dpdk-memif-receiver.yaml dpdk-memif-sender.yaml; do
    sed -e "s|/run/bypass-fio-memif.sock|$sock|; s|10\.91\.0\.|10.92.$net.|; s|examples/fio/|$work/|" \
      "$root/examples/fio/$f" > "$f"
  done
  sed -i 's/^size=64m/size=8m/' dpdk-sender.fio
  # Plain memory, so the case runs beside other tests without taking the machine's hugepages.
  sed -i 's/^  no_huge: auto/  no_huge: yes/' dpdk-memif-receiver.yaml dpdk-memif-sender.yaml
  run_fio receiver 120 dpdk-receiver.fio &
  pids+=($!)
  for _ in $(seq 1 300); do  # the memif client needs the server's socket (abstract: /proc/net/unix)
    grep -q "$sock" /proc/net/unix && break
    sleep 0.1
  done
  grep -q "$sock" /proc/net/unix || { cat receiver.out; fail "the receiving fio opened no memif socket"; }
  run_fio sender 120 dpdk-sender.fio
  sender_status=$?
  wait "${pids[0]}"
  receiver_status=$?
  pids=()
  [ "$sender_status" = 0 ] || { cat sender.out receiver.out; fail "the sending fio exited $sender_status"; }
  [ "$receiver_status" = 0 ] || { cat receiver.out; fail "the receiving fio exited $receiver_status"; }
  check_json sender.json 1
  check_json receiver.json 1
  ;;

errors)
  port=$(free_port)
  job=(--ioengine=external:"$engine" --thread --bs=4k --name=job)
  # fio itself rejects an unknown option (and leaks its parser's state doing so: not the engine's).
  ASAN_OPTIONS=detect_leaks=0 run_fio unknown-option 30 "${job[@]}" --size=1m --port="$port" --bypass_bogus=1
  expect unknown-option "unrecognized option '--bypass_bogus=1'" $?
  run_fio bypass-set-key 30 "${job[@]}" --size=1m --port="$port" --bypass_set='ms.workers=1 ms.wrokers=2'
  expect bypass-set-key "bypass: bypass_set: ms.wrokers: unknown option; did you mean 'ms.workers'\?" $?
  run_fio bypass-set-value 30 "${job[@]}" --size=1m --port="$port" --bypass_set='ms.workers=two'
  expect bypass-set-value "bypass: bypass_set: ms.workers: 'two' is not an integer" $?
  run_fio bypass-set-item 30 "${job[@]}" --size=1m --port="$port" --bypass_set='ms.workers'
  expect bypass-set-item "bypass: bypass_set: 'ms.workers' is not key=value" $?
  printf 'ms:\n  workers: 1\n  tpye: posix\n' > typo.yaml
  run_fio bypass-config 30 "${job[@]}" --size=1m --port="$port" --bypass_config=typo.yaml
  expect bypass-config "bypass: typo.yaml:3:3: ms.tpye: unknown option; did you mean 'ms.type'\?" $?
  run_fio no-port 30 "${job[@]}" --size=1m
  expect no-port "bypass: port: the receiver's TCP port is required" $?
  run_fio no-size 30 "${job[@]}" --port="$port"
  expect no-size "bypass: a sending job needs size=" $?
  run_fio receiver-verify 30 "${job[@]}" --port="$port" --receiver=1 --verify=md5
  expect receiver-verify "bypass: verify= belongs on the sending jobs" $?
  start=$SECONDS
  run_fio no-receiver 30 "${job[@]}" --size=1m --port="$port" --rw=write --bypass_timeout=1
  expect no-receiver "bypass: no receiver at 127.0.0.1:$port over posix within 1 s \(bypass_timeout\): .*ECONNREFUSED" $?
  [ $((SECONDS - start)) -lt 15 ] || fail "no-receiver took $((SECONDS - start)) s"
  # Two jobs on one stack that a job's thread polls: the second is refused (one thread runs a
  # stack's loops). Whichever starts first holds the stack for seconds (the receiver for its run,
  # a sender while it retries its connect), so the other always finds it polled.
  cat > poll-shared.fio <<EOF
[global]
ioengine=external:$engine
port=$port
thread
bypass_poll=job
bypass_timeout=2
[receiver]
receiver=1
rw=read
size=64m
runtime=2
[sender]
rw=write
size=1m
EOF
  run_fio poll-shared 30 poll-shared.fio
  expect poll-shared "bypass: job (sender|receiver): job (sender|receiver)'s thread polls the network stack these settings name \(bypass_poll=job" $?

  # A receiver that dies mid-run: the sender's session ends; it says so and stops, no hang.
  "${fio[@]}" --ioengine=external:"$engine" --thread --name=receiver --receiver=1 --rw=read --port="$port" \
    --size=64m >receiver.out 2>&1 &
  pids+=($!)
  run_fio dies 60 "${job[@]}" --size=4m --port="$port" --rw=randwrite --iodepth=8 --time_based --runtime=30 &
  sender=$!
  for _ in $(seq 1 100); do  # until the sender's session is up
    [ -n "$(ss -Htn state established "( sport = :$port )")" ] && break
    sleep 0.1
  done
  sleep 1
  start=$SECONDS
  kill -9 "${pids[0]}"
  wait "$sender"
  expect dies "bypass: the receiver at 127.0.0.1:$port over posix closed the session" $?
  [ $((SECONDS - start)) -lt 15 ] || fail "the sender took $((SECONDS - start)) s to stop after its receiver died"
  pids=()

  # A payload that does not verify: reading back an object nothing wrote returns zeros.
  cat > unwritten.fio <<EOF
[global]
ioengine=external:$engine
port=$port
thread
[receiver]
receiver=1
rw=read
size=64m
[reader]
rw=read
size=1m
verify=crc32c
EOF
  run_fio not-verified 60 unwritten.fio
  expect not-verified "verify: bad magic header 0" $?
  ;;

rdma)
  cp -r "$root/examples" "$root/config" .
  sed -i 's/^size=64m/size=256k/; s/^iodepth=16/iodepth=4/; s/^thread$/thread\nbypass_timeout=60/' examples/fio/rdma.fio
  # The guest is emulated (ASan runs 20-50x slower there): a MiB each way, generous timeouts.
  cmd="cd '$work' && timeout 600 ${fio[*]} --output-format=json --output=rdma.json examples/fio/rdma.fio > rdma.out 2>&1; \
echo \"fio exit \$?\" >> rdma.out"
  source "$root/tests/support/guest_lib.sh"
  run_rxe_guest 900 "$cmd" guest.out
  rc=$?
  [ "$rc" = 0 ] || { cat guest.out rdma.out 2>/dev/null; fail "the guest exited $rc"; }
  grep -q '^fio exit 0$' rdma.out || { cat rdma.out; fail "fio over rdma failed in the guest"; }
  check_json rdma.json 2
  ;;

*) fail "unknown case '$case'" ;;
esac
echo "PASS: fio $case"
