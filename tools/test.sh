#!/usr/bin/env bash
# The test command: installs what is missing, builds with ASan+UBSan and -Werror, runs every suite,
# and ends with one line "N passed, N failed[, N skipped]" (skipped tests are listed with their reason)
# after the time each phase and each suite took.
# The soft-RoCE guest's suites run executables from a second build without sanitizers (build/guest,
# only the executables they name; meson.build says why).
#
#   tools/test.sh                 every suite
#   tools/test.sh --suite posix   extra arguments go to `meson test` (e.g. --suite, a test name)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BYPASS_TEST_BUILD:-build/test}

fail_early() { echo "test.sh: $1" >&2; echo "0 passed, 1 failed"; exit 1; }

started=$(date +%s)
phase_started=$started
phase_times=""
phase_done() {  # remembers how long the phase just finished took, for the summary at the end
  local now; now=$(date +%s)
  phase_times="$phase_times$1=$((now - phase_started)) "
  phase_started=$now
}

tools/setup.sh test || fail_early "setup failed (see above)"
phase_done setup

mkdir -p "$root/build"
guest=$root/build/guest
# -Dfuzz=true adds the msgr-libfuzzer test: clang (installed by setup.sh) builds just the msgr wire
# layer with libFuzzer inside this gcc build (tests/unit/msgr/meson.build).
# -g1 (line tables and function names: what sanitizer reports and perf need, no variable info)
# after debugoptimized's -g: it halves the compile time of this C++ (bench_client.cc: 30 s -> 12 s),
# which is most of a fresh checkout's run.
# -Dguest_build: the soft-RoCE guest runs its executables from a second build without sanitizers
# (meson.build says why), made below.
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=debugoptimized -Dcpp_args=-g1 -Dc_args=-g1 -Db_sanitize=address,undefined -Db_lundef=false \
    -Dwerror=true -Dfuzz=true -Dguest_build="$guest" >"$root/build/meson-setup.log" 2>&1 || { tail -30 "$root/build/meson-setup.log" >&2; fail_early "meson setup failed"; }
elif ! python3 -c 'import json, sys; o = {o["name"]: o["value"] for o in json.load(open(sys.argv[1]))}; sys.exit(not (o.get("fuzz") is True and o.get("guest_build") == sys.argv[2]))' \
       "$build/meson-info/intro-buildoptions.json" "$guest" 2>/dev/null; then
  meson configure "$build" -Dfuzz=true -Dguest_build="$guest" >"$root/build/meson-setup.log" 2>&1 || { tail -30 "$root/build/meson-setup.log" >&2; fail_early "meson configure -Dfuzz=true -Dguest_build=$guest failed"; }
fi
echo "test.sh: building $build (ASan+UBSan, -Werror)"
ninja -C "$build" >"$build/ninja.log" 2>&1 || { grep -E 'error|Error' -A3 "$build/ninja.log" | head -60 >&2; fail_early "build failed (full log: $build/ninja.log)"; }
phase_done build

# The guest's executables: those the tests name under $guest, built there without sanitizers
# (assertions stay on: debugoptimized keeps them).
guest_targets=$(meson introspect "$build" --tests | python3 -c '
import json, sys
prefix = sys.argv[1].rstrip("/") + "/"
targets = {arg[len(prefix):] for test in json.load(sys.stdin) for arg in test["cmd"] if arg.startswith(prefix)}
print(" ".join(sorted(targets)))' "$guest") || fail_early "meson introspect --tests failed"
if [ -n "$guest_targets" ]; then
  if [ ! -f "$guest/build.ninja" ]; then
    meson setup "$guest" --buildtype=debugoptimized -Dcpp_args=-g1 -Dc_args=-g1 -Db_sanitize=none -Dwerror=true \
      >"$root/build/meson-setup-guest.log" 2>&1 || { tail -30 "$root/build/meson-setup-guest.log" >&2; fail_early "meson setup of $guest failed"; }
  fi
  echo "test.sh: building the soft-RoCE guest's executables in $guest (no sanitizers): $guest_targets"
  # shellcheck disable=SC2086
  ninja -C "$guest" $guest_targets >"$guest/ninja.log" 2>&1 || { grep -E 'error|Error' -A3 "$guest/ninja.log" | head -60 >&2; fail_early "guest build failed (full log: $guest/ninja.log)"; }
fi
phase_done guest-build

# Sanitizers: leaks and undefined behaviour fail the test that caused them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}

rm -f "$build/meson-logs/testlog.json"
meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
meson_status=$?
phase_done tests

log="$build/meson-logs/testlog.json"
[ -f "$log" ] || fail_early "meson test wrote no log (exit $meson_status)"

# Summarise from meson's JSON log, one object per meson test with its result and output. GoogleTest
# binaries are counted per test case (a case skipped with GTEST_SKIP is listed with its message);
# other tests count once. A test that failed without a failing case (a crash, a leak report, a
# timeout) counts as one failure of its own.
python3 - "$log" "$meson_status" "$phase_times" "$started" <<'PY'
import collections, json, re, sys, time
path, meson_status = sys.argv[1], int(sys.argv[2])
phases = [p.split("=") for p in sys.argv[3].split()]
wall = time.time() - int(sys.argv[4])
suite_seconds = collections.Counter()
suite_tests = collections.Counter()
passed, failed, skipped = 0, [], []
case_line = re.compile(r"^\[ *(OK|FAILED|SKIPPED) *\] (\S+) \(\d+ ms\)$")
for line in open(path):
    line = line.strip()
    if not line:
        continue
    t = json.loads(line)
    result, name = t.get("result", ""), t.get("name", "?")
    suite = name.split(":", 1)[-1].split(" / ")[0].strip()
    suite_seconds[suite] += t.get("duration", 0)
    suite_tests[suite] += 1
    out = (t.get("stdout") or "") + "\n" + (t.get("stderr") or "")
    lines = out.splitlines()
    cases = 0
    case_failures = 0
    for i, text in enumerate(lines):
        m = case_line.match(text.strip())
        if not m:
            continue
        cases += 1
        status, case = m.group(1), f"{name} :: {m.group(2)}"
        if status == "OK":
            passed += 1
        elif status == "FAILED":
            failed.append((case, "FAIL"))
            case_failures += 1
        else:
            # GoogleTest prints "file:line: Skipped", then the message, then this line.
            reason = []
            for back in range(i - 1, max(i - 8, -1), -1):
                if lines[back].rstrip().endswith(": Skipped"):
                    reason = [l.strip() for l in lines[back + 1:i] if l.strip()]
                    break
            skipped.append((case, " ".join(reason) or "no reason printed"))
    if cases == 0:
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            m = re.findall(r"SKIP: (.*)", out)
            skipped.append((name, m[-1].strip() if m else "no reason printed"))
        else:
            failed.append((name, result))
    elif result not in ("OK", "EXPECTEDFAIL", "SKIP") and case_failures == 0:
        failed.append((name, f"{result} outside any test case (crash, sanitizer report or timeout)"))
print()
# Where the time went: each phase's wall time, then each suite's summed test durations (tests of
# different suites overlap, so these add up to more than the test phase's wall time).
print("time: " + ", ".join(f"{name} {int(sec)} s" for name, sec in phases) + f"; total {int(wall)} s")
print("time by suite: " + ", ".join(f"{suite} {suite_seconds[suite]:.0f} s ({suite_tests[suite]})"
                                    for suite, _ in suite_seconds.most_common()))
for name, result in failed:
    print(f"FAILED  {name} ({result})")
for name, reason in skipped:
    print(f"SKIPPED {name}: {reason}")
if meson_status != 0 and not failed:
    failed.append(("meson test", f"exit {meson_status}"))
summary = f"{passed} passed, {len(failed)} failed"
if skipped:
    summary += f", {len(skipped)} skipped"
print(summary)
sys.exit(1 if failed else 0)
PY
