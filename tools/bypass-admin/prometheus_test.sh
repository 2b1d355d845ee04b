#!/bin/bash
# /metrics of a running `bypass-bench server` (posix, ms.metrics_address) under traffic: the page
# passes `promtool check metrics`, other paths get 404, and Debian's Prometheus, scraping every
# second, stores our samples (checked through its HTTP query API).
#   prometheus_test.sh BYPASS_BENCH
set -u
bench="$1"
py=/usr/bin/python3
source "$(dirname "$0")/../../tests/support/test_lib.sh"
own_network_namespace "$@"  # the free ports found below stay free: no other test binds here
test_begin prometheus-test
command -v prometheus >/dev/null && command -v promtool >/dev/null || fail "prometheus/promtool missing (tools/setup.sh test installs Debian's prometheus)"

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
get() { "$py" -c 'import sys,urllib.request,urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=5); sys.stdout.write(r.read().decode()); print(r.status, file=sys.stderr)
except urllib.error.HTTPError as e:
    print(e.code, file=sys.stderr)' "$1"; }
metrics_port=$(free_port) prom_port=$(free_port)

cat >"$work/job.yaml" <<JOB
ms:
  workers: 2
bench:
  transports: [posix]
  message_size: 4K
  iodepth: 4
  warmup: 0s
  duration: 20s
  progress: log
JOB
"$bench" -c "$work/job.yaml" --set "ms.metrics_address=127.0.0.1:$metrics_port" server >"$work/server.out" 2>&1 &
server_pid=$!
track "$server_pid"
address=$(wait_for_ready "$work/server.out" "$server_pid") || exit 1
"$bench" -c "$work/job.yaml" --set "bench.server_address=$address" client >"$work/client.out" 2>&1 &
client_pid=$!
track "$client_pid"

# The client connects and sends within a second alone, in several on a machine busy with other tests.
deadline=$((SECONDS + 30))
until get "http://127.0.0.1:$metrics_port/metrics" >"$work/metrics.txt" 2>"$work/status" &&
      grep -q '^bypass_msgr_msgs_received_total{transport="posix",entity="osd.0"} [1-9]' "$work/metrics.txt"; do
  [ "$SECONDS" -lt "$deadline" ] || { cat "$work/metrics.txt"; fail "no messenger counter with traffic within 30 s"; }
  sleep 0.2
done
[ "$(cat "$work/status")" = 200 ] || fail "GET /metrics: status $(cat "$work/status")"
promtool check metrics <"$work/metrics.txt" >"$work/promtool.out" 2>&1 || { cat "$work/promtool.out"; fail "promtool check metrics"; }
grep -q '^# TYPE bypass_transport_bytes_received_total counter$' "$work/metrics.txt" || fail "no transport counter family"
grep -q '^bypass_worker_up{transport="posix",worker="1"} 1$' "$work/metrics.txt" || fail "worker 1 is not up"
get "http://127.0.0.1:$metrics_port/other" >/dev/null 2>"$work/status"
[ "$(cat "$work/status")" = 404 ] || fail "GET /other: status $(cat "$work/status"), expected 404"

cat >"$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: bypass
    static_configs:
      - targets: ['127.0.0.1:$metrics_port']
YML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
prom_pid=$!
track "$prom_pid"
query() {
  get "http://127.0.0.1:$prom_port/api/v1/query?query=$1" 2>/dev/null
}
ok=""
for _ in $(seq 1 60); do
  sleep 1
  kill -0 "$prom_pid" 2>/dev/null || { tail -20 "$work/prometheus.log"; fail "prometheus exited"; }
  query 'bypass_msgr_msgs_received_total' >"$work/query.json" || continue
  if "$py" - "$work/query.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
samples = r["data"]["result"]
sys.exit(0 if any(s["metric"].get("entity") == "osd.0" and s["metric"].get("job") == "bypass" and float(s["value"][1]) > 0
                  for s in samples) else 1)
PY
  then ok=1; break; fi
done
[ -n "$ok" ] || { cat "$work/query.json"; tail -20 "$work/prometheus.log"; fail "Prometheus has not stored our samples after 60 s"; }
query 'up%7Bjob%3D%22bypass%22%7D' >"$work/up.json"
grep -q '"value":\[[0-9.]*,"1"\]' "$work/up.json" || { cat "$work/up.json"; fail "Prometheus reports the target down"; }
query 'bypass_transport_bytes_received_total' >"$work/query.json"
grep -q '"worker":"1"' "$work/query.json" || { cat "$work/query.json"; fail "no per-worker transport counter in Prometheus"; }
echo "PASS: Prometheus scraped $(grep -c '^bypass_' "$work/metrics.txt") samples per scrape from 127.0.0.1:$metrics_port"
