#!/usr/bin/env bash
# The main job: installs what is missing, builds an optimised tree, and runs the default benchmark
# (config/examples/default.yaml: 4 KiB request/reply over posix and over dpdk on net_memif, queue
# depth 1 and 128, about a minute), printing progress, a table and the transport comparison.
#   tools/run.sh                                 default job
#   tools/run.sh --set bench.duration=5s --set bench.output=results.json   extra arguments go to bypass-bench
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BYPASS_RELEASE_BUILD:-build/release}

tools/setup.sh build
mkdir -p "$root/build"
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release >"$root/build/meson-release.log" 2>&1 || { tail -30 "$root/build/meson-release.log" >&2; exit 1; }
fi
echo "run.sh: building $build"
ninja -C "$build" >"$build/ninja.log" 2>&1 || { grep -E 'error' -A3 "$build/ninja.log" | head -60 >&2; echo "run.sh: build failed (log: $build/ninja.log)" >&2; exit 1; }
exec "$build/tools/bypass-bench/bypass-bench" -c config/examples/default.yaml "$@" run
