#!/usr/bin/python3
"""SYNs from random sources at a listener, from the kernel side of a tap (AF_PACKET raw socket).

  syn_flood.py --iface TAP --stack-ip IP --port P [--count N] [--seconds S] [--seed X]

Sends N (default 100000) TCP SYNs to IP:P, each from a random address of 198.18.0.0/15 (RFC 2544's
benchmarking range: nothing answers there) and a random port, paced evenly over S seconds (default
4) in bursts of 256. The Ethernet destination is the stack's MAC as the kernel resolved it (the
caller must have talked to the stack first). Prints "sent N in T s" and exits 0; 1 with a reason.
"""
import argparse
import random
import socket
import struct
import sys
import time

BURST = 256


def checksum_words(data):
    if len(data) % 2:
        data += b"\0"
    return sum(struct.unpack("!%dH" % (len(data) // 2), data))


def fold(total):
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def stack_mac(ip):
    with open("/proc/net/arp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[0] == ip and fields[3] != "00:00:00:00:00:00":
                return bytes.fromhex(fields[3].replace(":", ""))
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iface", required=True)
    parser.add_argument("--stack-ip", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, default=100000)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    dst_mac = stack_mac(args.stack_ip)
    if dst_mac is None:
        print("no ARP entry for %s in /proc/net/arp: talk to the stack first" % args.stack_ip)
        return 1
    with open("/sys/class/net/%s/address" % args.iface) as f:
        src_mac = bytes.fromhex(f.read().strip().replace(":", ""))
    dst_ip = socket.inet_aton(args.stack_ip)
    rng = random.Random(args.seed)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((args.iface, 0))
    ether = dst_mac + src_mac + b"\x08\x00"
    # MSS 1460: what a real client's SYN carries (and a SYN cookie encodes).
    options = b"\x02\x04\x05\xb4"
    tcp_length = 20 + len(options)
    start = time.monotonic()
    sent = 0
    while sent < args.count:
        frames = []
        for _ in range(min(BURST, args.count - sent)):
            src_ip = struct.pack("!I", (198 << 24 | 18 << 16) + rng.getrandbits(17))
            src_port = rng.randint(1024, 65535)
            seq = rng.getrandbits(32)
            ip_header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + tcp_length, rng.getrandbits(16), 0, 64,
                                    socket.IPPROTO_TCP, 0, src_ip, dst_ip)
            ip_header = ip_header[:10] + struct.pack("!H", fold(checksum_words(ip_header))) + ip_header[12:]
            tcp = struct.pack("!HHIIBBHHH", src_port, args.port, seq, 0, (tcp_length // 4) << 4, 0x02, 64240, 0,
                              0) + options
            pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, socket.IPPROTO_TCP, tcp_length)
            tcp = tcp[:16] + struct.pack("!H", fold(checksum_words(pseudo + tcp))) + tcp[18:]
            frames.append(ether + ip_header + tcp)
        for frame in frames:
            sock.send(frame)
        sent += len(frames)
        # Even pacing: a burst is due at sent/count of the run.
        due = start + args.seconds * sent / args.count
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    print("sent %d in %.2f s" % (sent, time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
