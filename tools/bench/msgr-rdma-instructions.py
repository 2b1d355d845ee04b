#!/usr/bin/env python3
"""Split one callgrind profile (whole process, no --toggle-collect) into all instructions and the
transport's share, for tools/bench/msgr-rdma-rendezvous.sh.

  msgr-rdma-instructions.py CALLGRIND_OUT  ->  instructions=ALL transport_instructions=T copy_instructions=C

ALL: every user-space instruction callgrind counted (totals:, else summary:), all threads.
T:   the self cost of the transport's functions -- named bypass::rdma:: (rdma), RsocketCalls or
     RpollDriver (rsocket over the posix code), or in librdmacm, libibverbs or a verbs provider
     (librxe, libmlx5...) -- plus what those functions' direct calls into the C and C++ runtime
     cost, inclusive (memcpy, memset, malloc, the syscall wrappers under rpoll). Bypass code
     outside those names (BufferList, the event loop, the messenger) is not the transport's.
C:   the part of T in memcpy/memmove. glibc copies large blocks with `rep movsb`, which callgrind
     counts once per byte: C is about the bytes the transport copied, not the copy's cycles.

Why not --toggle-collect=*bypass::rdma::*: callgrind flips collection on entering and leaving
every matching function, so a matching function called from another one turns collection off
for its own body (a toggle, not a nesting count): only odd nesting depths were counted.
"""
import os
import re
import sys

TRANSPORT_NAME = re.compile(r"bypass::rdma::|RsocketCalls|RpollDriver")
TRANSPORT_OBJECT = re.compile(r"^(librdmacm|libibverbs|librxe|libmlx[45]|libefa|libbnxt|libhns)")
RUNTIME_OBJECT = re.compile(r"^(libc\.so|libc-|ld-linux|libstdc\+\+|libgcc_s|libm\.so|libpthread)")
COPY_NAME = re.compile(r"^(__)?mem(cpy|move)")


def parse(path):
    names = {"fn": {}, "ob": {}}          # compressed ids -> names
    fn_object = {}                        # function id -> object name (where its fn= record was)
    self_cost = {}                        # function id -> Ir in its own body
    arcs = []                             # (caller id, callee id, callee object, inclusive Ir)
    total = summary = None
    ob = cob = None
    fn = cfn = None
    after_calls = False

    def name_of(kind, value):
        m = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if not m:
            return value, value
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return m.group(1), names[kind].get(m.group(1), "?")

    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                fields = line.split()
                ir = int(fields[1]) if len(fields) > 1 else 0
                if after_calls:
                    arcs.append((fn, cfn, cob, ir))
                    after_calls = False
                    cob = None
                else:
                    self_cost[fn] = self_cost.get(fn, 0) + ir
                continue
            key, _, value = line.partition("=")
            if key == "ob":
                ob = name_of("ob", value)[1]
            elif key == "cob":
                cob = name_of("ob", value)[1]
            elif key == "fn":
                fn = name_of("fn", value)[0]
                fn_object.setdefault(fn, ob)
            elif key == "cfn":
                cfn = name_of("fn", value)[0]
            elif key == "calls":
                after_calls = True
            elif line.startswith("totals:"):
                total = int(line.split()[1])
            elif line.startswith("summary:"):
                summary = int(line.split()[1])
    return names["fn"], fn_object, self_cost, arcs, total if total is not None else summary


def transport_share(fn_names, fn_object, self_cost, arcs):
    def base(obj):
        return os.path.basename(obj or "")

    def is_transport(fid):
        return bool(TRANSPORT_NAME.search(fn_names.get(fid, "")) or TRANSPORT_OBJECT.match(base(fn_object.get(fid))))

    share = sum(ir for fid, ir in self_cost.items() if is_transport(fid))
    copies = 0
    for caller, callee, call_object, ir in arcs:
        if is_transport(caller) and not is_transport(callee):
            if RUNTIME_OBJECT.match(base(fn_object.get(callee) or call_object)):
                share += ir
                if COPY_NAME.match(fn_names.get(callee, "")):
                    copies += ir
    return share, copies


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: msgr-rdma-instructions.py CALLGRIND_OUT")
    fn_names, fn_object, self_cost, arcs, total = parse(sys.argv[1])
    if total is None:
        sys.exit(f"{sys.argv[1]}: no totals: or summary: line (not a callgrind profile?)")
    share, copies = transport_share(fn_names, fn_object, self_cost, arcs)
    print(f"instructions={total} transport_instructions={share} copy_instructions={copies}")


if __name__ == "__main__":
    main()
