#!/bin/bash
# `bypass-pmd stack ...` against the Linux kernel over net_tap: the userspace stack (10.67.0.2)
# pings the kernel (10.67.0.1) and resolves it with ARP, serves echo and discard to kernel clients,
# answers the kernel's ping, sends to kernel listeners, prints its ARP cache and connections on
# SIGUSR1 and --state, stops cleanly on SIGINT/SIGTERM; bad command lines fail with one line and
# exit 2 before the EAL starts. The tap is a persistent multi-queue tap that net_tap attaches to,
# so the kernel side keeps its address between runs of the tool. Needs root (exit 77 otherwise).
# Args: BYPASS_PMD
set -u
source "$(dirname "$0")/../../support/test_lib.sh"
own_network_namespace "$@"  # the tap, its addresses and sysctls meet no other test's
tool="$1"
tap=bpC0
kernel_ip=10.67.0.1
stack_ip=10.67.0.2
py=/usr/bin/python3  # the Debian python (the one on PATH may lack modules)
dir=/tmp/bypass-stack-tool-C-$$
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# ---- bad command lines: one clear line, exit 2, no EAL start (no root needed) -------------------
bad() {  # EXPECTED_TEXT ARGS...
  local expected="$1"; shift
  local out err rc
  out=$(timeout 20 "$tool" --set dpdk.host_ip=$stack_ip "$@" 2>/tmp/bypass-stack-tool-C-$$.err)
  rc=$?
  err=$(cat /tmp/bypass-stack-tool-C-$$.err); rm -f /tmp/bypass-stack-tool-C-$$.err
  if [ $rc -ne 2 ]; then fail "'$*' exited $rc, expected 2 (stderr: $err)"; return; fi
  if [ -n "$out" ]; then fail "'$*' printed to stdout: $out"; return; fi
  if [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ]; then fail "'$*' printed more than one line: $err"; return; fi
  case "$err" in *EAL*|*" I pmd: "*) fail "'$*' started the EAL: $err"; return;; esac
  case "$err" in *"$expected"*) ok "'$*' -> $err";; *) fail "'$*' said '$err', expected '$expected'";; esac
}
bad "not an IPv4 address" stack ping 10.67.0
bad "not an IPv4 address" stack ping 10.67.0.300
bad "dpdk.host_ipv6 is not set" stack ping fd00::1  # IPv6: stack_ipv6_tap_test.sh
bad "dpdk.host_ipv6 is not set" stack send [fd00::1]:7000 --bytes 10
bad "-c: '0' must be a whole number in 1..1000000" stack ping $kernel_ip -c 0
bad "-c: needs a value" stack ping $kernel_ip -c
bad "needs a TCP port" stack echo-server
bad "'0' must be a whole number in 1..65535" stack discard-server 0
bad "has no port" stack send $kernel_ip --bytes 10
bad "--bytes: 'lots' is not a byte count" stack send $kernel_ip:9 --bytes lots
bad "needs --bytes" stack send $kernel_ip:9
bad "unknown option '--frob'" stack ping $kernel_ip --frob
bad "unknown command 'pong'" stack pong
bad "needs one or more IPv4 addresses" stack arp
bad "dpdk.host_ip is not set" --set dpdk.host_ip=0.0.0.0 stack ping $kernel_ip

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (creates the tap $tap)"; exit 77; fi
for need in ip ping timeout; do
  command -v "$need" >/dev/null 2>&1 || { echo "FAIL: $need is not installed (tools/setup.sh installs it)"; exit 1; }
done
[ -x "$py" ] || { echo "FAIL: $py is missing (tools/setup.sh installs python3)"; exit 1; }
[ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }

server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
  ip link del "$tap" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir"
ip tuntap add dev "$tap" mode tap multi_queue || { echo "FAIL: cannot create the tap $tap"; exit 1; }
ip addr add "$kernel_ip/24" dev "$tap" && ip link set "$tap" up || { echo "FAIL: cannot address $tap"; exit 1; }

cat > "$dir/stack.yaml" <<EOF
ms:
  workers: ${BYPASS_MS_WORKERS:-1}
dpdk:
  vdev:
    - net_tap0,iface=$tap
  host_ip: $stack_ip
  netmask: 255.255.255.0
  no_huge: yes       # other DPDK tests may hold the hugepages at the same time
  memory: 256M
  in_memory: true
  link_wait: 5s
EOF
run() { timeout 60 "$tool" -c "$dir/stack.yaml" "$@"; }

# Starts a server in the background and waits for its ready line (stdout in $dir/server.out).
# Not under timeout(1), which would take the signals meant for the server; stop_server bounds it.
start_server() {
  "$tool" -c "$dir/stack.yaml" "$@" >"$dir/server.out" 2>"$dir/server.err" &
  server_pid=$!
  for _ in $(seq 200); do
    grep -Eq "ready on $stack_ip|\"type\":\"ready\"" "$dir/server.out" 2>/dev/null && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
  done
  fail "'$*' did not print its ready line: $(cat "$dir/server.out" "$dir/server.err")"
  return 1
}
# Stops the server with SIGNAL; it must exit 0 within 10 s.
stop_server() {
  kill -"$1" "$server_pid"
  for _ in $(seq 200); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$server_pid" 2>/dev/null; then fail "server still running 10 s after SIG$1"; kill -9 "$server_pid"; fi
  wait "$server_pid"; local rc=$?
  server_pid=""
  [ $rc -eq 0 ] && ok "server exited 0 on SIG$1" || fail "server exited $rc on SIG$1: $(tail -3 "$dir/server.err")"
}
# Waits until the server's stdout has gained a line matching PATTERN after a SIGUSR1.
dump_server() {
  local before; before=$(wc -l <"$dir/server.out")
  kill -USR1 "$server_pid"
  for _ in $(seq 100); do
    [ "$(tail -n +$((before + 1)) "$dir/server.out" | grep -c '^TCP connections')" -gt 0 ] && break
    sleep 0.05
  done
  tail -n +$((before + 1)) "$dir/server.out"
}

# ---- ping from the stack ----------------------------------------------------------------------
out=$(run stack ping $kernel_ip -c 3 -i 200ms 2>"$dir/err"); rc=$?
replies=$(printf '%s\n' "$out" | grep -c "^64 bytes from $kernel_ip: icmp_seq=[123] ttl=64 time=")
if [ $rc -eq 0 ] && [ "$replies" -eq 3 ] && printf '%s\n' "$out" | grep -q "3 packets transmitted, 3 received, 0% packet loss" &&
   printf '%s\n' "$out" | grep -Eq "^rtt min/avg/max/mdev = [0-9.]+/[0-9.]+/[0-9.]+/[0-9.]+ ms$"; then
  ok "stack ping -c 3: 3 replies from the kernel"
else
  fail "stack ping -c 3 (rc $rc): $out $(tail -3 "$dir/err")"
fi
out=$(run --json stack ping $kernel_ip -c 2 -i 100ms -s 1400 2>/dev/null)
if printf '%s\n' "$out" | $py -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin if l.strip()]
replies = [l for l in lines if l["type"] == "reply"]
summary = lines[-1]
assert len(replies) == 2 and all(r["bytes"] == 1408 and r["data_intact"] for r in replies), replies
assert summary["type"] == "summary" and summary["transmitted"] == 2 and summary["received"] == 2, summary
assert summary["loss_percent"] == 0 and summary["min_ms"] <= summary["avg_ms"] <= summary["max_ms"], summary
'; then ok "stack --json ping -s 1400: two intact 1408-byte replies"; else fail "stack --json ping: $out"; fi
out=$(run stack ping 10.67.0.99 -c 2 -i 100ms -W 300ms 2>"$dir/err"); rc=$?
if [ $rc -eq 1 ] && printf '%s\n' "$out" | grep -q "2 packets transmitted, 0 received, 100% packet loss" &&
   [ "$(printf '%s\n' "$out" | grep -c '^no reply for icmp_seq=')" -eq 2 ]; then
  ok "stack ping to an absent host: 100% loss, exit 1"
else
  fail "stack ping to an absent host (rc $rc): $out $(tail -3 "$dir/err")"
fi

# ---- arp --------------------------------------------------------------------------------------
out=$(run stack arp $kernel_ip 2>"$dir/err"); rc=$?
kernel_mac=$(cat /sys/class/net/$tap/address)
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -Eq "^  $kernel_ip +$kernel_mac +reachable +[0-9.]+s +0$"; then
  ok "stack arp $kernel_ip: $kernel_mac reachable"
else
  fail "stack arp (rc $rc, kernel MAC $kernel_mac): $out $(tail -3 "$dir/err")"
fi
out=$(run stack arp 10.67.0.98 -W 500ms 2>"$dir/err"); rc=$?
if [ $rc -eq 1 ] && printf '%s\n' "$out" | grep -Eq "^  10.67.0.98 +\(incomplete\) +incomplete " &&
   grep -q "no reply from 10.67.0.98 within 500ms" "$dir/err"; then
  ok "stack arp for an absent host: incomplete, exit 1"
else
  fail "stack arp for an absent host (rc $rc): $out $(cat "$dir/err")"
fi

# ---- echo server: kernel ping, byte-exact echo, conns and arp on SIGUSR1, SIGINT ----------------
if start_server stack echo-server 7; then
  ping -c 3 -i 0.2 -W 2 $stack_ip >"$dir/ping.out" 2>&1 && grep -q "3 received" "$dir/ping.out" &&
    ok "kernel ping to the stack while echo-server runs" || fail "kernel ping to the stack: $(cat "$dir/ping.out")"
  # One connection echoes 2 MB of random bytes; a second stays open for the SIGUSR1 dump.
  $py - "$dir" <<'EOF' &
import os, socket, sys, threading, time
d = sys.argv[1]
held = socket.create_connection(("10.67.0.2", 7), timeout=10)
held.sendall(b"hello")
assert held.recv(5) == b"hello"
data = os.urandom(2_000_000)
s = socket.create_connection(("10.67.0.2", 7), timeout=20)
got = bytearray()
def reader():
    while True:
        b = s.recv(65536)
        if not b:
            break
        got.extend(b)
t = threading.Thread(target=reader)
t.start()
s.sendall(data)
s.shutdown(socket.SHUT_WR)
t.join(30)
open(d + "/echo.result", "w").write("exact" if bytes(got) == data else "mismatch %d" % len(got))
open(d + "/held", "w").write("open")
while not os.path.exists(d + "/release"):
    time.sleep(0.05)
held.close()
EOF
  client=$!
  for _ in $(seq 400); do [ -f "$dir/held" ] && break; sleep 0.05; done
  [ "$(cat "$dir/echo.result" 2>/dev/null)" = exact ] && ok "echo-server echoed 2 MB byte-exact" ||
    fail "echo-server echo: $(cat "$dir/echo.result" 2>/dev/null)"
  dump=$(dump_server)
  if printf '%s\n' "$dump" | grep -Eq "^  $stack_ip:7 +$kernel_ip:[0-9]+ +ESTABLISHED +[0-9]+ +[0-9.]+ms +[0-9.]+ms +0 +5 +5$" &&
     printf '%s\n' "$dump" | grep -q "listening on 7" &&
     printf '%s\n' "$dump" | grep -Eq "^  $kernel_ip +[0-9a-f:]{17} +reachable "; then
    ok "SIGUSR1: conns shows the open connection (5 bytes in/out), arp shows the kernel"
  else
    fail "SIGUSR1 dump: $dump"
  fi
  touch "$dir/release"; wait $client
  stop_server INT
  grep -Eq "^echo-server stopped by SIGINT after [0-9.]+ s: 2 connections, 2000005 bytes received and echoed$" "$dir/server.out" &&
    ok "echo-server summary" || fail "echo-server summary: $(tail -2 "$dir/server.out")"
fi

# ---- discard server, --json, SIGTERM -----------------------------------------------------------
if start_server --json stack discard-server 9 --stats-interval 200ms; then
  $py -c '
import socket
s = socket.create_connection(("10.67.0.2", 9), timeout=20)
s.sendall(b"x" * 3_000_000)
s.shutdown(socket.SHUT_WR)
assert s.recv(1) == b""  # the server closes after our end of stream
' && ok "discard-server took 3 MB and closed" || fail "discard-server client"
  sleep 0.3  # at least one --stats-interval dump
  stop_server TERM
  if $py -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert lines[0]["type"] == "ready" and lines[0]["mode"] == "discard", lines[0]
assert any(l["type"] == "conns" and l["listening"] == [9] for l in lines), "no conns dump"
assert any(l["type"] == "arp" for l in lines), "no arp dump"
s = lines[-1]
assert s["type"] == "summary" and s["connections"] == 1 and s["bytes_received"] == 3000000 and s["signal"] == "SIGTERM", s
' "$dir/server.out"; then ok "discard-server --json: ready, periodic dumps, summary 3000000 bytes"
  else fail "discard-server --json output: $(cat "$dir/server.out")"; fi
fi

# ---- send to kernel listeners ------------------------------------------------------------------
listen() {  # MODE PORT: a kernel listener that counts (discard) or echoes, closes at EOF
  $py - "$1" "$2" "$dir" <<'EOF' &
import socket, sys
mode, port, d = sys.argv[1], int(sys.argv[2]), sys.argv[3]
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("10.67.0.1", port))
l.listen(1)
open(d + "/listening", "w").write("1")
l.settimeout(30)
c, _ = l.accept()
c.settimeout(30)
n = 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    n += len(b)
    if mode == "echo":
        c.sendall(b)
c.close()
open(d + "/kernel.count", "w").write(str(n))
EOF
  listener=$!
  for _ in $(seq 100); do [ -f "$dir/listening" ] && break; sleep 0.05; done
  rm -f "$dir/listening"
}
listen discard 9009
out=$(run stack send $kernel_ip:9009 --bytes 5M --state 2>"$dir/err"); rc=$?
wait $listener
if [ $rc -eq 0 ] && [ "$(cat "$dir/kernel.count")" = 5242880 ] &&
   printf '%s\n' "$out" | grep -Eq "^sent 5242880 of 5242880 bytes to $kernel_ip:9009 in [0-9.]+ s: [0-9]+ bytes/s \([0-9.]+ Gbit/s\), peer closed: all delivered$" &&
   printf '%s\n' "$out" | grep -Eq "^  $stack_ip:[0-9]+ +$kernel_ip:9009 +TIME-WAIT .* 0 +5242880$"; then
  ok "stack send 5M: the kernel received exactly 5242880 bytes; --state shows the TIME-WAIT connection"
else
  fail "stack send to discard (rc $rc, kernel got $(cat "$dir/kernel.count" 2>/dev/null)): $out $(tail -3 "$dir/err")"
fi
listen echo 9010
out=$(run --json stack send $kernel_ip:9010 --bytes 1000000 2>"$dir/err"); rc=$?
wait $listener
if [ $rc -eq 0 ] && [ "$(cat "$dir/kernel.count")" = 1000000 ] && printf '%s\n' "$out" | $py -c '
import json, sys
s = json.loads(sys.stdin.read())
assert s["type"] == "summary" and s["bytes"] == 1000000 and s["echoed_bytes"] == 1000000 and s["peer_closed"], s
assert s["bytes_per_second"] > 0, s
'; then ok "stack --json send to an echo listener: 1000000 out, 1000000 back"
else fail "stack send to echo (rc $rc): $out $(tail -3 "$dir/err")"; fi
out=$(run stack send $kernel_ip:9011 --bytes 1K 2>"$dir/err"); rc=$?
if [ $rc -eq 1 ] && grep -q "ECONNREFUSED" "$dir/err"; then ok "stack send to a closed port: ECONNREFUSED, exit 1"
else fail "stack send to a closed port (rc $rc): $out $(cat "$dir/err")"; fi

[ $failures -eq 0 ] && { echo "all stack tool checks passed"; exit 0; }
echo "$failures checks failed"
exit 1
