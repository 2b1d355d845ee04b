#!/usr/bin/python3
"""Checks a bypass-bench result file against schema bypass-bench/1 with sane values.

usage: check_result_json.py RESULT.json EXPECTED_CASES [TRANSPORT[:LINK]...]
TRANSPORT:LINK also checks that the transport's cases name that link (dpdk:vhost-user).
Exits 1 with one line per problem when something is missing or implausible.
"""
import json
import re
import sys

problems = []


def need(condition, what):
    if not condition:
        problems.append(what)
    return condition


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_case(case, index):
    where = "cases[%d] (%s)" % (index, case.get("name", "?"))
    for key in ("name", "transport", "mode", "message_size", "connections", "iodepth", "messengers", "link",
                "warmup_seconds", "seconds", "totals", "latency_us", "samples", "cpu", "counters"):
        need(key in case, "%s: no %s" % (where, key))
    if problems:
        return
    need(case["transport"] in ("posix", "dpdk", "rdma"), where + ": transport " + str(case["transport"]))
    need(case["mode"] in ("reqrep", "stream"), where + ": mode " + str(case["mode"]))
    need(case["messengers"] in ("shared", "per-thread"), where + ": messengers " + str(case["messengers"]))
    need(case["seconds"] > 0, where + ": seconds must be > 0")
    link = case["link"]
    need(isinstance(link.get("name"), str) and link["name"], where + ": link.name missing or empty")
    copies = link.get("copies_per_round_trip", "missing")
    need(copies is None or (isinstance(copies, int) and not isinstance(copies, bool) and copies >= 0),
         where + ": link.copies_per_round_trip is %r, expected a count or null" % (copies,))
    totals = case["totals"]
    for key in ("messages", "bytes", "messages_per_second", "megabytes_per_second", "errors"):
        need(is_number(totals.get(key)), "%s: totals.%s missing or not a number" % (where, key))
    if problems:
        return
    need(totals["messages"] > 0, where + ": no messages")
    need(totals["errors"] == 0, where + ": %d errors" % totals["errors"])
    need(totals["bytes"] == totals["messages"] * case["message_size"], where + ": bytes != messages * message_size")
    rate = totals["messages"] / case["seconds"]
    need(abs(totals["messages_per_second"] - rate) <= 0.01 * rate + 1, where + ": messages_per_second inconsistent")
    latency = case["latency_us"]
    order = ["p50", "p90", "p99", "p99.9", "max"]
    for key in order + ["mean", "cdf"]:
        need(key in latency, "%s: latency_us.%s missing" % (where, key))
    if problems:
        return
    values = [latency[k] for k in order]
    need(all(is_number(v) and v > 0 for v in values), where + ": latency percentiles must be > 0")
    need(values == sorted(values), where + ": percentiles not increasing: %s" % values)
    cdf = latency["cdf"]
    need(2 <= len(cdf) <= 200, where + ": cdf has %d points" % len(cdf))
    need(all(cdf[i][0] <= cdf[i + 1][0] and cdf[i][1] <= cdf[i + 1][1] for i in range(len(cdf) - 1)),
         where + ": cdf not monotonic")
    need(cdf and cdf[-1][1] == 1.0, where + ": cdf does not end at 1.0")
    samples = case["samples"]
    need(len(samples) >= 1, where + ": no samples")
    for s in samples:
        for key in ("t", "messages_per_second", "megabytes_per_second", "p50_us", "p99_us"):
            need(is_number(s.get(key)), "%s: sample without %s" % (where, key))
    need(all(samples[i]["t"] < samples[i + 1]["t"] for i in range(len(samples) - 1)), where + ": sample times not increasing")
    for side in ("client", "server"):
        cpu = case["cpu"].get(side, {})
        need(is_number(cpu.get("process_seconds")) and cpu["process_seconds"] > 0,
             "%s: cpu.%s.process_seconds missing or 0" % (where, side))
        need(isinstance(cpu.get("workers"), list) and len(cpu["workers"]) >= 1, "%s: cpu.%s.workers empty" % (where, side))
        counters = case["counters"].get(side, {})
        need(isinstance(counters.get("msgr"), dict) and isinstance(counters.get("transport"), dict),
             "%s: counters.%s needs msgr and transport" % (where, side))
        if problems:
            return
        # A stream flows one way: the server sends nothing back but acks, the client receives nothing.
        stream = case["mode"] == "stream"
        need(counters["msgr"].get("msgs_sent", 0) > 0 or (stream and side == "server"),
             "%s: counters.%s.msgr.msgs_sent is 0" % (where, side))
        need(counters["msgr"].get("msgs_received", 0) > 0 or (stream and side == "client"),
             "%s: counters.%s.msgr.msgs_received is 0" % (where, side))
        sent = counters["transport"].get("bytes_sent", counters["transport"].get("port_tx_bytes", 0))
        need(sent > 0, "%s: counters.%s.transport shows no bytes sent" % (where, side))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    expected_cases = int(sys.argv[2])
    transports = [t.split(":")[0] for t in sys.argv[3:]]
    links = dict(t.split(":", 1) for t in sys.argv[3:] if ":" in t)
    need(doc.get("schema") == "bypass-bench/1", "schema is %r" % doc.get("schema"))
    need(isinstance(doc.get("job"), str) and doc["job"], "job missing")
    need(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(doc.get("started", ""))), "started is not ISO-8601 UTC")
    host = doc.get("host", {})
    need(host.get("hostname") and is_number(host.get("cpus")) and host["cpus"] >= 1 and host.get("kernel"), "host incomplete")
    config = doc.get("config", {})
    need(all(isinstance(v, str) for v in config.values()), "config values must be strings")
    for key in ("bench.iodepth", "bench.message_size", "bench.duration", "ms.type"):
        need(key in config, "config has no " + key)
    cases = doc.get("cases", [])
    need(len(cases) == expected_cases, "%d cases, expected %d" % (len(cases), expected_cases))
    for i, case in enumerate(cases):
        check_case(case, i)
    if transports:
        need(sorted({c.get("transport") for c in cases}) == sorted(transports), "transports %s, expected %s" %
             (sorted({c.get("transport") for c in cases}), sorted(transports)))
    for transport, link in links.items():
        named = {c.get("link", {}).get("name") for c in cases if c.get("transport") == transport}
        need(named == {link}, "%s cases name link %s, expected %s" % (transport, sorted(map(str, named)), link))
    if problems:
        for p in problems:
            print("check_result_json: " + p, file=sys.stderr)
        sys.exit(1)
    print("check_result_json: %d cases OK" % len(cases))


main()
