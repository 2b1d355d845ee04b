#!/bin/sh
# Smoke test for `bypass-bench echo`: a 1 s run on 2 connections must exit 0, print the results
# table and report a non-zero message rate (in the table and in the JSON).
set -u
bench="$1"
out=$(mktemp)
json=$(mktemp)
trap 'rm -f "$out" "$json"' EXIT

if ! "$bench" echo --duration 1s --connections 2 --depth 4 --size 4K --json "$json" >"$out" 2>&1; then
  echo "FAIL: bypass-bench echo exited with status $?"; cat "$out"; exit 1
fi
cat "$out"
# The row under the header: size conns depth msg/s ...
rate=$(awk '/^ *size +conns +depth +msg\/s/ { getline; getline; print $4; exit }' "$out")
case "$rate" in
  ''|*[!0-9]*) echo "FAIL: no messages/s figure in the table"; exit 1 ;;
esac
if [ "$rate" -le 0 ]; then echo "FAIL: messages/s is $rate"; exit 1; fi
if ! grep -q '"messages_per_sec":[1-9]' "$json"; then
  echo "FAIL: JSON lacks a non-zero messages_per_sec"; cat "$json"; exit 1
fi
echo "PASS: $rate messages/s"
