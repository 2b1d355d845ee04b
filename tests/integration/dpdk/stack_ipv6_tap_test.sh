#!/bin/bash
# IPv6 on the dpdk transport against the Linux kernel over net_tap: `bypass-pmd stack` with
# dpdk.host_ipv6=fd00:67:6::2 (the kernel is fd00:67:6::1/64 on the tap, added with nodad).
#   (a) `stack ping fd00:67:6::1 -c 3` gets 3 ping6(8)-style replies from the kernel (the stack
#       resolves the kernel by Neighbor Discovery; the kernel's hop limit 64 shows as ttl=64);
#   (b) the kernel's `ping -6 -c 3 fd00:67:6::2` gets 3 replies from the stack (the kernel
#       resolves us: our solicited-node group reaches the stack);
#   (c) `stack neigh fd00:67:6::1` and a running server's SIGUSR1 dump list the kernel's MAC as
#       REACHABLE or STALE, the kernel's `ip -6 neigh` lists ours, and its conns a kernel
#       connection over IPv6 in aligned columns;
#   (d) the stack's counters (bypass-admin perf dump) show no port drops and no malformed or
#       unroutable IPv6, ICMPv6 or ND packets, and the echo replies it sent;
#   (e) with the kernel's address as its own, the stack's start fails: Duplicate Address Detection.
# Bad IPv6 command lines and options fail with one line naming the bad value (no root needed).
# With BYPASS_MS_WORKERS=2 ND and echo replies cross workers (software redirect, learn hook, and an
# advertisement answering one worker's solicitation that reaches the other is handed back).
# Needs root (exit 77 otherwise).  Args: BYPASS_PMD BYPASS_ADMIN
set -u
source "$(dirname "$0")/../../support/test_lib.sh"
own_network_namespace "$@"  # the tap, its addresses and sysctls meet no other test's
tool="$1"
admin="$2"
tap=bpV6
kernel_ip6=fd00:67:6::1
kernel_long_ip6=fd00:67:6:0:1234:5678:9abc:def0  # an endpoint wider than any IPv4 one, for conns
stack_ip6=fd00:67:6::2
stack_ip=10.66.6.2
py=/usr/bin/python3
dir=/tmp/bypass-stack-ipv6-$$
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# ---- bad command lines and options: one clear line, exit 2 or 1, before the EAL starts ---------
bad() {  # EXPECTED_TEXT ARGS...
  local expected="$1"; shift
  local out err rc
  out=$(timeout 20 "$tool" --set dpdk.host_ip=$stack_ip "$@" 2>"$dir.err")
  rc=$?
  err=$(cat "$dir.err"); rm -f "$dir.err"
  if [ $rc -ne 2 ]; then fail "'$*' exited $rc, expected 2 (stderr: $err)"; return; fi
  if [ -n "$out" ]; then fail "'$*' printed to stdout: $out"; return; fi
  if [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ]; then fail "'$*' printed more than one line: $err"; return; fi
  case "$err" in *"$expected"*) ok "'$*' -> $err";; *) fail "'$*' said '$err', expected '$expected'";; esac
}
v6=(--set dpdk.host_ipv6=$stack_ip6)
bad "dpdk.host_ipv6 is not set" stack ping $kernel_ip6
bad "dpdk.host_ipv6 is not set" stack ping "[$kernel_ip6]"
bad "dpdk.host_ipv6 is not set" stack neigh
bad "dpdk.host_ipv6 is not set" stack send "[$kernel_ip6]:7000" --bytes 10
bad "stack ping: 'ff02::1' is not a unicast IPv6 address" "${v6[@]}" stack ping ff02::1
bad "stack ping: 'fd00::zz' is not an IPv6 address" "${v6[@]}" stack ping fd00::zz
bad "stack neigh: '10.66.6.1' is not an IPv6 address" "${v6[@]}" stack neigh 10.66.6.1
bad "stack arp: 'fd00:67:6::1' is an IPv6 address; IPv6 neighbours are resolved by \`stack neigh" "${v6[@]}" stack arp $kernel_ip6
bad "stack send: '[fd00::1]' has no port" "${v6[@]}" stack send "[fd00::1]" --bytes 10
bad "stack send: '[fd00::1:7000' has no closing ']'" "${v6[@]}" stack send "[fd00::1:7000" --bytes 10
bad "stack send: 'fd00::1:7000': write an IPv6 peer in brackets" "${v6[@]}" stack send fd00::1:7000 --bytes 10
bad "stack send port: '70000' must be a whole number in 1..65535" "${v6[@]}" stack send "[fd00::1]:70000" --bytes 10
# Bad option values: exit 1 with the option and the value named, before the EAL starts.
bad_option() {  # EXPECTED_TEXT ARGS...
  local expected="$1"; shift
  local err rc
  timeout 20 "$tool" --set dpdk.host_ip=$stack_ip --set dpdk.vdev=net_null0 "$@" >/dev/null 2>"$dir.err"
  rc=$?
  err=$(cat "$dir.err"); rm -f "$dir.err"
  case "$err" in *EAL*|*" I pmd: "*) fail "'$*' started the EAL: $err"; return;; esac
  if [ $rc -eq 1 ] && [[ "$err" == *"$expected"* ]]; then ok "'$*' -> $err"; else fail "'$*' (rc $rc) said '$err', expected '$expected'"; fi
}
bad_option "dpdk.ipv6_prefix_length" --set dpdk.ipv6_prefix_length=129 stack ping $kernel_ip6
bad_option "dpdk.host_ipv6: 'ff02::1' is not a unicast address" --set dpdk.host_ipv6=ff02::1 stack ping $kernel_ip6
bad_option "dpdk.host_ipv6: 'fd00::2/64': give the address alone" --set dpdk.host_ipv6=fd00::2/64 stack neigh
bad_option "dpdk.gateway_ipv6: 'fd01::1' is neither link-local" --set dpdk.host_ipv6=fd00::2 --set dpdk.gateway_ipv6=fd01::1 stack neigh

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (creates the tap $tap)"; exit 77; fi
for need in ip ping timeout sysctl; do
  command -v "$need" >/dev/null 2>&1 || { echo "FAIL: $need is not installed (tools/setup.sh installs it)"; exit 1; }
done
[ -x "$py" ] || { echo "FAIL: $py is missing (tools/setup.sh installs python3)"; exit 1; }
[ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }
[ -e /proc/sys/net/ipv6 ] || { echo "SKIP: the kernel has no IPv6"; exit 77; }

server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
  ip link del "$tap" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir"
ip tuntap add dev "$tap" mode tap multi_queue || { echo "FAIL: cannot create the tap $tap"; exit 1; }
# IPv6 may be disabled by default (net.ipv6.conf.default.disable_ipv6): enable it on the tap only.
sysctl -qw "net.ipv6.conf.$tap.disable_ipv6=0" || { echo "FAIL: cannot enable IPv6 on $tap"; exit 1; }
sysctl -qw "net.ipv6.conf.$tap.accept_dad=0" 2>/dev/null
# The tap loses its carrier whenever a run of the tool closes it; without keep_addr_on_down the
# kernel then drops the tap's IPv6 address and route (IPv4 keeps them), and answers from eth0.
sysctl -qw "net.ipv6.conf.$tap.keep_addr_on_down=1" || { echo "FAIL: cannot keep IPv6 addresses on $tap"; exit 1; }
# net_tap gives the kernel's tap the port's MAC, so the kernel's EUI-64 link-local address would be
# the stack's own (RFC 4291 App. A): the kernel answers the stack's DAD probe for it and the stack
# gives IPv6 up (RFC 4862 §5.4.5). No link-local address on the kernel's side (addr_gen_mode=1).
sysctl -qw "net.ipv6.conf.$tap.addr_gen_mode=1" || { echo "FAIL: cannot stop $tap generating a link-local address"; exit 1; }
ip addr add "10.66.6.1/24" dev "$tap" &&
  ip -6 addr add "$kernel_ip6/64" dev "$tap" nodad &&
  ip link set "$tap" up || { echo "FAIL: cannot address $tap"; exit 1; }

cat > "$dir/stack.yaml" <<EOF
ms:
  workers: ${BYPASS_MS_WORKERS:-1}
dpdk:
  vdev:
    - net_tap0,iface=$tap
  host_ip: $stack_ip
  host_ipv6: $stack_ip6
  ipv6_prefix_length: 64
  no_huge: yes       # other DPDK tests may hold the hugepages at the same time
  memory: 256M
  in_memory: true
  link_wait: 5s
EOF
# net_tap gives the stack a new MAC each run: the kernel forgets the last one first.
run() { ip -6 neigh flush dev "$tap" 2>/dev/null; timeout 60 "$tool" -c "$dir/stack.yaml" "$@"; }

# ---- (a) ping from the stack -------------------------------------------------------------------
out=$(run stack ping $kernel_ip6 -c 3 -i 200ms -W 2s 2>"$dir/err"); rc=$?
replies=$(printf '%s\n' "$out" | grep -Ec "^64 bytes from $kernel_ip6: icmp_seq=[123] ttl=64 time=[0-9.]+ ms$")
if [ $rc -eq 0 ] && [ "$replies" -eq 3 ] && printf '%s\n' "$out" | grep -q "3 packets transmitted, 3 received, 0% packet loss"; then
  ok "stack ping $kernel_ip6 -c 3: 3 replies from the kernel"
else
  fail "stack ping $kernel_ip6 -c 3 (rc $rc, $replies replies): $out $(tail -5 "$dir/err")"
fi
out=$(run --json stack ping "[$kernel_ip6]" -c 2 -i 100ms -s 1400 2>/dev/null)
if printf '%s\n' "$out" | $py -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin if l.strip()]
replies = [l for l in lines if l["type"] == "reply"]
assert len(replies) == 2 and all(r["bytes"] == 1408 and r["data_intact"] and r["hop_limit"] == 64 for r in replies), replies
assert lines[-1]["type"] == "summary" and lines[-1]["received"] == 2, lines[-1]
'; then ok "stack --json ping [$kernel_ip6] -s 1400: two intact 1408-byte replies"; else fail "stack --json ping6: $out"; fi
out=$(run stack ping fd00:67:6::99 -c 2 -i 100ms -W 300ms 2>"$dir/err"); rc=$?
if [ $rc -eq 1 ] && printf '%s\n' "$out" | grep -q "2 packets transmitted, 0 received, 100% packet loss"; then
  ok "stack ping to an absent IPv6 host: 100% loss, exit 1"
else
  fail "stack ping to an absent IPv6 host (rc $rc): $out $(tail -3 "$dir/err")"
fi

# ---- (c) neigh -----------------------------------------------------------------------------------
out=$(run stack neigh $kernel_ip6 2>"$dir/err"); rc=$?
# net_tap gives the kernel's tap the port's MAC at start-up, a new one each run: read it after.
kernel_mac=$(cat /sys/class/net/$tap/address)
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -Eq "^  $kernel_ip6 +$kernel_mac +(REACHABLE|STALE) "; then
  ok "stack neigh $kernel_ip6: $kernel_mac $(printf '%s\n' "$out" | grep -Eo "$kernel_mac +[A-Z]+" | head -1 | awk '{print $2}')"
else
  fail "stack neigh (rc $rc, kernel MAC $kernel_mac): $out $(tail -3 "$dir/err")"
fi
# Our own addresses come first with their DAD state (RFC 4862 §5.4): the configured one and the
# link-local one from the MAC, tentative or preferred by now, never duplicated on this link.
own=$(printf '%s\n' "$out" | grep -Ec "^  ($stack_ip6|fe80::[0-9a-f:]+) +(TENTATIVE|PREFERRED) +[0-9]+ DAD solicitations")
if [ "$own" -eq $((2 * ${BYPASS_MS_WORKERS:-1})) ]; then
  ok "stack neigh lists our own addresses with their DAD state ($own lines)"
else
  fail "stack neigh: own addresses and DAD states missing ($own lines): $out"
fi
out=$(run stack neigh fd00:67:6::98 -W 500ms 2>"$dir/err"); rc=$?
if [ $rc -eq 1 ] && grep -q "no Neighbor Advertisement from fd00:67:6::98 within 500ms" "$dir/err"; then
  ok "stack neigh for an absent host: exit 1"
else
  fail "stack neigh for an absent host (rc $rc): $out $(cat "$dir/err")"
fi

# ---- (b) the kernel pings the stack; (c) the server's neighbour cache; (d) counters ------------
"$tool" -c "$dir/stack.yaml" --set "ms.admin_socket=$dir/pmd.asok" stack echo-server 7 >"$dir/server.out" 2>"$dir/server.err" &
server_pid=$!
for _ in $(seq 200); do
  grep -q "ready on $stack_ip" "$dir/server.out" 2>/dev/null && [ -S "$dir/pmd.asok" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.05
done
if ! grep -q "ready on $stack_ip" "$dir/server.out"; then
  fail "echo-server did not start: $(cat "$dir/server.out" "$dir/server.err")"
else
  ip -6 neigh flush dev "$tap" 2>/dev/null  # the kernel resolves us afresh
  kernel_mac=$(cat /sys/class/net/$tap/address)
  if ping -6 -c 3 -i 0.2 -W 2 $stack_ip6 >"$dir/ping.out" 2>&1 && grep -q "3 received" "$dir/ping.out"; then
    ok "kernel ping -6 $stack_ip6: 3 replies from the stack"
  else
    fail "kernel ping -6 $stack_ip6: $(cat "$dir/ping.out")"
  fi
  our_mac=$(ip -6 neigh show $stack_ip6 dev "$tap" | grep -Eo 'lladdr [0-9a-f:]+' | awk '{print $2}')
  [ -n "$our_mac" ] && ok "the kernel resolved $stack_ip6 to $our_mac" || fail "kernel has no neighbour entry for $stack_ip6: $(ip -6 neigh show dev "$tap")"
  # A kernel connection over IPv6 from a long address, held open across the dump below: `conns`
  # must show both endpoints in full, in columns as wide as they are. (Added only now: the kernel
  # would pick it as the source of the ping and Neighbor Discovery above.)
  # The kernel still knows us (from the ping), so the stack resolves the new address itself: the
  # worker the connection's 4-tuple picks solicits it, and the kernel's answer lands on whichever
  # queue the tap's flow hash picks. With two workers that is often the other one, which has no
  # line for the address and hands the advertisement on (the counters below show no packet dropped
  # waiting for resolution: nd_pending_dropped).
  ip -6 addr add "$kernel_long_ip6/64" dev "$tap" nodad || fail "cannot add $kernel_long_ip6 to $tap"
  $py -c 'import socket, sys, time
s = socket.create_connection((sys.argv[1], 7), timeout=5, source_address=(sys.argv[3], 0))
s.sendall(b"hello"); assert s.recv(5) == b"hello"
open(sys.argv[2], "w").close(); time.sleep(4)' "$stack_ip6" "$dir/held" "$kernel_long_ip6" 2>"$dir/held.err" &
  holder_pid=$!
  for _ in $(seq 100); do [ -e "$dir/held" ] && break; sleep 0.05; done
  before=$(wc -l <"$dir/server.out")
  kill -USR1 "$server_pid"
  for _ in $(seq 100); do
    [ "$(tail -n +$((before + 1)) "$dir/server.out" | grep -c '^TCP connections')" -gt 0 ] && break
    sleep 0.05
  done
  dump=$(tail -n +$((before + 1)) "$dir/server.out")
  workers=${BYPASS_MS_WORKERS:-1}
  listed=$(printf '%s\n' "$dump" | grep -Ec "^  $kernel_ip6 +$kernel_mac +(REACHABLE|STALE|DELAY|PROBE) ")
  if [ "$listed" -eq "$workers" ]; then
    ok "SIGUSR1: every worker's neighbour cache ($workers) lists $kernel_ip6 at $kernel_mac"
  else
    fail "SIGUSR1 neighbour caches ($listed of $workers list the kernel): $dump"
  fi
  row=$(printf '%s\n' "$dump" | grep -E "^  \[$stack_ip6\]:7 +\[$kernel_long_ip6\]:[0-9]+ +ESTABLISHED " | head -1)
  header=$(printf '%s\n' "$dump" | grep -E "^  LOCAL +REMOTE +STATE " | head -1)
  if [ -n "$row" ] && [ "$(awk -v h="$header" 'BEGIN { print index(h, " STATE ") }')" = \
                         "$(awk -v r="$row" 'BEGIN { print index(r, " ESTABLISHED ") }')" ]; then
    ok "SIGUSR1: conns shows the kernel's IPv6 connection, columns aligned: $row"
  else
    fail "SIGUSR1: conns without an aligned IPv6 connection ($(cat "$dir/held.err")): $dump"
  fi
  wait "$holder_pid" 2>/dev/null
  ip -6 addr del "$kernel_long_ip6/64" dev "$tap"
  printf '%s\n' "$dump" | grep -Eq "^  $stack_ip6 +[0-9a-f:]{17} +REACHABLE " && ok "our own address is in the cache (for a looped port)" ||
    fail "our own address is missing from the neighbour cache: $dump"
  if "$admin" "$dir/pmd.asok" perf dump >"$dir/perf.json" 2>"$dir/perf.err" && $py - "$dir/perf.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
t = j["transports"][0]
port = t["port"]
for name in ("rx_missed", "rx_errors", "tx_errors", "rx_nombuf"):
    assert port.get(name, 0) == 0, (name, port)
replies = 0
for w in t["workers"]:
    c = w["counters"]
    for name in ("rx_malformed_ipv6", "rx_malformed_icmpv6", "rx_malformed_nd", "nd_pending_dropped",
                 "ipv6_tx_no_route", "rx_malformed_ethernet"):
        assert c.get(name, 0) == 0, (name, c.get(name))
    replies += c.get("icmpv6_echo_replies_sent", 0)
assert replies >= 3, "echo replies sent: %d" % replies
EOF
  then
    ok "counters: no drops, no malformed or unroutable IPv6/ICMPv6/ND, >= 3 echo replies sent"
  else
    fail "counters: $(cat "$dir/perf.err") $(head -c 3000 "$dir/perf.json")"
  fi
  kill -INT "$server_pid"
  for _ in $(seq 200); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$server_pid" 2>/dev/null; then fail "server still running 10 s after SIGINT"; kill -9 "$server_pid"; fi
  wait "$server_pid"; rc=$?
  server_pid=""
  [ $rc -eq 0 ] && ok "server exited 0 on SIGINT" || fail "server exited $rc: $(tail -3 "$dir/server.err")"
fi

# ---- (e) an address another node holds ----------------------------------------------------------
# The kernel's own address as the stack's: the kernel defends it against the stack's DAD probe
# (RFC 4862 §5.4.3), so the stack's start fails with one error naming the option and the kernel's MAC.
# The stack takes a MAC of its own: net_tap gives the kernel's tap the port's, and a Neighbor
# Advertisement from our own MAC is our own looped back (another worker's), no evidence.
out=$(run --set dpdk.host_ipv6=$kernel_ip6 --set dpdk.hw_addr=02:00:00:67:06:02 stack neigh 2>"$dir/err"); rc=$?
kernel_mac=$(cat /sys/class/net/$tap/address)
if [ $rc -eq 1 ] && grep -q "bypass-pmd: dpdk.host_ipv6: $kernel_ip6 is already used by $kernel_mac on the link" "$dir/err"; then
  ok "dpdk.host_ipv6 held by the kernel: start fails naming it and $kernel_mac"
else
  fail "duplicate dpdk.host_ipv6 (rc $rc, kernel MAC $kernel_mac): $out $(tail -3 "$dir/err")"
fi

[ $failures -eq 0 ] && { echo "all stack IPv6 checks passed"; exit 0; }
echo "$failures checks failed"
exit 1
