"""Splits a benchmark's CPU samples into messenger, copies and stack (tools/bench/ratio-ceiling.sh,
tools/bench/connection-scaling.sh PROFILE=1).

Input: `perf script -F comm,tid,ip,sym,dso --no-inline` of a `perf record -e cpu-clock -g` of the
bypass-bench server and client, and that run's result JSON. Each sample goes to one share, decided
by its leaf, or for a leaf in shared code (libc, libstdc++, buffers) by the first caller that decides:
  messenger  the msgr2 protocol, crc32c, the load generator (the same code on every transport);
             user-space code nothing else claims counts here too (on posix that is all of it)
  copies     posix: the kernel's copies of each payload into and out of socket buffers; dpdk: the
             link's driver, whose copy loops move each payload between the processes (memif:
             librte_net_memif; vhost-user: librte_vhost and librte_net_vhost), what a NIC does by DMA
  stack      posix: the rest of the kernel; dpdk: the userspace TCP/IP stack, its checksums, the
             poll loop, descriptors and mbufs (stack/, pmd/, the rest of DPDK), and any kernel time
"""
import json
import os
import re

SHARES = ("messenger", "copies", "stack")

_kernel_copy = re.compile(r"copy_(to|from)_(iter|user)|copy_user|rep_movs|memcpy_orig|_copy_")
_link_dso = re.compile(r"librte_(net_memif|vhost|net_vhost)\.so")
_messenger_sym = re.compile(r"bypass::(msgr|bench)::|crc32|isal|aes|gcm")
_messenger_dso = re.compile(r"libisal|libcrypto|libssl")
_stack_sym = re.compile(r"bypass::(inet|pmd)::|bypass::(Dpdk|TxChain|EventCenter|EventDriver|Polling|SingleListener)|"
                        r"rte_|bypass::.*(Dpdk|Mbuf|mbuf)")
_stack_dso = re.compile(r"librte_")


def frames(path):
    """Yields each sample's frames [(sym, dso)], leaf first."""
    for _, sample in process_frames(path):
        yield sample


def process_frames(path):
    """Yields (pid, frames) per sample; pid is None unless the recording's fields had pid
    (`perf script -F comm,pid,tid,...`: the header reads "comm pid/tid")."""
    sample, pid = [], None
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if not line.strip():
            if sample:
                yield pid, sample
            sample = []
            continue
        if not line.startswith((" ", "\t")):  # the sample's header: comm tid, or comm pid/tid
            m = re.search(r"\s(\d+)/\d+\s*$", line)
            pid = int(m[1]) if m else None
            continue
        m = re.match(r"\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
        if m:
            sample.append((m[1], os.path.basename(m[2])))
    if sample:
        yield pid, sample


def category(sample, transport):
    """The share of one sample, or None when no frame decides (user space: the messenger's)."""
    sym, dso = sample[0]
    if "kernel" in dso or dso.startswith("[k"):
        if transport == "posix":
            return "copies" if _kernel_copy.search(sym) else "stack"
        return "stack"
    for sym, dso in sample:
        if transport == "dpdk" and _link_dso.search(dso):
            return "copies"
        if _messenger_dso.search(dso) or _messenger_sym.search(sym):
            return "messenger"
        if transport == "dpdk" and (_stack_dso.search(dso) or _stack_sym.search(sym)):
            return "stack"
    return None


def split(stacks_path, result_path, transport, side=None, pids=()):
    """Each share of the run's CPU per request/reply, in us and in % of samples: both processes,
    or with `side` ("client" or "server") only that process's, whose samples carry one of `pids`.
    Raises ValueError when the recording holds no sample."""
    counts = dict.fromkeys(SHARES, 0)
    crc = unattributed = 0
    symbols = {}
    for pid, sample in process_frames(stacks_path):
        if side is not None and pid not in pids:
            continue
        c = category(sample, transport)
        if c is None:
            c = "messenger"
            unattributed += 1
        counts[c] += 1
        if "crc32" in sample[0][0]:
            crc += 1
        key = (c, sample[0][0], sample[0][1])
        symbols[key] = symbols.get(key, 0) + 1
    total = sum(counts.values())
    if total == 0:
        raise ValueError(f"no samples of the {transport} processes in {stacks_path}")
    result = next(c for c in json.load(open(result_path))["cases"] if c["transport"] == transport)
    msgs = result["totals"]["messages_per_second"]
    sides = (side,) if side is not None else ("client", "server")
    cpu = sum(result["cpu"][s]["process_seconds"] for s in sides)
    cpu_us = cpu / result["seconds"] / msgs * 1e6  # per request/reply
    return dict(msgs=msgs, cpu_us=cpu_us, us={k: cpu_us * v / total for k, v in counts.items()},
                share={k: 100 * v / total for k, v in counts.items()}, crc_us=cpu_us * crc / total,
                busy=cpu / result["seconds"], samples=total, unattributed=100 * unattributed / total, symbols=symbols,
                link=result.get("link", {}), size=result["message_size"])


def top(s, share, n=6):
    """The n leaf functions with most samples in one share, with their % of all samples."""
    rows = sorted(((v, sym, dso) for (c, sym, dso), v in s["symbols"].items() if c == share), reverse=True)[:n]
    return ", ".join(f"{sym} ({dso}) {100 * v / s['samples']:.1f} %" for v, sym, dso in rows)
