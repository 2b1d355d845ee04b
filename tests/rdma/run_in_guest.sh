#!/bin/bash
# meson test wrapper (suite 'rdma'): runs one part of the RDMA tests on real verbs inside its own
# soft-RoCE guest (tools/rxe-vm), so the parts run side by side on a machine's cores. Each guest
# boots in about 8 s; what costs is the work inside, on a CPU emulated in software.
#   run_in_guest.sh transport SOURCE_ROOT RDMA_TRANSPORT_TEST_EXE
#       the rdma-specific transport tests with a second pair of rxe devices on a veth
#       (tests/rdma/rxe_veth_pair.sh) for the two-device case, in both rdma.connect_modes: with
#       rdma_cm, listening on rxe0's address (RoCE cannot route loopback), the connect/close cycles
#       scaled from 10,000 to 500 (each rdma_cm connection costs the emulated kernel several times more);
#       rdma.gid_index auto on rxe0's own GID table in tcp mode only (the choice does not depend on
#       the connect mode).
#   run_in_guest.sh socket SOURCE_ROOT SOCKET_SUITE_EXE
#       the socket-interface suite with BYPASS_MS_TYPE=rdma in both connect modes, then over IPv6 in
#       both: the TCP side channel over [::1], rdma_cm over an IPv6 address of the rxe netdev (RoCE
#       v2 with an IPv6 GID), leaving out the two bulk cases (2,000 connections, 64 MiB of echo:
#       once connected, a queue pair carries bytes the same whatever family set it up, and IPv4 ran them).
#       The rendezvous tests (RdmaRendezvous.*) are left to the rendezvous part.
#   run_in_guest.sh rendezvous SOURCE_ROOT RDMA_TRANSPORT_TEST_EXE
#       the rendezvous tests of the transport tests (RdmaRendezvous.*: sizes around the threshold
#       and 64 MiB, a registration cache that evicts, peers killed mid-transfer, forged descriptors).
#   run_in_guest.sh messenger SOURCE_ROOT MESSENGER_SUITE_EXE
#       the messenger suite (and part of it again with cephx in secure mode), and over IPv6 ([::1])
#       the sessions that fault and reconnect. It is not repeated in rdma_cm mode: it only uses the
#       socket interface the socket part covers in both modes.
# Exit 77 (skip) when the guest cannot boot here.
set -u
part=$1 root=$2 exe=$3
cd "$root" || exit 1
source tests/support/guest_lib.sh
# The million-message case, scaled down: the emulated guest moves a few thousand messages a second.
messenger_messages=${BYPASS_GUEST_MSGR_MESSAGES:-6400}
# Guest-side command: every executable bounded; the first failure is the status. The guest is
# emulated in software (no KVM), so a busy host stalls it for whole seconds: the suites get a 1 s
# transport ACK timeout (~7 s of silence before a QP gives up, instead of ~0.5 s) and a 60 s connect
# timeout, or 2,000 connects and 64 MiB echoes fail on a loaded host.
prelude="set -o pipefail; st=0
note() { r=\$?; [ \$st = 0 ] && st=\$r; echo \"== failed with status \$r\"; }
echo '== rdma devices'; ibv_devices
slow='BYPASS_MS_TYPE=rdma BYPASS_RDMA_ACK_TIMEOUT=1s BYPASS_MS_CONNECT_TIMEOUT=60s'
cm=\"BYPASS_RDMA_CONNECT_MODE=rdma_cm BYPASS_TEST_ADDR=\$RXE_IP:0\"
tcp='BYPASS_RDMA_CONNECT_MODE=tcp BYPASS_TEST_ADDR=127.0.0.1:0'
"
case $part in
  transport)
    cmd="$prelude
export BYPASS_TEST_RDMA_PAIR=\$('$root/tests/rdma/rxe_veth_pair.sh') || { echo 'rxe_veth_pair.sh failed'; exit 1; }
echo '== rdma transport tests (tcp)'; env \$tcp RDMA_TEST_CYCLES=10000 timeout 1200 '$exe' '--gtest_filter=-RdmaRendezvous.*' || note
echo '== rdma transport tests (rdma_cm)'; env \$cm RDMA_TEST_CYCLES=500 timeout 1200 '$exe' '--gtest_filter=-*TwoDevices*:*GidAuto*:RdmaRendezvous.*' || note
exit \$st" ;;
  rendezvous)
    cmd="$prelude
echo '== rdma rendezvous tests (tcp)'; env \$tcp timeout 500 '$exe' '--gtest_filter=RdmaRendezvous.*' || note
exit \$st" ;;
  socket)
    cmd="$prelude
echo '== socket suite on rdma (tcp)'; env \$slow \$tcp timeout 900 '$exe' || note
echo '== socket suite on rdma (rdma_cm)'; env \$slow \$cm timeout 900 '$exe' || note
ip -6 addr add fd77::1/64 dev \$RXE_NETDEV nodad || note
v6_filter='--gtest_filter=-*TwoThousandConcurrentConnections*:*Echo64MiB*'
echo '== socket suite on rdma over IPv6 (tcp)'; env \$slow BYPASS_RDMA_CONNECT_MODE=tcp BYPASS_TEST_ADDR='[::1]:0' \\
  timeout 600 '$exe' \"\$v6_filter\" || note
echo '== socket suite on rdma over IPv6 (rdma_cm)'; env \$slow BYPASS_RDMA_CONNECT_MODE=rdma_cm \\
  BYPASS_TEST_ADDR='[fd77::1]:0' timeout 600 '$exe' \"\$v6_filter\" || note
exit \$st" ;;
  messenger)
    cmd="$prelude
echo '== messenger suite on rdma (tcp)'; env \$slow \$tcp BYPASS_TEST_MSGR_MESSAGES=$messenger_messages timeout 900 '$exe' || note
echo '== messenger suite on rdma, cephx secure mode (tcp)'; env \$slow \$tcp BYPASS_TEST_MSGR_AUTH=cephx-secure \\
  timeout 600 '$exe' '--gtest_filter=*Lossless*:*Lossy*:*Cephx*' || note
echo '== messenger suite on rdma over IPv6 (tcp, sessions that fault and reconnect)'; env \$slow \\
  BYPASS_RDMA_CONNECT_MODE=tcp BYPASS_TEST_ADDR='[::1]:0' BYPASS_TEST_MSGR_MESSAGES=$messenger_messages \\
  timeout 900 '$exe' '--gtest_filter=*Lossless*:*Lossy*:*Garbage*' || note
exit \$st" ;;
  *) echo "run_in_guest.sh: unknown part '$part' (transport, rendezvous, socket or messenger)" >&2; exit 2 ;;
esac
run_rxe_guest 2400 "$cmd"
exit $?
