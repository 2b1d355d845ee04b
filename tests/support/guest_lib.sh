# Shared by the test scripts that run inside the soft-RoCE guest of tools/rxe-vm (the rdma and
# rsocket suites, flow isolation, fio over rdma): one boot, one meaning of "cannot boot here".
#   run_rxe_guest SECONDS 'COMMAND' [LOG]
#       boots tools/rxe-vm (at most SECONDS, or $RXE_VM_TIMEOUT) to run COMMAND and returns its
#       status; the output is shown, or written to LOG when one is given. When the guest cannot
#       start here (rxe-vm's status 125), prints SKIP with rxe-vm's reason and exits 77 (skip).
#       The checkout is shown to the guest wherever it is (RXE_VM_SHARE: a clone in /tmp too), so
#       the scripts and the guest build's executables are there at their host paths.

guest_lib_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

run_rxe_guest() {
  local seconds=$1 cmd=$2 log=${3-} out rc
  export RXE_VM_SHARE=$guest_lib_root
  out=${log:-$(mktemp)}
  if [ -n "$log" ]; then
    RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-$seconds} "$guest_lib_root/tools/rxe-vm" "$cmd" > "$out" 2>&1
    rc=$?
  else
    RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-$seconds} "$guest_lib_root/tools/rxe-vm" "$cmd" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
  fi
  if [ "$rc" = 125 ]; then
    echo "SKIP: the soft-RoCE guest (tools/rxe-vm) could not start here: $(grep -m1 'rxe-vm:' "$out")"
    [ -n "$log" ] || rm -f "$out"
    exit 77
  fi
  [ -n "$log" ] || rm -f "$out"
  return "$rc"
}
