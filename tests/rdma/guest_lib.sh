# Shared by the meson test wrappers that run inside the soft-RoCE guest (run_in_guest.sh,
# rsocket_in_guest.sh); source it from the source root.
#   run_rxe_guest SECONDS 'COMMAND'   boots tools/rxe-vm (at most SECONDS) to run COMMAND, shows
#                                     its output and exits with its status, or 77 (skip, with the
#                                     reason) when the guest cannot start here

run_rxe_guest() {
  local out rc
  out=$(mktemp)
  RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-$1} tools/rxe-vm "$2" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 125 ]; then
    echo "SKIP: the soft-RoCE guest (tools/rxe-vm) could not start here: $(grep -m1 'rxe-vm:' "$out")"
    rc=77
  fi
  rm -f "$out"
  exit "$rc"
}
