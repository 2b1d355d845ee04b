#!/usr/bin/env bash
# Runs a libFuzzer binary for a bounded time from a read-only seed corpus; exits non-zero on any
# crash, leak, per-input timeout or memory blow-up, and then says which input did it.
#
#   run_libfuzzer.sh FUZZER SEED_CORPUS WORK_DIR SECONDS
#
# New interesting inputs go to WORK_DIR/corpus (emptied first, so every run starts from the same
# seeds), failing inputs to WORK_DIR/artifacts. BYPASS_FUZZ_SECONDS overrides SECONDS.
set -uo pipefail
[ $# -eq 4 ] || { echo "usage: $0 FUZZER SEED_CORPUS WORK_DIR SECONDS" >&2; exit 2; }
fuzzer=$1 seeds=$2 work=$3 seconds=${BYPASS_FUZZ_SECONDS:-$4}

rm -rf "$work/corpus" "$work/artifacts"
mkdir -p "$work/corpus" "$work/artifacts"
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds"
status=$?
if [ $status -ne 0 ]; then
  echo "run_libfuzzer: $fuzzer failed (exit $status); failing inputs:" >&2
  ls -l "$work/artifacts" >&2
  echo "reproduce with: $fuzzer <input>; keep it as a regression seed in $seeds" >&2
fi
exit $status
