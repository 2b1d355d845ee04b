#!/bin/bash
# The admin socket of a running `bypass-bench server` (posix) while a client drives traffic:
# every command answers valid JSON with the expected content; a bad command is exit 1 with a
# clear message; clients that vanish mid-answer, send nothing, or send garbage do not hurt the
# server (it keeps answering and the benchmark finishes clean); a second process cannot take the
# socket; the socket file goes away with the server.
#   admin_socket_test.sh BYPASS_BENCH BYPASS_ADMIN
set -u
bench="$1" admin="$2"
py=/usr/bin/python3
source "$(dirname "$0")/../../tests/support/test_lib.sh"
test_begin admin-test
sock="$work/server.asok"
[ -x "$py" ] || fail "$py is missing"

cat >"$work/job.yaml" <<JOB
ms:
  workers: 2
bench:
  transports: [posix]
  message_size: 4K
  iodepth: 8
  warmup: 0s
  duration: 6s
  progress: log
JOB
"$bench" -c "$work/job.yaml" --set "ms.admin_socket=$sock" server >"$work/server.out" 2>&1 &
server_pid=$!
track "$server_pid"
address=$(wait_for_ready "$work/server.out" "$server_pid") || exit 1
[ -S "$sock" ] || fail "no admin socket at $sock"

"$bench" -c "$work/job.yaml" --set "bench.server_address=$address" --set "ms.admin_socket=$work/client.asok" client \
  >"$work/client.out" 2>&1 &
client_pid=$!
track "$client_pid"

ask() { "$admin" "$sock" "$@" >"$work/answer.json" 2>"$work/answer.err"; }
json_holds() {  # PYTHON-EXPRESSION over j (the answer): true or false
  "$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$work/answer.json" "$1"
}
json_check() {  # PYTHON-EXPRESSION over j (the answer) that must be true
  json_holds "$1" || { cat "$work/answer.json"; echo; fail "answer does not satisfy: $1"; }
}

# The client connects and sends within a second alone, in several on a machine busy with other tests.
traffic='j["messengers"][0]["name"] == "osd.0" and j["messengers"][0]["counters"]["msgs_received"] > 0'
deadline=$((SECONDS + 30))
until ask perf dump && json_holds "$traffic"; do
  [ "$SECONDS" -lt "$deadline" ] ||
    { cat "$work/answer.json" "$work/answer.err"; fail "no messages received within 30 s"; }
  sleep 0.2
done
json_check 'len(j["transports"][0]["workers"]) == 2 and all("counters" in w for w in j["transports"][0]["workers"])'
json_check 'sum(w["counters"]["bytes_received"] for w in j["transports"][0]["workers"]) > 0'
first=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["messengers"][0]["counters"]["msgs_received"])' "$work/answer.json")

ask conns || fail "conns"
json_check 'any(s["state"] == "connected" and s["policy"] == "lossless" for s in j["messengers"][0]["sessions"])'
ask config show || fail "config show"
json_check 'j["ms.admin_socket"].endswith("server.asok") and j["ms.workers"] == 2'
ask config diff || fail "config diff"
json_check 'j["ms.admin_socket"]["origin"] == "--set" and j["ms.admin_socket"]["default"] == "" and j["bench.iodepth"]["origin"].endswith("job.yaml:6:12")'
json_check '"ms.workers" not in j'
ask version || fail "version"
json_check 'len(j["version"].split(".")) == 3'
ask help || fail "help"
json_check 'set(j) == {"help", "version", "perf dump", "conns", "config show", "config diff"}'
# The client's own admin socket answers too (a process with a client messenger).
"$admin" "$work/client.asok" perf dump >"$work/answer.json" || fail "the client's admin socket"
json_check 'j["messengers"][0]["counters"]["msgs_sent"] > 0'

# Bad commands: exit 1 and one clear line.
"$admin" "$sock" perf dumpx >"$work/bad.out" 2>"$work/bad.err"
status=$?
[ "$status" = 1 ] || fail "a bad command exited $status, expected 1"
grep -q "^bypass-admin: unknown command 'perf dumpx'; commands: help, version, perf dump, conns, config show, config diff$" "$work/bad.err" ||
  { cat "$work/bad.err"; fail "unclear error for a bad command"; }
[ ! -s "$work/bad.out" ] || fail "a bad command printed an answer"
"$admin" "$work/nothing-here.asok" version 2>"$work/bad.err"
[ $? = 2 ] && grep -q "cannot connect to $work/nothing-here.asok" "$work/bad.err" || { cat "$work/bad.err"; fail "a missing socket"; }

# Misbehaving clients: reset right after asking (mid-answer), ask and never read, connect and say
# nothing, send a command without its newline, send 10 KB of garbage.
"$py" - "$sock" <<'PY' || fail "misbehaving clients"
import socket, struct, sys, time
path = sys.argv[1]
def client():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s
for _ in range(100):                       # RST while the answer is being written
    s = client()
    s.sendall(b"perf dump\n")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
idle = [client() for _ in range(3)]        # silent clients: dropped after the 2 s read timeout
s = client(); s.sendall(b"conns")          # no newline, then hang up
s.shutdown(socket.SHUT_WR)
assert s.recv(100).startswith(b"error\ncommand not terminated by a newline"), "no error for a command without newline"
s = client(); s.sendall(b"x" * 10000)
reply = s.recv(100)
assert reply.startswith(b"error\ncommand longer than 4096 bytes"), reply
for s in idle:
    s.close()
PY
ask perf dump || fail "perf dump after the misbehaving clients"
json_check "j['messengers'][0]['counters']['msgs_received'] > $first"

# Another process cannot take the socket while this one serves it.
"$bench" -c "$work/job.yaml" --set "ms.admin_socket=$sock" server >"$work/second.out" 2>&1
[ $? != 0 ] && grep -q "ms.admin_socket: '$sock' is in use by another process" "$work/second.out" ||
  { cat "$work/second.out"; fail "a second server on the same admin socket"; }

reap "$client_pid"
status=$?
[ "$status" = 0 ] || { cat "$work/client.out"; fail "the benchmark client exited with $status"; }
stop "$server_pid"
[ ! -e "$sock" ] || fail "the admin socket file outlived the server"
echo "PASS: admin socket"
