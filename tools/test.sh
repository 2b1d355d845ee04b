#!/usr/bin/env bash
# The test command: installs what is missing, builds with ASan+UBSan and -Werror, runs every suite,
# and ends with one line "N passed, N failed[, N skipped]" (skipped tests are listed with their reason).
#
#   tools/test.sh                 every suite
#   tools/test.sh --suite posix   extra arguments go to `meson test` (e.g. --suite, a test name)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BYPASS_TEST_BUILD:-build/test}

fail_early() { echo "test.sh: $1" >&2; echo "0 passed, 1 failed"; exit 1; }

tools/setup.sh test || fail_early "setup failed (see above)"

mkdir -p "$root/build"
# -Dfuzz=true adds the msgr-libfuzzer test: clang (installed by setup.sh) builds just the msgr wire
# layer with libFuzzer inside this gcc build (tests/unit/msgr/meson.build).
# -g1 (line tables and function names: what sanitizer reports and perf need, no variable info)
# after debugoptimized's -g: it halves the compile time of this C++ (bench_client.cc: 30 s -> 12 s),
# which is most of a fresh checkout's run.
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=debugoptimized -Dcpp_args=-g1 -Dc_args=-g1 -Db_sanitize=address,undefined -Db_lundef=false \
    -Dwerror=true -Dfuzz=true >"$root/build/meson-setup.log" 2>&1 || { tail -30 "$root/build/meson-setup.log" >&2; fail_early "meson setup failed"; }
elif ! python3 -c 'import json, sys; sys.exit(not any(o["name"] == "fuzz" and o["value"] is True for o in json.load(open(sys.argv[1]))))' \
       "$build/meson-info/intro-buildoptions.json" 2>/dev/null; then
  meson configure "$build" -Dfuzz=true >"$root/build/meson-setup.log" 2>&1 || { tail -30 "$root/build/meson-setup.log" >&2; fail_early "meson configure -Dfuzz=true failed"; }
fi
echo "test.sh: building $build (ASan+UBSan, -Werror)"
ninja -C "$build" >"$build/ninja.log" 2>&1 || { grep -E 'error|Error' -A3 "$build/ninja.log" | head -60 >&2; fail_early "build failed (full log: $build/ninja.log)"; }

# Sanitizers: leaks and undefined behaviour fail the test that caused them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}

rm -f "$build/meson-logs/testlog.json"
meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
meson_status=$?

log="$build/meson-logs/testlog.json"
[ -f "$log" ] || fail_early "meson test wrote no log (exit $meson_status)"

# Summarise from meson's JSON log, one object per meson test with its result and output. GoogleTest
# binaries are counted per test case (a case skipped with GTEST_SKIP is listed with its message);
# other tests count once. A test that failed without a failing case (a crash, a leak report, a
# timeout) counts as one failure of its own.
python3 - "$log" "$meson_status" <<'PY'
import json, re, sys
path, meson_status = sys.argv[1], int(sys.argv[2])
passed, failed, skipped = 0, [], []
case_line = re.compile(r"^\[ *(OK|FAILED|SKIPPED) *\] (\S+) \(\d+ ms\)$")
for line in open(path):
    line = line.strip()
    if not line:
        continue
    t = json.loads(line)
    result, name = t.get("result", ""), t.get("name", "?")
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
