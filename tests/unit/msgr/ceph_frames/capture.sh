#!/bin/bash
# Records the msgr2 frames real Ceph exchanges, for the golden-frame checks (ceph_frames_check.h):
# the ceph CLI (a real Ceph client) talks to a real ceph-mon on loopback while dumpcap records the
# connection, and tshark reassembles each direction of the CLI's first TCP connection into
#   OUT/SCENARIO.client     the bytes the CLI sent (banner, then frames)
#   OUT/SCENARIO.server     the bytes the monitor sent
#   OUT/SCENARIO.endpoints  "client IP:PORT" and "server IP:PORT" of that connection
# Scenarios (all by default):
#   none-crc      auth none, crc mode: HELLO, AUTH_REQUEST / AUTH_DONE, AUTH_SIGNATURE,
#                 CLIENT_IDENT / SERVER_IDENT, then MESSAGE frames
#   cephx-crc     cephx in crc mode: also AUTH_REPLY_MORE / AUTH_REQUEST_MORE
#   cephx-secure  cephx in secure mode: plaintext up to AUTH_DONE, ciphertext after it
#   bad-method    auth none offered to a cephx monitor: AUTH_BAD_METHOD
#
#   capture.sh OUT [SCENARIO...]       starts two monitors of its own (auth none, cephx)
#   NONE_CONF=A CEPHX_CONF=B capture.sh OUT [SCENARIO...]
#                                      uses running monitors (ceph_mon_up.sh's ceph.conf; the cephx
#                                      one's keyring next to it), as the ceph-interop test does
# Re-capture the committed set (tests/unit/msgr/ceph_frames/*.client|server|endpoints) with
#   tests/unit/msgr/ceph_frames/capture.sh tests/unit/msgr/ceph_frames
# Cookies, nonces, ports, global ids, cephx keys and challenges differ from run to run; the checks
# read those from the capture and compare everything else (docs/msgr2-frames.md).
# Exits 77 when it lacks the privilege to capture on lo (dumpcap needs root or CAP_NET_RAW), 1 when
# dumpcap fails for any other reason.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: capture.sh OUT [none-crc|cephx-crc|cephx-secure|bad-method ...]}
shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(none-crc cephx-crc cephx-secure bad-method)
for tool in ceph ceph-mon dumpcap tshark; do
  command -v "$tool" >/dev/null || { echo "capture.sh: $tool is not installed (tools/setup.sh installs it)" >&2; exit 1; }
done
mkdir -p "$out"
work=$(mktemp -d "/tmp/bypass-ceph-frames.$$.XXXXXX")
started=()
cleanup() {
  for d in "${started[@]}"; do
    [ -f "$d/mon.pid" ] && kill "$(cat "$d/mon.pid")" 2>/dev/null || true
  done
  [ -n "${dumpcap_pid:-}" ] && kill "$dumpcap_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Sets NONE_CONF or CEPHX_CONF to a monitor of our own unless the caller gave one.
ensure_mon() {  # AUTH
  local auth=$1 var
  var=$([ "$auth" = none ] && echo NONE_CONF || echo CEPHX_CONF)
  [ -n "${!var:-}" ] && return 0
  AUTH=$auth "$here/../ceph_mon_up.sh" "$work/mon-$auth" auto >/dev/null || { echo "capture.sh: monitor ($auth) did not start" >&2; exit 1; }
  started+=("$work/mon-$auth")
  printf -v "$var" '%s' "$work/mon-$auth/ceph.conf"
}
mon_host() { sed -n 's/^mon host = v2:\(.*\)$/\1/p' "$1"; }  # IP:PORT
mon_port() { mon_host "$1" | sed 's/.*://'; }

# The tcp.stream index of the first connection the capture $1 saw opened (SYN) to port $2; empty
# when there is none. Chosen by its SYN so that the end of an earlier run's connection, when it
# reaches this capture, is not taken for this run's.
first_stream_to() {
  tshark -r "$1" -T fields -e tcp.stream \
    -Y "tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.dstport == $2" 2>/dev/null | head -1 || true
}

# Records one CLI run against the monitor of ceph.conf $1; the rest are the CLI's options.
record() {
  local name=$1 conf=$2
  shift 2
  local pcap=$work/$name.pcapng port
  port=$(mon_port "$conf")
  dumpcap -q -i lo -f "tcp port $port" -w "$pcap" -a duration:30 >"$work/$name.dumpcap" 2>&1 &
  dumpcap_pid=$!
  # Start the CLI only once packets are being recorded. dumpcap prints "Capturing on" BEFORE it
  # opens its packet socket, and "File: PATH" after the socket is bound with the filter attached
  # (strace shows the order): waiting for "Capturing on" let a fast CLI run (bad-method, a few ms)
  # go by unrecorded, an empty capture. Bounded wait; a dumpcap that never gets there is an error.
  local ready=0
  for _ in $(seq 1 200); do
    grep -q "^File: " "$work/$name.dumpcap" && { ready=1; break; }
    if ! kill -0 "$dumpcap_pid" 2>/dev/null; then
      # Only a missing privilege is a reason to skip; dumpcap dying for any other reason (a bad
      # filter, no lo, a full /tmp) is a failure the test must report.
      echo "capture.sh: dumpcap cannot capture on lo: $(tail -1 "$work/$name.dumpcap")" >&2
      grep -qiE "permission|not permitted" "$work/$name.dumpcap" && exit 77
      exit 1
    fi
    sleep 0.1
  done
  [ "$ready" = 1 ] ||
    { echo "capture.sh: $name: dumpcap did not start recording within 20 s: $(tail -1 "$work/$name.dumpcap")" >&2; exit 1; }
  timeout 30 ceph -c /dev/null --no-mon-config -m "v2:$(mon_host "$conf")" --connect-timeout 10 "$@" \
    mon dump >"$work/$name.cli" 2>&1 || true
  # Stop dumpcap only once the file holds the connection's end. libpcap hands dumpcap packets in
  # TPACKET_V3 blocks, which the kernel releases when full or when their timeout (dumpcap's 250 ms
  # read timeout) expires; packets still in an unreleased block when dumpcap is stopped are lost.
  # The fixed 0.2 s wait this replaces lost the whole of a short run (bad-method: an empty capture,
  # "no connection recorded") in about 1 run of 5 on a loaded machine. dumpcap flushes the file
  # about every 0.5 s while packets come. The end: the monitor's FIN, or a reset from either side.
  local stream='' ended=0
  for _ in $(seq 1 40); do
    sleep 0.25
    [ -n "$stream" ] || stream=$(first_stream_to "$pcap" "$port")
    if [ -n "$stream" ] && [ -n "$(tshark -r "$pcap" -T fields -e frame.number \
         -Y "tcp.stream == $stream && (tcp.flags.reset == 1 || (tcp.flags.fin == 1 && tcp.srcport == $port))" \
         2>/dev/null)" ]; then
      ended=1
      break
    fi
  done
  kill -INT "$dumpcap_pid"
  wait "$dumpcap_pid" || true
  dumpcap_pid=
  [ -n "$stream" ] || stream=$(first_stream_to "$pcap" "$port")
  if [ -z "$stream" ]; then
    echo "capture.sh: $name: no connection to port $port recorded; the CLI said:" >&2
    tail -3 "$work/$name.cli" >&2
    exit 1
  fi
  [ "$ended" = 1 ] ||
    { echo "capture.sh: $name: the connection to port $port did not end within 10 s of the CLI's exit" >&2; exit 1; }
  # tshark's "follow" prints that connection's payload as hex, one line per segment; the server's
  # lines (node 1) are indented with a tab.
  tshark -r "$pcap" -q -z "follow,tcp,raw,$stream" 2>/dev/null >"$work/$name.follow"
  grep -E '^Node [01]: ' "$work/$name.follow" | sed -e 's/^Node 0: /client /' -e 's/^Node 1: /server /' \
    >"$out/$name.endpoints"
  grep -q "^server .*:$port\$" "$out/$name.endpoints" ||
    { echo "capture.sh: $name: no connection to port $port recorded; the CLI said:" >&2; tail -3 "$work/$name.cli" >&2; exit 1; }
  sed -n '/^Node 1: /,/^=====/p' "$work/$name.follow" | grep -E '^[0-9a-f]+$' | xxd -r -p >"$out/$name.client"
  sed -n '/^Node 1: /,/^=====/p' "$work/$name.follow" | grep -E $'^\t[0-9a-f]+$' | tr -d '\t' | xxd -r -p \
    >"$out/$name.server"
  echo "$name: client sent $(stat -c %s "$out/$name.client") bytes, monitor sent $(stat -c %s "$out/$name.server")"
}

for scenario in "${scenarios[@]}"; do
  case $scenario in
    none-crc)
      ensure_mon none
      record none-crc "$NONE_CONF" --auth-client-required none --ms-mon-client-mode crc ;;
    cephx-crc | cephx-secure)
      ensure_mon cephx
      record "$scenario" "$CEPHX_CONF" --keyring "$(dirname "$CEPHX_CONF")/keyring" -n client.admin \
        --auth-client-required cephx --ms-mon-client-mode "${scenario#cephx-}" ;;
    bad-method)
      ensure_mon cephx
      record bad-method "$CEPHX_CONF" --auth-client-required none --ms-mon-client-mode crc ;;
    *) echo "capture.sh: unknown scenario '$scenario'" >&2; exit 2 ;;
  esac
done
