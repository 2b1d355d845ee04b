#!/usr/bin/env bash
# The main job: installs what is missing, builds bypass-bench optimised (only what the job needs,
# with progress), and runs the default benchmark (config/examples/default.yaml: 4 KiB request/reply
# over posix and over dpdk on the best link this machine offers, queue depth 1 and 128, about a
# minute), printing the link it chose, progress, a table and the transport comparison.
#   tools/run.sh                                 default job
#   tools/run.sh --set bench.duration=5s --set bench.output=results.json   extra arguments go to bypass-bench
#   tools/run.sh --set bench.dpdk_link=memif     force a link (vhost-user, memif-zero-copy, memif)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BYPASS_RELEASE_BUILD:-build/release}
target=tools/bypass-bench/bypass-bench

tools/setup.sh build
mkdir -p "$root/build"
if [ ! -f "$build/build.ninja" ]; then
  echo "run.sh: configuring $build (release)"
  meson setup "$build" --buildtype=release >"$root/build/meson-release.log" 2>&1 || { tail -30 "$root/build/meson-release.log" >&2; exit 1; }
fi

# ninja's "[done/total]" status: rewritten in place on a terminal, otherwise a line every 15 s;
# everything ninja says goes to the log, and the errors to stderr if the build fails.
log="$build/ninja.log"
started=$(date +%s)
show_progress() {
  local line last_shown=0 status="" now
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    case "$line" in
      \[*/*\]*) status=${line%%]*}] ;;
      *) continue ;;
    esac
    now=$(date +%s)
    if [ -t 1 ]; then
      printf '\rrun.sh: building bypass-bench %s %ds ' "$status" $((now - started))
    elif [ $((now - last_shown)) -ge 15 ]; then
      echo "run.sh: building bypass-bench $status $((now - started))s"
      last_shown=$now
    fi
  done
  [ -t 1 ] && [ -n "$status" ] && printf '\n'
  return 0
}
: >"$log"
echo "run.sh: building $build/$target"
set +e
NINJA_STATUS='[%f/%t] ' ninja -C "$build" "$target" 2>&1 | show_progress
status=${PIPESTATUS[0]}
set -e
if [ "$status" != 0 ]; then
  grep -E 'error' -A3 "$log" | head -60 >&2
  echo "run.sh: build failed (log: $log)" >&2
  exit 1
fi
echo "run.sh: built in $(( $(date +%s) - started )) s"
exec "$build/$target" -c config/examples/default.yaml "$@" run
