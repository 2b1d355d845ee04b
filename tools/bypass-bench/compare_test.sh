#!/bin/bash
# `bypass-bench compare` on the hand-written result files in testdata/: the table's values and
# ratios, labels of repeated case names, --baseline, --plot (valid XML, one curve per case per
# panel) and every bad input (one stderr line naming file and field, exit 2).
set -u
bench="$1"
data="$2"
dir=$(mktemp -d /tmp/bypass-B-compare.XXXXXX)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_row FILE LABEL CELLS...: the table row starting with LABEL has exactly CELLS after it.
expect_row() {
  local file="$1" label="$2"
  shift 2
  local want="$*"
  local got
  got=$(grep -E "^$label  " "$file" | sed -E "s|^$label +||; s| +| |g; s| +$||")
  if [ "$got" != "$want" ]; then fail "row '$label': got '$got', want '$want'"; else echo "ok: $label: $got"; fi
}

# The fixture numbers are round: posix 4KiB 10000 msg/s at 80/90/100/200/1000 us, 2 s CPU for
# 100000 messages (20 us each); dpdk 25000 msg/s at 20/27/40/100/500 us, 5 s CPU for 250000.
if ! "$bench" compare "$data/posix.json" "$data/dpdk.json" "$data/posix-tuned.json" >"$dir/table" 2>"$dir/err"; then
  fail "compare of three good files failed: $(cat "$dir/err")"
fi
cat "$dir/table"
grep -q '^baseline: column 1 (posix:posix 4KiB d1)' "$dir/table" || fail "baseline line missing"
grep -qx "$data/posix.json: 2 cases, job posix.yaml, started 2026-11-23T22:00:00Z on fixture (2 CPUs, kernel 6.1.0)" \
  "$dir/table" || fail "file line of posix.json missing"
header=$(grep '^metric ' "$dir/table" | sed -E 's/ {2,}/|/g')
[ "$header" = "metric|posix:posix 4KiB d1 [baseline]|posix 64KiB d1|x of baseline|dpdk 4KiB d1|x of baseline|posix-tuned:posix 4KiB d1|x of baseline" ] ||
  fail "header: '$header'"
expect_row "$dir/table" "messages/s" 10000.0 5000.0 0.50x 25000.0 2.50x 12000.0 1.20x
expect_row "$dir/table" "MB/s" 40.96 327.68 8.00x 102.40 2.50x 49.15 1.20x
expect_row "$dir/table" "p50 latency \(us\)" 80.0 160.0 2.00x 20.0 0.25x 72.0 0.90x
expect_row "$dir/table" "p90 latency \(us\)" 90.0 180.0 2.00x 27.0 0.30x 81.0 0.90x
expect_row "$dir/table" "p99 latency \(us\)" 100.0 200.0 2.00x 40.0 0.40x 90.0 0.90x
expect_row "$dir/table" "p99.9 latency \(us\)" 200.0 400.0 2.00x 100.0 0.50x 150.0 0.75x
expect_row "$dir/table" "max latency \(us\)" 1000.0 2000.0 2.00x 500.0 0.50x 800.0 0.80x
expect_row "$dir/table" "CPU per message \(us\)" 20.00 50.00 2.50x 20.00 1.00x 20.00 1.00x
expect_row "$dir/table" "errors" 0 0 = 3 - 0 =
expect_row "$dir/table" "transport" posix posix dpdk posix
# The link each case names (posix-tuned.json and the second posix case predate links: "-").
expect_row "$dir/table" "link \(copies per round trip\)" "kernel, 4 copies - vhost-user, 2 copies -"

# --baseline 3: dpdk is the reference now; posix's throughput is 0.40x of it.
"$bench" compare "$data/posix.json" "$data/dpdk.json" --baseline 3 >"$dir/table3" 2>"$dir/err" ||
  fail "--baseline 3 failed: $(cat "$dir/err")"
grep -q '^baseline: column 3 (dpdk 4KiB d1)' "$dir/table3" || fail "--baseline 3: baseline line"
expect_row "$dir/table3" "messages/s" 10000.0 0.40x 5000.0 0.20x 25000.0
expect_row "$dir/table3" "p50 latency \(us\)" 80.0 4.00x 160.0 8.00x 20.0

# --plot: valid XML with one CDF and one rate curve per case (posix-tuned has no samples, so no
# rate curve), labelled with the column labels.
"$bench" compare "$data/posix.json" "$data/dpdk.json" "$data/posix-tuned.json" --plot "$dir/plot.svg" >/dev/null 2>"$dir/err" ||
  fail "--plot failed: $(cat "$dir/err")"
if ! /usr/bin/python3 - "$dir/plot.svg" <<'PY'
import sys, xml.etree.ElementTree as E
root = E.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg", root.tag
def cases(cls):
    return [p.get("data-case") for p in root.iter(ns + "path") if p.get("class") == cls]
want = ["posix:posix 4KiB d1", "posix 64KiB d1", "dpdk 4KiB d1", "posix-tuned:posix 4KiB d1"]
assert cases("cdf") == want, cases("cdf")
assert cases("rate") == want[:3], cases("rate")
colours = {p.get("stroke") for p in root.iter(ns + "path") if p.get("class") == "cdf"}
assert len(colours) == 4, colours
texts = [t.text for t in root.iter(ns + "text")]
for label in ["latency (us, log scale)", "messages/s", "time (s)", "Latency CDF", "Throughput over time"]:
    assert label in texts, label
for d in (p.get("d") for p in root.iter(ns + "path")):
    assert d.startswith("M") and " L" in d, d
print("ok: plot has", len(cases("cdf")), "CDF and", len(cases("rate")), "rate curves")
PY
then fail "--plot output"; fi
"$bench" compare "$data/posix.json" --plot "$dir/no-such-dir/plot.svg" >/dev/null 2>"$dir/err"
status=$?
{ [ "$status" -eq 1 ] && grep -q "^bypass-bench: compare: --plot: cannot write '$dir/no-such-dir/plot.svg': No such file or directory$" "$dir/err"; } ||
  fail "unwritable --plot: status $status: $(cat "$dir/err")"

# expect_error NAME STATUS LINE ARGS...: stdout empty, stderr exactly LINE, exit STATUS.
expect_error() {
  local name="$1" want_status="$2" want="$3"
  shift 3
  timeout 20 "$bench" "$@" >"$dir/out" 2>"$dir/err"
  local status=$?
  if [ "$status" -ne "$want_status" ] || [ -s "$dir/out" ] || [ "$(cat "$dir/err")" != "$want" ]; then
    fail "$name: status $status (want $want_status), stderr: $(cat "$dir/err") (want: $want)"
  else
    echo "ok: $name: $want"
  fi
}
p="bypass-bench: compare:"
expect_error "missing file" 2 "$p $data/nonexistent.json: cannot read: No such file or directory" \
  compare "$data/posix.json" "$data/nonexistent.json"
expect_error "not JSON" 2 "$p $data/bad-not-json.json: not valid JSON: line 3, column 16 (byte offset 56): expected '\"' to start a string" \
  compare "$data/bad-not-json.json"
expect_error "other schema" 2 "$p $data/bad-schema.json: schema: 'bypass-bench/2' is not 'bypass-bench/1', the format this bypass-bench reads" \
  compare "$data/bad-schema.json"
expect_error "missing field" 2 "$p $data/bad-missing-field.json: cases[1].latency_us.p99: missing" \
  compare "$data/bad-missing-field.json"
expect_error "wrong type" 2 "$p $data/bad-wrong-type.json: cases[0].totals.messages_per_second: is a string, expected a number" \
  compare "$data/bad-wrong-type.json"
expect_error "decreasing CDF" 2 "$p $data/bad-cdf.json: cases[0].latency_us.cdf[2]: is below the point before it (a CDF never decreases)" \
  compare "$data/bad-cdf.json"
printf '' >"$dir/empty.json"
expect_error "empty file" 2 "$p $dir/empty.json: not valid JSON: line 1, column 1 (byte offset 0): unexpected end of input, expected a value" \
  compare "$dir/empty.json"
expect_error "no cases" 2 "$p $data/bad-no-cases.json: cases: is empty: the file has no results" \
  compare "$data/bad-no-cases.json"
expect_error "a directory" 2 "$p $data: cannot read: it is a directory" \
  compare "$data"
expect_error "baseline past the end" 2 "$p --baseline 4 is past the last column (there are 3 cases)" \
  compare "$data/posix.json" "$data/dpdk.json" --baseline 4
expect_error "baseline not a number" 2 "$p --baseline: '0' is not a column number (1 is the first)" \
  compare "$data/posix.json" --baseline 0
expect_error "baseline without value" 2 "$p --baseline needs a value" compare "$data/posix.json" --baseline
expect_error "unknown flag" 2 "$p unknown argument '--baselines' (see bypass-bench compare --help)" \
  compare "$data/posix.json" --baselines 2
expect_error "no files" 2 "$p no result files given (see bypass-bench compare --help)" compare

[ "$failures" -eq 0 ] && echo "PASS" && exit 0
echo "$failures failure(s)"
exit 1
