#!/bin/bash
# The installed package, as an application sees it: `meson install` into a temporary DESTDIR, the
# examples built out of tree with plain c++ and nothing but `pkg-config --cflags --libs bypass`,
# then run over one transport:
#   posix: socket_echo on loopback, reqrep_server + reqrep_client (2000 checked requests);
#   dpdk:  socket_echo on a looped net_ring (the stack talks to itself), reqrep_server and
#          reqrep_client as two DPDK processes over net_memif.
#   embed_test.sh BUILD_DIR EXAMPLES_DIR SANITIZE(none|address,undefined) posix|dpdk
set -u
build="$1" examples="$2" sanitize="$3" transport="$4"
work=$(mktemp -d /tmp/bypass-embed-test-XXXXXX)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

if [ "$transport" = dpdk ] && [ "$(id -u)" != 0 ]; then fail "the dpdk run needs root (DPDK memory and memif)"; fi

# 1. Install.
meson install -C "$build" --no-rebuild --quiet --destdir "$work/root" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "meson install"; }
pcfile=$(find "$work/root" -name bypass.pc | head -1)
[ -n "$pcfile" ] || fail "no bypass.pc installed"
export PKG_CONFIG_PATH=$(dirname "$pcfile")
cflags=$(pkg-config --cflags bypass) && libs=$(pkg-config --libs bypass) || fail "pkg-config cannot read bypass.pc"
libdir=$(pkg-config --variable=libdir bypass)
includedir=$(pkg-config --variable=includedir bypass)
[ -f "$includedir/bypass/msgr/messenger.h" ] || fail "no <bypass/msgr/messenger.h> under $includedir"
ls "$libdir"/libbypass.so.* >/dev/null 2>&1 || fail "no versioned libbypass.so in $libdir"
[ -f "$libdir/libbypass.a" ] || fail "no libbypass.a in $libdir"
readelf -d "$libdir/libbypass.so" | grep -q 'SONAME.*libbypass\.so\.[0-9]' || fail "libbypass.so has no versioned soname"
nm -C --defined-only "$libdir/libbypass.a" 2>/dev/null | grep -q 'bypass::msgr::Messenger::create' ||
  fail "libbypass.a does not define Messenger::create"
# The public headers and flags do not drag DPDK, verbs or yaml-cpp into the application.
if grep -rlE '#include [<"](rte_|infiniband/|rdma/|yaml-cpp)' "$includedir/bypass"; then fail "a public header includes DPDK/verbs/yaml-cpp"; fi
case "$cflags" in *rte_config*|*dpdk*|*-march*) fail "pkg-config --cflags bypass leaks DPDK flags: $cflags" ;; esac
[ -x "$(dirname "$libdir")/../bin/bypass-admin" ] || [ -x "$work/root$(pkg-config --variable=prefix bypass | sed "s|^$work/root||")/bin/bypass-admin" ] ||
  find "$work/root" -name bypass-admin -perm -u+x | grep -q . || fail "bypass-admin is not installed"

# 2. Build the examples out of tree: one c++ command each, flags from pkg-config only (plus the
# sanitizers the library was built with: an ASan library needs the ASan runtime in the program).
extra=()
[ "$sanitize" != none ] && [ -n "$sanitize" ] && extra=(-fsanitize="$sanitize")
for example in reqrep_server reqrep_client socket_echo; do
  c++ -std=c++20 -Wall -Wextra -Werror -O1 "${extra[@]}" -o "$work/$example" "$examples/$example.cc" \
      $cflags $libs -Wl,-rpath,"$libdir" 2>"$work/$example.build" || { cat "$work/$example.build"; fail "building $example"; }
done
echo "built the examples against $pcfile"

# 3. Run them.
export BYPASS_LOG=warn
dpdk_common=(--set dpdk.no_huge=yes --set dpdk.memory=256M --set dpdk.in_memory=true --set dpdk.rss=false
             --set dpdk.link_wait=30s --set dpdk.netmask=255.255.255.0 --set ms.workers=1)
net=$(( $$ % 250 ))
if [ "$transport" = posix ]; then
  echo_args=(127.0.0.1:0 1M); server_args=(127.0.0.1:0); client_args=()
else
  echo_args=(--set ms.type=dpdk --set dpdk.vdev=net_ring0 --set dpdk.host_ip=10.94.$net.1 "${dpdk_common[@]}"
             10.94.$net.1:0 1M)
  sock="/run/bypass-embed-test-$$.sock"
  server_args=(--set ms.type=dpdk --set "dpdk.vdev=[\"net_memif0,role=server,socket=$sock\"]" --set dpdk.host_ip=10.93.$net.1
               --set ms.cpus=1 "${dpdk_common[@]}" 10.93.$net.1:7000)
  client_args=(--set ms.type=dpdk --set "dpdk.vdev=[\"net_memif0,role=client,socket=$sock\"]" --set dpdk.host_ip=10.93.$net.2
               --set ms.cpus=0 "${dpdk_common[@]}")
fi

timeout 120 "$work/socket_echo" "${echo_args[@]}" >"$work/echo.out" 2>&1 || { cat "$work/echo.out"; fail "socket_echo over $transport"; }
cat "$work/echo.out"
grep -q "^echoed 1048576 bytes" "$work/echo.out" || fail "socket_echo did not echo 1 MiB"

"$work/reqrep_server" "${server_args[@]}" >"$work/server.out" 2>&1 &
server_pid=$!
if [ "$transport" = dpdk ]; then
  # A memif link comes up only once both processes run, so the client starts at once, on the
  # server's fixed address (its own userspace stack: no port can be taken); the lossless client
  # reconnects until the server listens.
  address=10.93.$net.1:7000
  # The memif client needs the server's socket (abstract: listed in /proc/net/unix, no file).
  for _ in $(seq 1 300); do
    grep -q "$sock" /proc/net/unix && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q "$sock" /proc/net/unix || { cat "$work/server.out"; fail "reqrep_server did not open its memif socket"; }
else
  for _ in $(seq 1 600); do
    grep -q '^ready ' "$work/server.out" && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  address=$(awk '/^ready /{print $2; exit}' "$work/server.out")
  [ -n "$address" ] || { cat "$work/server.out"; fail "reqrep_server did not become ready"; }
fi
timeout 120 "$work/reqrep_client" "${client_args[@]}" "$address" 2000 16 4096 >"$work/client.out" 2>&1
status=$?
cat "$work/client.out"
kill -TERM "$server_pid"
wait "$server_pid"
server_status=$?
server_pid=""
cat "$work/server.out"
[ "$status" = 0 ] || fail "reqrep_client exited with $status over $transport"
grep -q "^2000 of 2000 replies .* 0 wrong" "$work/client.out" || fail "the client did not get 2000 right replies"
[ "$server_status" = 0 ] || fail "reqrep_server exited with $server_status"
grep -q "^answered 2000 requests" "$work/server.out" || fail "the server did not answer 2000 requests"
echo "PASS: the installed package builds and runs the examples over $transport"
