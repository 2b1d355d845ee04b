#!/bin/bash
# bypass-pmd doctor through the tool (suite 'tools'): exit status 0 when the configuration can run
# and 1 when not, the table and --json, options after the command, and bad input as one line with
# status 2. This host (hugepages present or not: a tap job runs either way) and fake hosts
# (tests/data/hosts) without hugepages, with an mlx5 RoCE NIC, and none at all. About a second.
#   doctor_cli_test.sh BYPASS_PMD HOSTS_DIR CONFIG_EXAMPLES_DIR
set -u
tool=$1 hosts=$2 examples=$3
fail() { echo "FAIL: $*"; exit 1; }

out=$("$tool" -c "$examples/dpdk-tap.yaml" doctor 2>&1); rc=$?
[ "$rc" = 0 ] || fail "dpdk-tap.yaml on this host: exit $rc, expected 0:"$'\n'"$out"
for check in sysfs hugepages hugetlbfs iommu devices numa queues cores irqbalance eal; do
  grep -Eq "^$check +(OK|WARN|FAIL) " <<<"$out" || fail "no '$check' line:"$'\n'"$out"
done
grep -q '^can run' <<<"$out" || fail "no verdict line:"$'\n'"$out"

json=$("$tool" doctor --json -c "$examples/dpdk-tap.yaml" --root / 2>&1) || fail "--json: exit $?: $json"
/usr/bin/python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
assert r["can_run"] is True and r["transport"] == "dpdk" and r["ms_type"] == "dpdk" and r["root"] == "/", r
assert all(set(c) == {"check", "status", "found", "fix"} for c in r["checks"]), r
' <<<"$json" || fail "--json output: $json"

# No hugepages on the host and dpdk.no_huge=no: cannot run, and the table says how to fix it.
out=$("$tool" doctor --root "$hosts/no-hugepages" --set dpdk.vdev=net_tap0 --set dpdk.no_huge=no 2>&1); rc=$?
[ "$rc" = 1 ] || fail "no hugepages with dpdk.no_huge=no: exit $rc, expected 1:"$'\n'"$out"
grep -Eq '^hugepages +FAIL .*fix: dpdk-hugepages.py --node 0 --reserve 256M$' <<<"$out" || fail "hugepages line:"$'\n'"$out"
grep -Eq '^hugetlbfs +FAIL .*fix: mount -t hugetlbfs nodev /dev/hugepages$' <<<"$out" || fail "hugetlbfs line:"$'\n'"$out"
grep -q '^cannot run: ' <<<"$out" || fail "verdict:"$'\n'"$out"

# RDMA on the mlx5 host: the GID auto choice, and the memlock limit that stops it.
out=$("$tool" doctor --root "$hosts/mlx5-roce" --set ms.type=rdma 2>&1); rc=$?
[ "$rc" = 1 ] || fail "rdma with 64 KiB memlock: exit $rc, expected 1:"$'\n'"$out"
grep -Eq '^rdma gid +OK +rdma.gid_index auto: 3: 192.168.10.5 RoCE v2 on ens1f0np0$' <<<"$out" || fail "gid line:"$'\n'"$out"

# Bad input: one line each.
out=$("$tool" doctor --root /nonexistent-bypass-doctor-root 2>&1); rc=$?
[ "$rc" = 1 ] || fail "unreadable sysfs: exit $rc, expected 1:"$'\n'"$out"
[ "$(grep -c 'FAIL' <<<"$out")" = 1 ] && grep -Eq '^sysfs +FAIL +cannot read the host: /nonexistent-bypass-doctor-root/sys/devices/system/cpu/online: No such file or directory' <<<"$out" ||
  fail "unreadable sysfs is not one clear line:"$'\n'"$out"
for args in "doctor --bogus" "doctor extra" "doctor --root"; do
  out=$("$tool" $args 2>&1); rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <<<"$out")" = 1 ] || fail "'$args': exit $rc, expected 2 and one line:"$'\n'"$out"
done
echo "doctor command line: OK"
