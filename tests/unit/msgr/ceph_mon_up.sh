#!/bin/bash
# Starts one Ceph monitor (msgr2 only, auth none) on $IP:$PORT (IP defaults to 127.0.0.1) in $D,
# in the background.
# Based on shared/notes/ceph-mini-cluster-up.sh, with its own port and directory so several test
# runs and engineers do not collide. Prints the ceph.conf path. Stop with: kill $(cat $D/mon.pid)
set -euo pipefail
D=${1:?dir}; PORT=${2:?port}; IP=${3:-127.0.0.1}
rm -rf "$D"; mkdir -p "$D"/{run,log,mon.a}
FSID=$(uuidgen)
cat > "$D/ceph.conf" <<CONF
[global]
fsid = $FSID
mon host = v2:$IP:$PORT
public addr = $IP
auth cluster required = none
auth service required = none
auth client required = none
ms bind msgr1 = false
ms bind msgr2 = true
run dir = $D/run
admin socket = $D/run/\$cluster-\$name.asok
log file = $D/log/\$cluster-\$name.log
pid file = $D/run/\$cluster-\$name.pid
mon allow pool size one = true
[mon.a]
mon data = $D/mon.a
CONF
C="-c $D/ceph.conf"
monmaptool --create --fsid "$FSID" --addv a "[v2:$IP:$PORT]" --set-min-mon-release pacific "$D/monmap" >/dev/null
ceph-mon $C --mkfs -i a --monmap "$D/monmap"
setsid ceph-mon $C -i a -f > "$D/log/mon.a.out" 2>&1 < /dev/null &
echo $! > "$D/mon.pid"
for i in $(seq 1 150); do
  if timeout 5 ceph $C -s >/dev/null 2>&1; then echo "$D/ceph.conf"; exit 0; fi
  sleep 0.2
done
echo "monitor did not come up; see $D/log" >&2
exit 1
