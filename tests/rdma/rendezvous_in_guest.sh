#!/bin/bash
# meson test wrapper (suite 'rdma'): the rendezvous tests (RdmaRendezvous.* of rdma_transport_test:
# sizes around the threshold and 64 MiB, a registration cache that evicts, peers killed
# mid-transfer, forged descriptors) in a soft-RoCE guest of their own (tools/rxe-vm), so they run
# beside run_in_guest.sh's longer run. Exit 77 (skip) when the guest cannot boot here.
#   rendezvous_in_guest.sh SOURCE_ROOT RDMA_TRANSPORT_TEST_EXE
set -u
root=$1 transport_test=$2
cd "$root" || exit 1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-600} "$root/tools/rxe-vm" "BYPASS_RDMA_CONNECT_MODE=tcp BYPASS_TEST_ADDR=127.0.0.1:0 \
  timeout 500 '$transport_test' '--gtest_filter=RdmaRendezvous.*'" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ "$rc" = 125 ]; then
  echo "SKIP: the soft-RoCE guest (tools/rxe-vm) could not start here: $(grep -m1 'rxe-vm:' "$out")"
  exit 77
fi
exit "$rc"
