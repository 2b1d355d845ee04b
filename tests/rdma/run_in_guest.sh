#!/bin/bash
# meson test wrapper (suite 'rdma'): runs the RDMA tests on real verbs inside the soft-RoCE guest
# of tools/rxe-vm — the socket-interface suite with BYPASS_MS_TYPE=rdma, then the rdma-specific
# transport tests, then the messenger suite. Exit 77 (skip) when the guest cannot boot here.
#   run_in_guest.sh SOURCE_ROOT SOCKET_SUITE_EXE RDMA_TRANSPORT_TEST_EXE MESSENGER_SUITE_EXE
set -u
root=$1 socket_suite=$2 transport_test=$3 messenger_suite=$4
cd "$root" || exit 1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The million-message case, scaled down: the emulated guest moves a few thousand messages a second.
messenger_messages=${BYPASS_GUEST_MSGR_MESSAGES:-6400}
# Guest-side command: every executable, each bounded; the first failure is the status.
# The guest is emulated in software (no KVM), so a busy host stalls it for whole seconds: the
# socket suite gets a 1 s transport ACK timeout (~7 s of silence before a QP gives up, instead of
# ~0.5 s) and a 60 s connect timeout, or 2,000 connects and 64 MiB echoes fail on a loaded host.
cmd="set -o pipefail; st=0
echo '== rdma devices'; ibv_devices
echo '== socket suite on rdma'; BYPASS_MS_TYPE=rdma BYPASS_RDMA_ACK_TIMEOUT=1s BYPASS_MS_CONNECT_TIMEOUT=60s timeout 900 '$socket_suite' || st=\$?
echo '== rdma transport tests'; timeout 1200 '$transport_test' || { r=\$?; [ \$st = 0 ] && st=\$r; }
echo '== messenger suite on rdma'; BYPASS_MS_TYPE=rdma BYPASS_RDMA_ACK_TIMEOUT=1s BYPASS_MS_CONNECT_TIMEOUT=60s BYPASS_TEST_MSGR_MESSAGES=$messenger_messages timeout 900 '$messenger_suite' || { r=\$?; [ \$st = 0 ] && st=\$r; }
exit \$st"
RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-2400} "$root/tools/rxe-vm" "$cmd" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ "$rc" = 125 ]; then
  echo "SKIP: the soft-RoCE guest (tools/rxe-vm) could not start here: $(grep -m1 'rxe-vm:' "$out")"
  exit 77
fi
exit "$rc"
