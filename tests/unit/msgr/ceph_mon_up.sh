#!/bin/bash
# Starts one Ceph monitor (msgr2 only, auth none) on $IP:$PORT (IP defaults to 127.0.0.1; an IPv6
# address such as ::1 makes an IPv6-only monitor, Ceph's ms_bind_ipv6) in $D, in the background.
#   [AUTH=cephx] ceph_mon_up.sh DIR PORT|auto [IP]
# AUTH=cephx requires cephx everywhere; $D/keyring then holds mon. and client.admin (all caps).
# OSD=1 also starts osd.0 (memstore) once the monitor is up; its address is in $D/osd.addr.
# EXTRA_CONF: more [global] lines for ceph.conf ("auth mon ticket ttl = 20").
# Based on shared/notes/ceph-mini-cluster-up.sh, with its own port and directory so several test
# runs and engineers do not collide. "auto" picks a random port below the kernel's ephemeral range
# (so no client socket of a parallel test holds it) and tries another one when it is taken anyway.
# Prints the ceph.conf path; its "mon host" line has the port. Stop with: kill $(cat $D/mon.pid)
set -euo pipefail
D=${1:?dir}; PORT_ARG=${2:?port or auto}; IP=${3:-127.0.0.1}; AUTH=${AUTH:-none}; OSD=${OSD:-0}
EXTRA_CONF=${EXTRA_CONF:-}
# An IPv6 address goes in brackets in a Ceph address, and the daemons bind IPv6 only.
if [[ $IP == *:* ]]; then HOST="[$IP]" FAMILY="ms bind ipv6 = true
ms bind ipv4 = false"; else HOST=$IP FAMILY=""; fi
case "$AUTH" in none|cephx) ;; *) echo "AUTH must be none or cephx, not '$AUTH'" >&2; exit 2;; esac

# Starts the monitor on $PORT; returns 0 once it answers, 2 when it exited (its port was taken).
start_mon() {
  rm -rf "$D"; mkdir -p "$D"/{run,log,mon.a}
  FSID=$(uuidgen)
  cat > "$D/ceph.conf" <<CONF
[global]
fsid = $FSID
mon host = v2:$HOST:$PORT
public addr = $IP
$FAMILY
auth cluster required = $AUTH
auth service required = $AUTH
auth client required = $AUTH
keyring = $D/keyring
ms bind msgr1 = false
ms bind msgr2 = true
run dir = $D/run
admin socket = $D/run/\$cluster-\$name.asok
log file = $D/log/\$cluster-\$name.log
pid file = $D/run/\$cluster-\$name.pid
mon allow pool size one = true
osd pool default size = 1
$EXTRA_CONF
[mon.a]
mon data = $D/mon.a
[osd]
osd objectstore = memstore
osd data = $D/osd.\$id
keyring = $D/osd.\$id/keyring
memstore device bytes = 1073741824
CONF
  C="-c $D/ceph.conf"
  local mkfs_keyring=()
  if [ "$AUTH" = cephx ]; then
    ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null || return 1
    ceph-authtool "$D/keyring" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
      --cap mgr 'allow *' --cap mds 'allow *' >/dev/null || return 1
    mkfs_keyring=(--keyring "$D/keyring")
  fi
  monmaptool --create --fsid "$FSID" --addv a "[v2:$HOST:$PORT]" --set-min-mon-release pacific "$D/monmap" >/dev/null || return 1
  ceph-mon $C --mkfs -i a --monmap "$D/monmap" "${mkfs_keyring[@]}" || return 1
  setsid ceph-mon $C -i a -f > "$D/log/mon.a.out" 2>&1 < /dev/null &
  local pid=$!
  echo "$pid" > "$D/mon.pid"
  for _ in $(seq 1 150); do
    if timeout 5 ceph $C -s >/dev/null 2>&1; then return 0; fi
    kill -0 "$pid" 2>/dev/null || return 2  # it gave up: no point asking it for 13 more minutes
    sleep 0.2
  done
  return 1
}

# osd.0 on memstore, with its own key when AUTH=cephx; waits until the osdmap says it is up.
start_osd() {
  local C="-c $D/ceph.conf" uuid id
  uuid=$(uuidgen)
  id=$(timeout 20 ceph $C osd new "$uuid") || return 1
  mkdir -p "$D/osd.$id"
  if [ "$AUTH" = cephx ]; then
    timeout 20 ceph $C auth get-or-create "osd.$id" mon 'allow profile osd' osd 'allow *' mgr 'allow profile osd' \
      -o "$D/osd.$id/keyring" || return 1
  fi
  ceph-osd $C -i "$id" --mkfs --osd-uuid "$uuid" >/dev/null 2>&1 || return 1
  setsid ceph-osd $C -i "$id" -f > "$D/log/osd.$id.out" 2>&1 < /dev/null &
  echo $! > "$D/osd.pid"
  for _ in $(seq 1 300); do
    local addr
    # "osd.0 up in ... v2:IP:PORT/NONCE v2:IP:PORT/NONCE exists,up UUID": the first is the public address.
    addr=$(timeout 5 ceph $C osd dump 2>/dev/null | grep "^osd\.$id up " | grep -oE 'v2:([0-9.]+|\[[0-9a-f:]+\]):[0-9]+/[0-9]+' | head -1)
    if [ -n "$addr" ]; then echo "$addr" > "$D/osd.addr"; return 0; fi
    sleep 0.2
  done
  return 1
}

ephemeral_low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
span=$((ephemeral_low > 21000 ? ephemeral_low - 20000 : 10000))
for attempt in 1 2 3 4 5; do
  if [ "$PORT_ARG" = auto ]; then PORT=$((20000 + RANDOM % span)); else PORT=$PORT_ARG; fi
  status=0
  start_mon || status=$?
  if [ "$status" = 0 ]; then
    if [ "$OSD" = 1 ] && ! start_osd; then
      echo "osd.0 did not come up; last lines of its output:" >&2
      tail -5 "$D"/log/osd.*.out >&2
      exit 1
    fi
    echo "$D/ceph.conf"
    exit 0
  fi
  if [ "$status" = 2 ] && [ "$PORT_ARG" = auto ] && grep -q "Address already in use" "$D/log/mon.a.out"; then
    echo "port $PORT is taken (attempt $attempt); trying another" >&2
    continue
  fi
  break
done
echo "monitor did not come up on $HOST:$PORT; last lines of its output:" >&2
tail -5 "$D/log/mon.a.out" >&2
exit 1
