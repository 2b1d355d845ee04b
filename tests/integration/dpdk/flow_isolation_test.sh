#!/bin/bash
# meson test flow_isolation_guest (suite dpdk-integration): Bypass sharing one link with the kernel
# through rte_flow isolation, for real, inside the soft-RoCE guest of tools/rxe-vm (its Debian 6.1
# kernel has the multiq qdisc and TC flower that net_tap's rte_flow needs; this host's lacks multiq).
#
# net_tap with remote=flk0 fronts a kernel veth (the bifurcated model: the port's traffic is the
# kernel's unless a rule claims it); its peer flp0 sits in namespace flpeer. With dpdk.flow_isolate
# and two workers, `bypass-pmd stack echo-server` serves 10.91.0.3 / fd00:91::3 while the kernel
# keeps 10.91.0.1 / fd00:91::1:
#   - the peer pings the kernel (IPv4, IPv6) and uses a kernel TCP echo service: the kernel kept them;
#   - the peer pings the stack over ICMPv6 (Neighbor Discovery claimed by rule) and over IPv4, and
#     16 MiB come back byte-exact from the stack over IPv4. net_tap cannot match ARP by target
#     address, so its broadcast ARP requests stay with the kernel: the peer gets a static entry for
#     the stack, whose own ARP request for the peer is answered to its MAC (claimed by rule);
#   - two IPv6 connections from sources whose last bits differ land on the two receive queues:
#     net_tap's RSS action needs a BPF program this kernel's verifier refuses, so the stack steers
#     by source-address rules, and both queues counted packets;
#   - TC rules on flk0 while it runs, none after it exits, and the kernel still answers.
# Exit 77 (skip) only when the guest cannot boot here.
#   flow_isolation_test.sh SOURCE_ROOT BYPASS_PMD
set -u
if [ "${1-}" != --in-guest ]; then
  root=$1 tool=$2
  out=$(mktemp)
  trap 'rm -f "$out"' EXIT
  RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-840} "$root/tools/rxe-vm" "bash '$root/tests/integration/dpdk/flow_isolation_test.sh' --in-guest '$tool'" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 125 ]; then
    echo "SKIP: the guest (tools/rxe-vm) could not start here: $(grep -m1 'rxe-vm:' "$out")"
    exit 77
  fi
  exit "$rc"
fi

# ---------------------------------------- in the guest ----------------------------------------
tool=$2
py=/usr/bin/python3   # Debian's, with its standard library
work=$(mktemp -d)
server_pid=
kernel_service_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  [ -n "$kernel_service_pid" ] && kill "$kernel_service_pid" 2>/dev/null
  ip netns del flpeer 2>/dev/null
  ip link del flk0 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  # A running server prints its ARP cache, connections (retransmissions, timeouts) and queues on SIGUSR1.
  [ -n "$server_pid" ] && kill -USR1 "$server_pid" 2>/dev/null && sleep 3
  [ -f "$work/server.out" ] && { echo "-- server stdout:"; cat "$work/server.out"; echo "-- server stderr:"; tail -30 "$work/server.err"; }
  exit 1
}
step() { echo "== $(date +%T) $*"; }
peer() { ip netns exec flpeer "$@"; }

modprobe tun || fail "no tun module"
ip netns add flpeer && ip link add flk0 type veth peer name flp0 && ip link set flp0 netns flpeer || fail "veth setup"
ip addr add 10.91.0.1/24 dev flk0 && ip -6 addr add fd00:91::1/64 dev flk0 nodad && ip link set flk0 up || fail "kernel side"
peer ip link set lo up
peer ip addr add 10.91.0.2/24 dev flp0 && peer ip -6 addr add fd00:91::2/64 dev flp0 nodad &&
  peer ip -6 addr add fd00:91::5/64 dev flp0 nodad && peer ip link set flp0 up || fail "peer side"

# Echo checks in one interpreter (Python starts slowly in the emulated guest): each ADDR PORT SIZE
# [SOURCE] sends SIZE random bytes and wants all of them back, exact.
cat > "$work/echo.py" <<'PY'
import os, socket, sys, threading, time
def echo(host, port, size, source=None):
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(300)  # the emulated guest on a loaded host stalls for whole seconds
    if source:
        s.bind((source, 0))
    s.connect((host, port))
    data = os.urandom(size)
    def send():
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
    sender = threading.Thread(target=send)
    start = time.monotonic()
    sender.start()
    got = bytearray()
    while len(got) < size:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        got += chunk
    sender.join()
    s.close()
    where = "%s:%d%s" % (host, port, " from " + source if source else "")
    if bytes(got) != data:
        sys.exit("echo %s: %d of %d bytes back, %s" % (where, len(got), size,
                 "same so far" if data.startswith(bytes(got)) else "corrupted"))
    print("echo %s: %d bytes back exact in %.1f s" % (where, size, time.monotonic() - start), flush=True)
args = sys.argv[1:]
while args:
    host, port, size = args[0], int(args[1]), int(args[2])
    source = args[3] if len(args) > 3 and args[3] != "-" else None
    echo(host, port, size, source)
    args = args[4:]
PY
# The kernel's own TCP service on its address.
"$py" -c '
import socketserver
class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data: return
            self.request.sendall(data)
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer(("10.91.0.1", 7001), Echo).serve_forever()' &
kernel_service_pid=$!

step "bypass-pmd flow in the shell: isolate, create, list, destroy on the same port"
printf '%s\n' "flow isolate 0 on" \
  "flow create 0 ingress pattern eth / ipv4 dst is 10.91.0.9 / tcp dst is 7100 / end actions queue index 0 / end --json" \
  "flow list 0 --json" "flow destroy 0 rule 0 --json" "flow list 0 --json" |
  HOME="$work" "$tool" --vdev net_tap0,iface=fltap0,remote=flk0 --set ms.workers=1 --set dpdk.no_huge=yes \
    --set dpdk.memory=128M --set dpdk.mbufs=4095 -i >"$work/shell.out" 2>"$work/shell.err" ||
  fail "bypass-pmd -i: $(cat "$work/shell.err")"
"$py" - "$work/shell.out" <<'PY' || { cat "$work/shell.out" "$work/shell.err"; fail "bypass-pmd flow output"; }
import json, sys
text = open(sys.argv[1]).read()
assert "Ingress traffic on port 0 (net_tap0) is now restricted to the defined flow rules" in text, text
docs = [json.loads(l[l.index("{"):]) for l in text.splitlines() if "{" in l]
created, listed, destroyed, after = docs
assert created["created"] == 0, created
rules = listed["ports"][0]["rules"]
assert listed["ports"][0]["isolated"] and len(rules) == 1, listed
assert rules[0]["rule"] == "ingress pattern eth / ipv4 dst is 10.91.0.9 / tcp dst is 7100 / end actions queue index 0 / end", rules
assert destroyed["destroyed"] == 0 and after["ports"][0]["rules"] == [], (destroyed, after)
print("flow isolate, create, list, destroy: as asked")
PY

# DAD off: under ASan in the emulated guest the workers may start after DAD's few seconds' bound,
# and the peer's addresses are known distinct; the Neighbor Solicitations DAD would send reach the
# same solicited-node rules as the peer's, which the IPv6 ping below exercises.
step "bypass-pmd stack echo-server on net_tap remote=flk0, isolated, two workers"
start=$(date +%s)
BYPASS_LOG=info "$tool" --vdev net_tap0,iface=fltap0,remote=flk0 --set ms.workers=2 --set dpdk.no_huge=yes \
  --set dpdk.memory=128M --set dpdk.mbufs=4095 --set dpdk.host_ip=10.91.0.3 --set dpdk.host_ipv6=fd00:91::3 \
  --set dpdk.ipv6_dad_transmits=0 --set dpdk.flow_isolate=true --json stack echo-server 7000 --state >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
# Bounded in time, not in rounds: under ASan the emulated guest on a loaded host starts the EAL in
# tens of seconds to minutes.
until grep -q '"type":"ready"' "$work/server.out" 2>/dev/null; do
  kill -0 "$server_pid" 2>/dev/null || fail "the server exited before it was ready"
  [ $(( $(date +%s) - start )) -lt 300 ] || fail "the server was not ready within 300 s"
  sleep 0.2
done
echo "ready after $(( $(date +%s) - start )) s"
rules=$(tc filter show dev flk0 ingress | grep -c 'flower')
echo "TC flower rules on flk0 ingress while it runs: $rules"
[ "$rules" -gt 0 ] || fail "no TC rules on flk0 while the stack runs"

step "the kernel keeps its own traffic; the stack answers on the same link"
peer ping -c 2 -W 3 10.91.0.1 >/dev/null || fail "the peer cannot ping the kernel (IPv4)"
peer ping -6 -c 2 -W 3 fd00:91::1 >/dev/null || fail "the peer cannot ping the kernel (IPv6)"
peer ping -6 -c 2 -W 5 fd00:91::3 >/dev/null || fail "the peer cannot ping the stack over IPv6"
mac=$(printf '02:00:%02x:%02x:%02x:%02x' 10 91 0 3)   # the stack's own MAC under isolation (from dpdk.host_ip)
peer ip neigh replace 10.91.0.3 lladdr "$mac" dev flp0 nud permanent
peer ping -c 2 -W 5 10.91.0.3 >/dev/null || fail "the peer cannot ping the stack over IPv4"
# The kernel's service, 16 MiB through the stack, and one connection from each of two IPv6 sources
# (last bits 0 and 1: one per receive queue under the source-address rules).
peer timeout 600 "$py" "$work/echo.py" 10.91.0.1 7001 65536 - 10.91.0.3 7000 $((16 << 20)) - \
  fd00:91::3 7000 65536 fd00:91::2 fd00:91::3 7000 65536 fd00:91::5 || fail "the echo checks"

step "stop: rules removed, the kernel still answers"
kill -TERM "$server_pid"
stop=$(date +%s)
while kill -0 "$server_pid" 2>/dev/null && [ $(( $(date +%s) - stop )) -lt 120 ]; do sleep 0.2; done
kill -0 "$server_pid" 2>/dev/null && fail "the server did not stop within 120 s of SIGTERM"
wait "$server_pid"; status=$?; server_pid=
[ "$status" = 0 ] || fail "the server exited with status $status"
"$py" - "$work/server.out" <<'PY' || fail "the server's report"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
port = [l for l in lines if l.get("type") == "port"]
summary = [l for l in lines if l.get("type") == "summary"]
assert port and summary, "no port or summary line"
port = port[-1]
print("isolated:", port["isolated"], "packets per receive queue:", port["rx_queue_packets"])
for rule in port["flow_rules"]:
    print("  flow", rule)
assert port["isolated"], "the port was not isolated"
assert len(port["rx_queue_packets"]) == 2 and all(n > 0 for n in port["rx_queue_packets"]), \
    "both receive queues should have taken packets (steered by rule)"
assert any("arp" in r or "0x0806" in r for r in port["flow_rules"]), "no ARP rule"
assert summary[-1]["connections"] == 3, "expected 3 connections, got %s" % summary[-1]["connections"]
PY
left=$(tc filter show dev flk0 ingress | grep -c 'flower')
[ "$left" = 0 ] || fail "$left TC rules left on flk0 after the stack exited: $(tc filter show dev flk0 ingress)"
peer ping -c 1 -W 3 10.91.0.1 >/dev/null || fail "the kernel does not answer after the stack exited"
echo "PASS: flow isolation on net_tap remote=flk0"
