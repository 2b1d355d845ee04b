#!/bin/bash
# The systemd unit of docs/deployment.md (suite 'tools'): systemd-analyze verify accepts it without
# a single warning (an unknown key is only a warning there), its CPUAffinity= is the job's ms.cpus,
# and the job it runs passes bypass-pmd doctor on a host of the kind it is written for (the fake
# two-node host of tests/data/hosts, its NIC on vfio-pci on node 1). About a second.
#   unit_test.sh EXAMPLES_SYSTEMD_DIR BYPASS_BENCH BYPASS_PMD HOSTS_DIR
set -u
dir=$1 bench=$(realpath "$2") pmd=$(realpath "$3") hosts=$4
fail() { echo "FAIL: $*"; exit 1; }
unit=$dir/bypass-bench-server.service job=$dir/bench-server.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# verify checks that ExecStart= programs exist: point them at this build's.
sed -e "s|/usr/local/bin/bypass-bench |$bench |; s|/usr/local/bin/bypass-pmd |$pmd |" "$unit" > "$tmp/bypass-bench-server.service"
grep -q "^ExecStart=$bench " "$tmp/bypass-bench-server.service" && grep -q "^ExecStartPre=$pmd " "$tmp/bypass-bench-server.service" ||
  fail "ExecStart=/ExecStartPre= do not run /usr/local/bin/bypass-bench and bypass-pmd"
if command -v systemd-analyze >/dev/null; then
  out=$(systemd-analyze verify "$tmp/bypass-bench-server.service" 2>&1) || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify warns: $out"
else
  # No systemd here: at least every line is a comment, a [Section] or Key=Value.
  bad=$(grep -Ev '^(#.*|\[(Unit|Service|Install)\]|[A-Za-z]+=.*|)$' "$unit") && fail "lines that are not unit syntax: $bad"
fi

affinity=$(sed -n 's/^CPUAffinity=//p' "$unit")
report=$("$pmd" -c "$job" doctor --json --root "$hosts/two-node" 2>&1) || fail "bypass-pmd doctor on the job: $report"
check=$(cat <<'PY'
import json, sys
report = json.loads(sys.stdin.read())
checks = {c["check"]: c for c in report["checks"]}
cpus = [int(c) for c in sys.argv[1].split()]
text = ",".join(str(c) for c in cpus) if len(cpus) < 2 or cpus != list(range(cpus[0], cpus[-1] + 1)) else f"{cpus[0]}-{cpus[-1]}"
assert report["can_run"], "cannot run"
assert checks["device 0000:81:00.0"]["found"].startswith("vfio-pci"), checks["device 0000:81:00.0"]
assert checks["cores"]["status"] == "OK" and checks["cores"]["found"].startswith(f"ms.cpus {text} isolated"), \
    f"CPUAffinity={sys.argv[1]} is not the job's isolated ms.cpus: {checks['cores']}"
assert checks["numa"]["status"] == "OK", checks["numa"]
PY
)
/usr/bin/python3 -c "$check" "$affinity" <<<"$report" || fail "the job on the two-node host it is written for:"$'\n'"$report"
echo "systemd unit: OK"
