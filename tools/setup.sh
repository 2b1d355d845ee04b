#!/usr/bin/env bash
# Installs what Bypass needs from Debian's packages (idempotent, quiet) and prepares hugepages.
#
#   tools/setup.sh build   what building and the main job need (Debian's fio and the headers of it the fio
#                          engine is built against: tools/fio/prepare-headers.sh)
#   tools/setup.sh test    the above plus every test suite's prerequisites (tap/netns tools, scapy, tshark,
#                          Ceph for interop, qemu + a Debian kernel for the soft-RoCE VM, clang 14 + its
#                          libFuzzer runtime for the msgr-libfuzzer test, valgrind for benchmarks, doxygen for
#                          the docs target, prometheus + promtool for the /metrics test)
#   tools/setup.sh bench   the build profile plus the profilers the benchmark scripts run on demand (linux-perf
#                          for PROFILE=1 and ratio-ceiling.sh, valgrind for the cachegrind/callgrind scripts)
#
# Prints one line per action; exits non-zero if a package cannot be installed.
set -euo pipefail

profile=${1:-build}
case "$profile" in build|test|bench) ;; *) echo "usage: $0 build|test|bench" >&2; exit 2 ;; esac

build_packages=(
  g++ meson ninja-build pkg-config
  libdpdk-dev dpdk libyaml-cpp-dev nlohmann-json3-dev libisal-dev libibverbs-dev librdmacm-dev
  libedit-dev libssl-dev libgtest-dev libpcap-dev
  # the fio engine: Debian's fio, dpkg-source for apt-get source, and the -dev packages whose
  # presence decides fio's struct layout (tools/fio/prepare-headers.sh checks them)
  fio dpkg-dev libaio-dev libnuma-dev zlib1g-dev
)
test_packages=(
  dpdk-dev iproute2 iputils-ping ethtool nftables tshark python3-scapy iperf3 sockperf
  ceph-mon ceph-osd ceph-common uuid-runtime bc
  qemu-system-x86 linux-image-amd64 busybox-static kmod rdma-core ibverbs-providers ibverbs-utils
  rdmacm-utils
  clang-14 libclang-rt-14-dev valgrind
  doxygen prometheus
)
bench_packages=(linux-perf valgrind)

packages=("${build_packages[@]}")
[ "$profile" = test ] && packages+=("${test_packages[@]}")
[ "$profile" = bench ] && packages+=("${bench_packages[@]}")

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "setup: need root for: $*" >&2; return 1; fi
}

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
  # tshark asks whether non-root users may capture; answer once, non-interactively.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | as_root debconf-set-selections
  log=$(mktemp)
  if ! { as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq \
           --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -20 "$log" >&2
    echo "setup: apt-get failed installing: ${missing[*]} (full log: $log)" >&2
    exit 1
  fi
  rm -f "$log"
else
  echo "setup: all ${#packages[@]} Debian packages present"
fi

# The fio engine's headers: fio's own source, configured as Debian's fio was (tools/fio/prepare-headers.sh).
as_root "$(dirname "$0")/fio/prepare-headers.sh"

# Hugepages: DPDK runs faster with them; every DPDK tool falls back to --no-huge without.
want_pages=${BYPASS_HUGEPAGES:-512}
nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ ! -e "$nr" ]; then
  echo "setup: this kernel offers no 2 MiB hugepages; DPDK will run with --no-huge"
else
  have=$(cat "$nr" 2>/dev/null || echo 0)
  if [ "$have" -lt "$want_pages" ]; then
    echo "$want_pages" | as_root tee "$nr" >/dev/null 2>&1 || true
    have=$(cat "$nr" 2>/dev/null || echo 0)
  fi
  if ! mountpoint -q /dev/hugepages; then
    { as_root mkdir -p /dev/hugepages && as_root mount -t hugetlbfs nodev /dev/hugepages; } >/dev/null 2>&1 || true
  fi
  if [ "$have" -gt 0 ] && mountpoint -q /dev/hugepages; then
    echo "setup: hugepages: $have x 2 MiB mounted at /dev/hugepages"
  else
    echo "setup: hugepages unavailable here (kernel granted $have, /dev/hugepages $(mountpoint -q /dev/hugepages && echo mounted || echo not mounted)); DPDK will run with --no-huge"
  fi
fi
