#!/bin/bash
# `bypass-bench ceph-mon-version` over the dpdk transport: the userspace stack (10.79.0.2) reaches a
# real Ceph monitor on the kernel side of a net_tap port (10.79.0.1) and must print the versions
# `ceph mon dump` / `ceph osd dump` report. The tap is created beforehand as a persistent
# multi-queue tap that net_tap attaches to, so the monitor can bind the kernel-side address before
# bypass-bench starts. Needs root; exits 77 when a prerequisite is absent.
# The rate mode then runs over the same path and must write a result file compare can read.
# Args: BYPASS_BENCH CEPH_MON_UP_SH. BYPASS_TEST_TAP and BYPASS_TEST_SUBNET (three octets) rename
# the tap and its /24 so concurrent runs do not collide. BYPASS_TEST_IPV6=1: the monitor binds
# fd00:79::1 on the tap (IPv6 only) and the stack reaches it from dpdk.host_ipv6 fd00:79::2, by
# `--mon v2:[fd00:79::1]:PORT` (the versions only: the rate mode and cephx do not depend on the family).
set -u
source "$(dirname "$0")/../../support/test_lib.sh"
own_network_namespace "$@"  # the tap, its addresses and the monitors' ports meet no other test's
bench="$1"
mon_up="$2"
tap=${BYPASS_TEST_TAP:-bmontap0}
subnet=${BYPASS_TEST_SUBNET:-10.79.0}
kernel_ip=$subnet.1
stack_ip=$subnet.2
ipv6=${BYPASS_TEST_IPV6:-0}
kernel_ip6=fd00:79::1
stack_ip6=fd00:79::2
if [ "$ipv6" = 1 ]; then mon_ip=$kernel_ip6 mon_host="[$kernel_ip6]"; else mon_ip=$kernel_ip mon_host=$kernel_ip; fi

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (creates the tap $tap)"; exit 77; fi
for tool in ip ceph-mon ceph monmaptool; do
  if ! command -v "$tool" >/dev/null 2>&1; then echo "SKIP: $tool is not installed"; exit 77; fi
done
if [ ! -c /dev/net/tun ]; then echo "SKIP: no /dev/net/tun"; exit 77; fi

dir=/tmp/bypass-ceph-mon-tap-$$
cephx_dir=$dir-cephx
stop_mon() {
  if [ -s "$1/mon.pid" ]; then
    pid=$(cat "$1/mon.pid")
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  fi
}
cleanup() {
  stop_mon "$dir"
  stop_mon "$cephx_dir"
  ip link del "$tap" 2>/dev/null
  rm -rf "$dir" "$cephx_dir"
}
trap cleanup EXIT

ip tuntap add dev "$tap" mode tap multi_queue || { echo "FAIL: cannot create the tap $tap"; exit 1; }
ip addr add "$kernel_ip/24" dev "$tap" || { echo "FAIL: cannot address $tap"; exit 1; }
ipv6_sets=()
if [ "$ipv6" = 1 ]; then
  # As stack_ipv6_tap_test.sh: IPv6 on the tap only, no DAD on the kernel's side (its address is
  # usable at once), and no EUI-64 link-local address: net_tap gives the tap the port's MAC, so it
  # would be the stack's own and its Duplicate Address Detection would refuse to start.
  for setting in disable_ipv6=0 accept_dad=0 keep_addr_on_down=1 addr_gen_mode=1; do
    sysctl -qw "net.ipv6.conf.$tap.$setting" || { echo "FAIL: cannot set net.ipv6.conf.$tap.$setting"; exit 1; }
  done
  ip -6 addr add "$kernel_ip6/64" dev "$tap" nodad || { echo "FAIL: cannot add $kernel_ip6 to $tap"; exit 1; }
  ipv6_sets=(--set dpdk.host_ipv6=$stack_ip6)
fi
ip link set "$tap" up || { echo "FAIL: cannot bring $tap up"; exit 1; }

conf=$("$mon_up" "$dir" auto "$mon_ip" 2>&1 | tail -1)
if [ "$conf" != "$dir/ceph.conf" ]; then echo "FAIL: monitor did not start: $conf"; exit 1; fi
port=$(sed -n 's/^mon host = v2:.*:\([0-9]*\)$/\1/p' "$conf")
# Make the osdmap epoch differ from the monmap's, so swapped answers cannot pass.
timeout 20 ceph -c "$conf" osd set noout >/dev/null 2>&1
epoch() { grep -o '"epoch":[0-9]*' | head -1 | cut -d: -f2; }
monmap=$(timeout 20 ceph -c "$conf" mon dump -f json 2>/dev/null | epoch)
osdmap=$(timeout 20 ceph -c "$conf" osd dump -f json 2>/dev/null | epoch)
if [ -z "$monmap" ] || [ -z "$osdmap" ] || [ "$monmap" = "$osdmap" ]; then
  echo "FAIL: ceph reports monmap '$monmap', osdmap '$osdmap' (want two different epochs)"; exit 1
fi

# Frames the kernel received on the tap: proof the probe went through the userspace stack.
rx_before=$(cat "/sys/class/net/$tap/statistics/rx_packets")
auth_sets=()  # --set ms.auth=... for the cephx runs below
dpdk_bench() {
  timeout 90 "$bench" --set ms.type=dpdk --set ms.workers=1 "${auth_sets[@]}" \
    --set "dpdk.vdev=[\"net_tap0,iface=$tap\"]" --set dpdk.host_ip=$stack_ip "${ipv6_sets[@]}" \
    --set dpdk.netmask=255.255.255.0 --set dpdk.no_huge=yes --set dpdk.memory=256M \
    ceph-mon-version --mon "v2:$mon_host:${mon_port:-$port}" --timeout 30s "$@"
}
dpdk_bench >"$dir/out" 2>"$dir/err"
status=$?
rx_after=$(cat "/sys/class/net/$tap/statistics/rx_packets")
echo "bypass-bench exited $status; stdout:"; cat "$dir/out"
want=$(printf 'monmap %s\nosdmap %s' "$monmap" "$osdmap")
if [ "$status" -ne 0 ] || [ "$(cat "$dir/out")" != "$want" ]; then
  echo "FAIL: want exit 0 and:"; echo "$want"; echo "stderr:"; cat "$dir/err"; exit 1
fi
if [ "$rx_after" -le "$rx_before" ]; then
  echo "FAIL: the kernel received no frames on $tap ($rx_before -> $rx_after)"; exit 1
fi
echo "ok: monmap $monmap, osdmap $osdmap over dpdk/net_tap from ${ipv6_sets[*]:-IPv4} ($((rx_after - rx_before)) frames into the kernel)"
if [ "$ipv6" = 1 ]; then echo "PASS: versions over dpdk/net_tap from the stack's IPv6 address to a monitor on $mon_host"; exit 0; fi

# Rate mode: exactly 2000 measured replies with 4 in flight, recorded as a dpdk reqrep case.
dpdk_bench --count 2000 --depth 4 --output "$dir/rate.json" >"$dir/out" 2>"$dir/err"
status=$?
cat "$dir/out"
if [ "$status" -ne 0 ]; then echo "FAIL: rate mode exited $status:"; cat "$dir/err"; exit 1; fi
if ! "$bench" compare "$dir/rate.json" >"$dir/compare" 2>"$dir/err"; then
  echo "FAIL: compare cannot read the rate mode's result:"; cat "$dir/err"; exit 1
fi
cat "$dir/compare"
row() { grep -E "^$1  " "$dir/compare" | sed -E "s|^$1 +||; s| +$||"; }
if [ "$(row transport)" != dpdk ] || [ "$(row mode)" != reqrep ] || [ "$(row 'connections x iodepth')" != "1 x 4" ] ||
   [ "$(row errors)" != 0 ]; then
  echo "FAIL: the result file does not describe a dpdk reqrep run at depth 4 without errors"; exit 1
fi

# cephx: a second monitor that requires it; the admin keyring, in crc and in secure mode.
conf=$(AUTH=cephx "$mon_up" "$cephx_dir" auto "$kernel_ip" 2>&1 | tail -1)
if [ "$conf" != "$cephx_dir/ceph.conf" ]; then echo "FAIL: cephx monitor did not start: $conf"; exit 1; fi
mon_port=$(sed -n 's/^mon host = v2:.*:\([0-9]*\)$/\1/p' "$conf")
timeout 20 ceph -c "$conf" osd set noout >/dev/null 2>&1  # epochs differ, as above
monmap=$(timeout 20 ceph -c "$conf" mon dump -f json 2>/dev/null | epoch)
osdmap=$(timeout 20 ceph -c "$conf" osd dump -f json 2>/dev/null | epoch)
want=$(printf 'monmap %s\nosdmap %s' "$monmap" "$osdmap")
if [ "$monmap" = "$osdmap" ]; then echo "FAIL: cephx monitor: monmap '$monmap', osdmap '$osdmap'"; exit 1; fi
for mode in crc secure; do
  auth_sets=(--set ms.auth=cephx --set "ms.keyring=$cephx_dir/keyring" --set ms.mode=$mode)
  dpdk_bench >"$dir/out" 2>"$dir/err"
  status=$?
  if [ "$status" -ne 0 ] || [ "$(cat "$dir/out")" != "$want" ]; then
    echo "FAIL: cephx $mode: exit $status, want:"; echo "$want"; echo "got:"; cat "$dir/out" "$dir/err"; exit 1
  fi
  echo "ok: cephx in $mode mode over dpdk/net_tap: monmap $monmap, osdmap $osdmap"
done
echo "PASS: versions and request rate over dpdk/net_tap, cephx in crc and secure mode"
