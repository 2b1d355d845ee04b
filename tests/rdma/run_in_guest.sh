#!/bin/bash
# meson test wrapper (suite 'rdma'): runs the RDMA tests on real verbs inside the soft-RoCE guest
# of tools/rxe-vm — the socket-interface suite with BYPASS_MS_TYPE=rdma, then the rdma-specific
# transport tests (with a second pair of rxe devices on a veth, tests/rdma/rxe_veth_pair.sh, for
# the two-device case, in both connect modes), then the messenger suite (and part of it again with
# cephx in secure mode); then, with
# rdma.connect_mode=rdma_cm and listening on rxe0's address (RoCE cannot route loopback), the
# socket suite and the transport tests again, the connect/close cycles scaled from 10,000 to 500;
# then the socket suite over IPv6 in both connect modes and part of the messenger suite over IPv6.
# The rendezvous tests (RdmaRendezvous.*) run in a guest of their own: rendezvous_in_guest.sh.
# The transport tests include rdma.gid_index auto on rxe0's own GID table (tcp mode only: the
# choice does not depend on the connect mode).
# The messenger suite is not repeated in rdma_cm mode: it only uses the socket interface the
# socket suite covers, and would add about a minute (more on a busy host).
# Exit 77 (skip) when the guest cannot boot here.
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
note() { r=\$?; [ \$st = 0 ] && st=\$r; echo \"== failed with status \$r\"; }
export BYPASS_TEST_RDMA_PAIR=\$('$root/tests/rdma/rxe_veth_pair.sh') || { echo 'rxe_veth_pair.sh failed'; exit 1; }
echo '== rdma devices'; ibv_devices
slow='BYPASS_MS_TYPE=rdma BYPASS_RDMA_ACK_TIMEOUT=1s BYPASS_MS_CONNECT_TIMEOUT=60s'
for mode in tcp rdma_cm; do
  if [ \$mode = tcp ]; then addr=127.0.0.1:0 cycles=10000; else addr=\$RXE_IP:0 cycles=500; fi
  m=\"BYPASS_RDMA_CONNECT_MODE=\$mode BYPASS_TEST_ADDR=\$addr\"
  echo \"== socket suite on rdma (\$mode)\"; env \$slow \$m timeout 900 '$socket_suite' || note
  echo \"== rdma transport tests (\$mode)\"; env \$m RDMA_TEST_CYCLES=\$cycles timeout 1200 '$transport_test' \\
    \"--gtest_filter=\$([ \$mode = tcp ] && echo '-RdmaRendezvous.*' || echo '-*TwoDevices*:*GidAuto*:RdmaRendezvous.*')\" || note
  [ \$mode = tcp ] || continue
  echo \"== messenger suite on rdma (\$mode)\"; env \$slow \$m BYPASS_TEST_MSGR_MESSAGES=$messenger_messages timeout 900 '$messenger_suite' || note
  echo \"== messenger suite on rdma, cephx secure mode (\$mode)\"; env \$slow \$m BYPASS_TEST_MSGR_AUTH=cephx-secure \\
    timeout 600 '$messenger_suite' '--gtest_filter=*Lossless*:*Lossy*:*Cephx*' || note
done
# IPv6: the TCP side channel over [::1], rdma_cm over an IPv6 address of the rxe netdev (RoCE v2
# with an IPv6 GID), and the messenger's sessions that fault and reconnect over [::1] (the rest of
# its suite adds nothing address-specific and a minute of the emulated guest). The socket suite
# leaves out its two bulk cases (2,000 connections, 64 MiB of echo: ~35 s each run): once connected,
# a queue pair carries bytes the same whatever family set it up, and IPv4 ran them above.
ip -6 addr add fd77::1/64 dev \$RXE_NETDEV nodad || note
v6_filter='--gtest_filter=-*TwoThousandConcurrentConnections*:*Echo64MiB*'
echo '== socket suite on rdma over IPv6 (tcp)'; env \$slow BYPASS_RDMA_CONNECT_MODE=tcp BYPASS_TEST_ADDR='[::1]:0' \\
  timeout 600 '$socket_suite' \"\$v6_filter\" || note
echo '== socket suite on rdma over IPv6 (rdma_cm)'; env \$slow BYPASS_RDMA_CONNECT_MODE=rdma_cm \\
  BYPASS_TEST_ADDR='[fd77::1]:0' timeout 600 '$socket_suite' \"\$v6_filter\" || note
echo '== messenger suite on rdma over IPv6 (tcp, sessions that fault and reconnect)'; env \$slow \\
  BYPASS_RDMA_CONNECT_MODE=tcp BYPASS_TEST_ADDR='[::1]:0' BYPASS_TEST_MSGR_MESSAGES=$messenger_messages \\
  timeout 900 '$messenger_suite' '--gtest_filter=*Lossless*:*Lossy*:*Garbage*' || note
exit \$st"
RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-2400} "$root/tools/rxe-vm" "$cmd" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ "$rc" = 125 ]; then
  echo "SKIP: the soft-RoCE guest (tools/rxe-vm) could not start here: $(grep -m1 'rxe-vm:' "$out")"
  exit 77
fi
exit "$rc"
