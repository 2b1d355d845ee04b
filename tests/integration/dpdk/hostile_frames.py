#!/usr/bin/python3
"""Hostile and malformed frames sent with scapy into a tap toward the Bypass userspace stack.

Run by tap_robustness_test (as root, with Debian's /usr/bin/python3 and python3-scapy) while the
stack serves an echo listener. A made-up host (--peer-ip, a locally administered MAC) talks to
the stack directly on the tap, so the kernel never answers for it.

Each case checks what the stack answers on the wire (an RST for a closed port, an RFC 5961
challenge ACK, nothing at all for garbage). On success the script prints one line
`expect COUNTER N` per inet_stats counter that must have grown by at least N, then `ok`; the C++
test checks the counters. Any wrong or missing answer prints `FAIL: what` and exits 1.

Groups: `malformed` (Ethernet/IPv4/TCP garbage, closed port, out-of-window and overlapping
segments on an established connection, fragments that never complete), `arp` (duplicate and
gratuitous ARP, an ARP claim on the stack's own address, a truncated ARP packet) and `ipv6`
(truncated headers and bad payload lengths, extension-header chains at and past the stack's limit,
Routing type 0, overlapping, never-completed, tiny-first and atomic fragments, Neighbor Discovery
with bad hop limits and options, solicitations for other addresses, an advertisement of the
stack's own address from another MAC, ICMPv6 errors with garbage quotes, TCP with a bad checksum).
"""
import argparse
import collections
import sys
import threading
import time

from scapy.all import (ARP, ICMP, IP, TCP, AsyncSniffer, Ether, ICMPv6DestUnreach, ICMPv6EchoReply,
                       ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6ND_RA, ICMPv6NDOptDstLLAddr,
                       ICMPv6NDOptSrcLLAddr, ICMPv6PacketTooBig, ICMPv6ParamProblem, ICMPv6TimeExceeded,
                       IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting,
                       Raw, conf, in6_getnsma, in6_getnsmac, inet_pton, sendp)
import socket

conf.verb = 0

PEER_MAC = "02:00:00:68:00:99"
FOREIGN_MAC = "02:00:00:68:0b:ad"
BROADCAST = "ff:ff:ff:ff:ff:ff"
ANSWER_WAIT = 2.0  # seconds to wait for an answer the stack must send
SILENCE_WAIT = 0.3  # seconds to watch for an answer the stack must not send
REASSEMBLY_WAIT = 5.0  # the test runs the stack with dpdk.ipv6_reassembly_timeout=1s


class Failure(Exception):
    pass


class Wire:
    """Sends frames on the tap and collects every frame the stack sends to the peer."""

    def __init__(self, iface):
        self.iface = iface
        self.frames = []
        self.lock = threading.Lock()
        self.responder = None  # called with every collected frame (answers Neighbor Solicitations)
        started = threading.Event()
        # IPv6 multicast (33:33:...) too: the stack's Neighbor Solicitations for the peer.
        self.sniffer = AsyncSniffer(iface=iface, store=False, prn=self._collect,
                                    lfilter=lambda p: Ether in p and p[Ether].src != PEER_MAC
                                    and (p[Ether].dst in (PEER_MAC, BROADCAST) or p[Ether].dst.startswith("33:33:")),
                                    started_callback=started.set)
        self.sniffer.start()
        if not started.wait(5):
            raise Failure(f"sniffer on {iface} did not start within 5 s")

    def _collect(self, frame):
        with self.lock:
            self.frames.append(frame)
        if self.responder:
            self.responder(frame)

    def mark(self):
        with self.lock:
            return len(self.frames)

    def since(self, mark):
        with self.lock:
            return list(self.frames[mark:])

    def send(self, frame):
        sendp(frame, iface=self.iface)

    def expect(self, mark, predicate, what, timeout=ANSWER_WAIT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for frame in self.since(mark):
                if predicate(frame):
                    return frame
            time.sleep(0.01)
        raise Failure(f"no answer within {timeout} s: {what}")

    def expect_silence(self, mark, predicate, what, wait=SILENCE_WAIT):
        time.sleep(wait)
        for frame in self.since(mark):
            if predicate(frame):
                raise Failure(f"unexpected answer ({what}): {frame.summary()}")

    def stop(self):
        self.sniffer.stop()


def internet_checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def tcp_bytes_with_zero_sum(src, dst, segment, fix_at):
    """Adjusts the 16-bit word at `fix_at` so the TCP checksum over `segment` (however short or
    malformed) verifies: the stack must then reject it for its header, not its checksum."""
    segment = bytearray(segment)
    segment[fix_at:fix_at + 2] = b"\0\0"
    pseudo = bytes(map(int, src.split("."))) + bytes(map(int, dst.split("."))) + \
        bytes([0, 6]) + len(segment).to_bytes(2, "big")
    total = internet_checksum(pseudo + bytes(segment))
    segment[fix_at:fix_at + 2] = (0xFFFF - total).to_bytes(2, "big")
    return bytes(segment)


class Stack:
    """What the script knows about the stack under test."""

    def __init__(self, args, wire):
        self.ip = args.stack_ip
        self.peer_ip = args.peer_ip
        self.wire = wire
        self.expected = collections.Counter()
        # RFC 826: an ARP request for the stack's address makes it learn the sender (merge flag),
        # so it can answer the made-up peer without asking the kernel.
        mark = wire.mark()
        wire.send(Ether(src=PEER_MAC, dst=BROADCAST) /
                  ARP(op=1, hwsrc=PEER_MAC, psrc=self.peer_ip, pdst=self.ip))
        reply = wire.expect(mark, lambda p: ARP in p and p[ARP].op == 2 and p[ARP].psrc == self.ip,
                            f"ARP reply for {self.ip}")
        self.mac = reply[ARP].hwsrc

    def ether(self):
        return Ether(src=PEER_MAC, dst=self.mac)

    def ip_header(self, **fields):
        return IP(src=self.peer_ip, dst=self.ip, **fields)

    def expect(self, counter, n=1):
        self.expected[counter] += n

    def send_dropped(self, frame, counter):
        """Sends a frame the stack must drop and count under `counter` (silence is checked per
        batch by expect_no_answer, so a batch costs one wait)."""
        self.wire.send(frame)
        self.expect(counter)

    def expect_no_answer(self, mark, what):
        self.wire.expect_silence(mark, lambda p: IP in p and p[IP].src == self.ip, what)


def from_stack(stack, sport, dport):
    return lambda p: (TCP in p and p[IP].src == stack.ip and p[TCP].sport == sport and
                      p[TCP].dport == dport)


def malformed_link_and_ip(stack):
    eth = stack.ether()
    ipv4 = Ether(src=PEER_MAC, dst=stack.mac, type=0x0800)
    tcp = TCP(sport=40000, dport=9, flags="S", seq=1)
    mark = stack.wire.mark()
    # A frame shorter than the Ethernet header: the kernel pads what a packet socket sends to the
    # 14-byte header with zeros, so the stack sees a zero length/EtherType field.
    stack.send_dropped(Raw(bytes(eth / stack.ip_header() / tcp)[:10]), "rx_malformed_ethernet")
    stack.send_dropped(ipv4 / Raw(bytes(stack.ip_header() / tcp)[:12]), "rx_malformed_ipv4")  # cut header
    stack.send_dropped(eth / stack.ip_header(chksum=0x1234) / tcp, "rx_malformed_ipv4")  # bad checksum
    stack.send_dropped(eth / stack.ip_header(ihl=4) / tcp, "rx_malformed_ipv4")
    stack.send_dropped(eth / stack.ip_header(ihl=15) / Raw(b"\0" * 8), "rx_malformed_ipv4")  # IHL > length
    stack.send_dropped(eth / stack.ip_header(len=1000) / tcp, "rx_malformed_ipv4")  # past the frame
    stack.send_dropped(eth / stack.ip_header(version=6) / tcp, "rx_malformed_ipv4")
    stack.expect_no_answer(mark, "malformed Ethernet or IPv4")


def malformed_tcp(stack, listen_port):
    eth = stack.ether()
    mark = stack.wire.mark()
    syn = TCP(sport=40010, dport=listen_port, flags="S", seq=7, window=65535)
    truncated = tcp_bytes_with_zero_sum(stack.peer_ip, stack.ip, bytes(syn)[:12], fix_at=8)
    stack.send_dropped(eth / stack.ip_header(proto=6) / Raw(truncated), "rx_malformed_tcp")
    stack.send_dropped(eth / stack.ip_header() / TCP(sport=40011, dport=listen_port, flags="S", chksum=0xDEAD),
                       "tcp_bad_checksum")
    stack.send_dropped(eth / stack.ip_header() / TCP(sport=40012, dport=listen_port, flags="S", dataofs=4),
                       "rx_malformed_tcp")
    stack.send_dropped(eth / stack.ip_header() / TCP(sport=40013, dport=listen_port, flags="S", dataofs=15),
                       "rx_malformed_tcp")  # data offset past a 20-byte segment
    # RFC 9293 §3.1 option format: kind, length (>= 2, covering kind and length), data.
    bogus_options = (
        b"\x08\x00\x00\x00",  # length 0
        b"\x02\x01\x00\x00",  # length 1
        b"\x03\x07\x00\x00",  # runs past the header
        b"\x01\x01\x01\x02",  # kind without a length byte
    )
    for sport, options in enumerate(bogus_options, start=40020):
        stack.send_dropped(eth / stack.ip_header() /
                           TCP(sport=sport, dport=listen_port, flags="S", seq=9, dataofs=6) / Raw(options),
                           "rx_malformed_tcp")
    stack.send_dropped(eth / stack.ip_header() / TCP(sport=40030, dport=listen_port, flags="SF"),
                       "rx_malformed_tcp")
    stack.expect_no_answer(mark, "malformed TCP (a SYN-ACK or RST would mean it was processed)")


def closed_port(stack, closed):
    # RFC 9293 §3.10.7.1 CLOSED: no ACK -> <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>;
    # ACK set -> <SEQ=SEG.ACK><CTL=RST>.
    mark = stack.wire.mark()
    stack.wire.send(stack.ether() / stack.ip_header() / TCP(sport=40040, dport=closed, flags="S", seq=1000))
    rst = stack.wire.expect(mark, from_stack(stack, closed, 40040), "RST for a SYN to a closed port")
    if rst[TCP].flags != "RA" or rst[TCP].seq != 0 or rst[TCP].ack != 1001:
        raise Failure(f"SYN to closed port: wanted RST,ACK seq 0 ack 1001, got {rst[TCP].flags} "
                      f"seq {rst[TCP].seq} ack {rst[TCP].ack}")
    mark = stack.wire.mark()
    stack.wire.send(stack.ether() / stack.ip_header() /
                    TCP(sport=40041, dport=closed, flags="A", seq=5, ack=123456))
    rst = stack.wire.expect(mark, from_stack(stack, closed, 40041), "RST for an ACK to a closed port")
    if rst[TCP].flags != "R" or rst[TCP].seq != 123456:
        raise Failure(f"ACK to closed port: wanted RST seq 123456, got {rst[TCP].flags} seq {rst[TCP].seq}")
    stack.expect("tcp_rst_sent", 2)
    stack.expect("tcp_dropped_no_connection", 2)
    # An RST to a closed port is never answered.
    mark = stack.wire.mark()
    stack.wire.send(stack.ether() / stack.ip_header() / TCP(sport=40042, dport=closed, flags="R", seq=5))
    stack.wire.expect_silence(mark, from_stack(stack, closed, 40042), "RST to a closed port")
    stack.expect("tcp_dropped_no_connection")


class PeerConnection:
    """A hand-driven TCP connection from the made-up peer to the stack's echo listener; no
    window scaling, SACK or timestamps, so every check below is about plain sequence space."""

    ISS = 1_000_000

    def __init__(self, stack, port, sport):
        self.stack, self.port, self.sport = stack, port, sport
        self.snd_nxt = self.ISS + 1
        self.echo = {}  # stack's sequence offset -> bytes received from it
        mark = stack.wire.mark()
        stack.wire.send(self.segment("S", seq=self.ISS, ack=0, options=[("MSS", 1460)]))
        synack = stack.wire.expect(mark, lambda p: self.from_stack(p) and p[TCP].flags == "SA",
                                   "SYN-ACK from the echo listener")
        if synack[TCP].ack != self.ISS + 1:
            raise Failure(f"SYN-ACK acks {synack[TCP].ack}, wanted {self.ISS + 1}")
        self.irs = synack[TCP].seq
        self.window = synack[TCP].window
        stack.wire.send(self.segment("A"))
        stack.expect("tcp_connections_established")

    def from_stack(self, p):
        return from_stack(self.stack, self.port, self.sport)(p)

    def rcv_nxt(self):
        """The stack's next sequence number we have contiguously received."""
        offset = 0
        while offset in self.echo:
            offset += len(self.echo[offset])
        return self.irs + 1 + offset

    def segment(self, flags, seq=None, ack=None, payload=b"", options=None):
        tcp = TCP(sport=self.sport, dport=self.port, flags=flags,
                  seq=self.snd_nxt if seq is None else seq % 2**32,
                  ack=(self.rcv_nxt() if ack is None else ack) % 2**32, window=65535,
                  options=options or [])
        frame = self.stack.ether() / self.stack.ip_header() / tcp
        return frame / Raw(payload) if payload else frame

    def expect_ack_of(self, mark, what, seq_wanted=None):
        """The stack's answer must be an ACK (no RST) acknowledging exactly our SND.NXT."""
        wanted = self.snd_nxt if seq_wanted is None else seq_wanted
        answer = self.stack.wire.expect(mark, lambda p: self.from_stack(p) and "A" in p[TCP].flags,
                                        what)
        if "R" in answer[TCP].flags or answer[TCP].ack != wanted:
            raise Failure(f"{what}: wanted an ACK of {wanted}, got {answer[TCP].flags} ack {answer[TCP].ack}")

    def collect_echo(self, total, timeout=5.0):
        """Reads the stack's data segments (acking them) until `total` contiguous bytes."""
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            frames = self.stack.wire.since(0)
            for p in frames[seen:]:
                if self.from_stack(p) and Raw in p:
                    self.echo.setdefault((p[TCP].seq - self.irs - 1) % 2**32, bytes(p[Raw].load))
            seen = len(frames)
            have = self.rcv_nxt() - self.irs - 1
            self.stack.wire.send(self.segment("A"))
            if have >= total:
                return b"".join(self.echo[o] for o in sorted(self.echo) if o < have)[:total]
            time.sleep(0.05)
        raise Failure(f"echo: {self.rcv_nxt() - self.irs - 1} of {total} bytes came back")


def established_connection(stack, listen_port):
    c = PeerConnection(stack, listen_port, sport=40100)
    wire = stack.wire
    window = max(c.window, 1)

    # RFC 5961 §3.2: an RST outside the window is dropped without a word.
    mark = wire.mark()
    wire.send(c.segment("R", seq=c.snd_nxt + window + 100_000))
    wire.expect_silence(mark, c.from_stack, "RST outside the window")
    stack.expect("tcp_dropped_out_of_window")
    # ... in the window but not at RCV.NXT: a challenge ACK, and the connection lives on.
    mark = wire.mark()
    wire.send(c.segment("R", seq=c.snd_nxt + min(100, window - 1)))
    c.expect_ack_of(mark, "challenge ACK for an in-window RST off RCV.NXT (RFC 5961 §3.2)")
    stack.expect("tcp_challenge_acks")
    stack.expect("tcp_rst_received")
    # RFC 5961 §4.2: a SYN on a synchronized connection gets a challenge ACK, never a reset.
    mark = wire.mark()
    wire.send(c.segment("S", seq=c.snd_nxt + min(50, window - 1), options=[("MSS", 1460)]))
    c.expect_ack_of(mark, "challenge ACK for an in-window SYN (RFC 5961 §4.2)")
    stack.expect("tcp_challenge_acks")
    mark = wire.mark()
    wire.send(c.segment("S", seq=c.snd_nxt + window + 200_000, options=[("MSS", 1460)]))
    c.expect_ack_of(mark, "ACK for an out-of-window SYN (RFC 5961 §4.2)")
    stack.expect("tcp_challenge_acks")
    # RFC 9293 §3.10.7.4: unacceptable text is answered with an ACK and dropped.
    mark = wire.mark()
    wire.send(c.segment("PA", seq=c.snd_nxt + window + 300_000, payload=b"x" * 100))
    c.expect_ack_of(mark, "ACK for out-of-window data")
    stack.expect("tcp_dropped_out_of_window")
    # RFC 9293 §3.10.7.4 fifth / RFC 5961 §5.2: an ACK of bytes never sent gets an ACK back.
    mark = wire.mark()
    wire.send(c.segment("A", ack=c.irs + 1 + 5_000_000))
    c.expect_ack_of(mark, "ACK for an ACK of unsent data")
    # A zero-length segment at RCV.NXT is a plain ACK: no answer needed, nothing breaks.
    mark = wire.mark()
    wire.send(c.segment("A"))
    wire.expect_silence(mark, c.from_stack, "zero-length segment at RCV.NXT")

    # Overlapping, duplicate and out-of-order text: the echo must be the stream, byte-exact.
    stream = bytes((i * 7 + 3) % 251 for i in range(2500))
    base = c.snd_nxt
    for start, end in ((0, 1000), (500, 1500), (0, 300), (2000, 2500), (1400, 2000)):
        wire.send(c.segment("PA", seq=base + start, payload=stream[start:end]))
    c.snd_nxt = base + len(stream)
    if c.collect_echo(len(stream)) != stream:
        raise Failure("echo of overlapping and out-of-order segments differs from the stream")

    # An RST exactly at RCV.NXT ends the connection (RFC 5961 §3.2), silently.
    mark = wire.mark()
    wire.send(c.segment("R"))
    stack.expect("tcp_rst_received")
    stack.expect("tcp_connections_reset")
    wire.expect_silence(mark, lambda p: c.from_stack(p) and "R" not in p[TCP].flags and Raw not in p,
                        "RST at RCV.NXT")


def incomplete_fragments(stack):
    # RFC 791 §3.2: the reassembly timer discards datagrams whose fragments never all arrive.
    eth = stack.ether()
    payload = Raw(b"f" * 64)
    mark = stack.wire.mark()
    for ident, flags, offset in ((0x6801, "MF", 0), (0x6802, "MF", 8), (0x6803, 0, 16)):  # first, middle, last
        stack.send_dropped(eth / stack.ip_header(id=ident, flags=flags, frag=offset, proto=6) / payload,
                           "reassembly_timeouts")
    stack.expect_no_answer(mark, "fragments that never complete")


def arp_cases(stack, kernel_ip, kernel_mac):
    wire = stack.wire
    reply = ARP(op=2, hwsrc=kernel_mac, psrc=kernel_ip, hwdst=stack.mac, pdst=stack.ip)
    for _ in range(3):  # duplicate replies, unsolicited
        wire.send(Ether(src=kernel_mac, dst=stack.mac) / reply)
    # Gratuitous ARP (RFC 5227 §3), request and reply form, for the kernel's real address.
    wire.send(Ether(src=kernel_mac, dst=BROADCAST) /
              ARP(op=1, hwsrc=kernel_mac, psrc=kernel_ip, hwdst="00:00:00:00:00:00", pdst=kernel_ip))
    wire.send(Ether(src=kernel_mac, dst=BROADCAST) /
              ARP(op=2, hwsrc=kernel_mac, psrc=kernel_ip, hwdst=BROADCAST, pdst=kernel_ip))
    # Someone else claims the stack's own address: the stack keeps it and keeps answering.
    wire.send(Ether(src=FOREIGN_MAC, dst=BROADCAST) /
              ARP(op=2, hwsrc=FOREIGN_MAC, psrc=stack.ip, hwdst=BROADCAST, pdst=stack.ip))
    mark = wire.mark()
    wire.send(Ether(src=PEER_MAC, dst=BROADCAST) /
              ARP(op=1, hwsrc=PEER_MAC, psrc=stack.peer_ip, pdst=stack.ip))
    is_reply = lambda p: ARP in p and p[ARP].op == 2 and p[ARP].psrc == stack.ip  # noqa: E731
    answer = wire.expect(mark, is_reply, "ARP reply after a claim on the stack's address")
    if answer[ARP].hwsrc != stack.mac:
        raise Failure(f"stack answered with {answer[ARP].hwsrc}, it was {stack.mac}")
    # One request, one reply, however many workers the stack runs (each keeps an ARP replica).
    time.sleep(SILENCE_WAIT)
    replies = sum(1 for p in wire.since(mark) if is_reply(p))
    if replies != 1:
        raise Failure(f"one ARP request drew {replies} replies")
    stack.expect("arp_replies_sent", 1)
    mark = wire.mark()
    stack.send_dropped(Ether(src=PEER_MAC, dst=stack.mac, type=0x0806) /
                       Raw(bytes(ARP(op=1, hwsrc=PEER_MAC, psrc=stack.peer_ip, pdst=stack.ip))[:20]),
                       "rx_malformed_arp")
    wire.expect_silence(mark, lambda p: ARP in p, "ARP packet cut at 20 bytes")
    # And a ping through the whole path from the made-up peer still answers.
    mark = wire.mark()
    wire.send(stack.ether() / stack.ip_header() / ICMP(id=0x68, seq=1) / Raw(b"ping"))
    wire.expect(mark, lambda p: ICMP in p and p[ICMP].type == 0 and p[ICMP].id == 0x68,
                "echo reply after the ARP cases")
    stack.expect("icmp_echo_replies_sent")


ND_HOP_LIMIT = 255  # RFC 4861 §7.1: Neighbor Discovery messages are sent with hop limit 255
ICMPV6 = 58
ND_TYPES = range(133, 138)  # RS, RA, NS, NA, Redirect


def solicited_node(ip6):
    """The solicited-node multicast group of `ip6` and its Ethernet address (RFC 4291 §2.7.1)."""
    group = socket.inet_ntop(socket.AF_INET6, in6_getnsma(inet_pton(socket.AF_INET6, ip6)))
    return group, in6_getnsmac(inet_pton(socket.AF_INET6, group))


class Stack6:
    """The stack's IPv6 side as the made-up peer (--peer-ip6, PEER_MAC) sees it."""

    def __init__(self, args, wire):
        self.ip = args.stack_ip6
        self.peer_ip = args.peer_ip6
        self.wire = wire
        self.expected = collections.Counter()
        wire.responder = self._answer_solicitation
        # RFC 4861 §7.2.3: a solicitation with a source link-layer address makes the stack cache the
        # peer (STALE), so it answers the peer without resolving it first.
        group, group_mac = solicited_node(self.ip)
        mark = wire.mark()
        wire.send(Ether(src=PEER_MAC, dst=group_mac) /
                  IPv6(src=self.peer_ip, dst=group, hlim=ND_HOP_LIMIT) /
                  ICMPv6ND_NS(tgt=self.ip) / ICMPv6NDOptSrcLLAddr(lladdr=PEER_MAC))
        answer = wire.expect(mark, lambda p: ICMPv6ND_NA in p and p[ICMPv6ND_NA].tgt == self.ip,
                             f"Neighbor Advertisement for {self.ip}")
        self.mac = answer[Ether].src
        self.expect("nd_advertisements_sent")

    def _answer_solicitation(self, frame):
        # The stack probes the peer's cache line (RFC 4861 §7.3.3, DELAY -> PROBE after 5 s): answer
        # as a live host would, so nothing it sends to the peer waits on resolution.
        if ICMPv6ND_NS in frame and frame[ICMPv6ND_NS].tgt == self.peer_ip and IPv6 in frame:
            sendp(Ether(src=PEER_MAC, dst=frame[Ether].src) /
                  IPv6(src=self.peer_ip, dst=frame[IPv6].src, hlim=ND_HOP_LIMIT) /
                  ICMPv6ND_NA(tgt=self.peer_ip, R=0, S=1, O=1) / ICMPv6NDOptDstLLAddr(lladdr=PEER_MAC),
                  iface=self.wire.iface)

    def expect(self, counter, n=1):
        self.expected[counter] += n

    def ip6(self, **fields):
        fields.setdefault("src", self.peer_ip)
        fields.setdefault("dst", self.ip)
        return Ether(src=PEER_MAC, dst=self.mac) / IPv6(**fields)

    def send_dropped(self, frame, counter):
        self.wire.send(frame)
        self.expect(counter)

    def from_stack(self, p):
        return IPv6 in p and p[IPv6].src == self.ip

    def expect_silence(self, mark, what):
        """Nothing from the stack's address but Neighbor Discovery (its probes for the peer)."""
        self.wire.expect_silence(
            mark, lambda p: self.from_stack(p) and not (p[IPv6].nh == ICMPV6 and bytes(p[IPv6].payload)[0] in ND_TYPES),
            what)

    def echo_request(self, ident, seq=1, data=b"hostile6", **ip_fields):
        return self.ip6(**ip_fields) / ICMPv6EchoRequest(id=ident, seq=seq, data=data)

    def expect_echo_reply(self, mark, ident, what):
        self.wire.expect(mark, lambda p: self.from_stack(p) and ICMPv6EchoReply in p and p[ICMPv6EchoReply].id == ident,
                         what)
        self.expect("icmpv6_echo_replies_sent")

    def expect_error(self, mark, error_class, what, timeout=ANSWER_WAIT, **fields):
        """An ICMPv6 error of `error_class` from the stack to the peer whose fields match."""
        def matches(p):
            return (self.from_stack(p) and p[IPv6].dst == self.peer_ip and error_class in p and
                    all(getattr(p[error_class], k) == v for k, v in fields.items()))
        self.wire.expect(mark, matches, what, timeout=timeout)
        self.expect("icmpv6_errors_sent")

    def icmpv6_bytes(self, message):
        """`message` (an ICMPv6 layer) with its checksum over the pseudo-header peer -> stack."""
        return bytes(IPv6(src=self.peer_ip, dst=self.ip) / message)[40:]

    def fragment(self, ident, offset, more, data, nh=ICMPV6, hlim=64):
        return self.ip6(hlim=hlim) / IPv6ExtHdrFragment(nh=nh, offset=offset // 8, m=int(more), id=ident) / Raw(data)


def ipv6_malformed_headers(stack):
    mark = stack.wire.mark()
    echo = IPv6(src=stack.peer_ip, dst=stack.ip) / ICMPv6EchoRequest(id=0x6a01, data=b"x" * 32)
    ether6 = Ether(src=PEER_MAC, dst=stack.mac, type=0x86DD)
    stack.send_dropped(ether6 / Raw(bytes(echo)[:30]), "rx_malformed_ipv6")  # header cut at 30 bytes
    stack.send_dropped(stack.ip6(plen=1000) / ICMPv6EchoRequest(id=0x6a02), "rx_malformed_ipv6")  # past the frame
    stack.send_dropped(stack.ip6(version=4) / ICMPv6EchoRequest(id=0x6a03), "rx_malformed_ipv6")
    stack.send_dropped(stack.ip6(src="ff02::1") / ICMPv6EchoRequest(id=0x6a04), "rx_malformed_ipv6")  # RFC 4291 §2.7
    # Payload length smaller than the frame: the rest is padding, and what is left fails its
    # checksum (or is shorter than an ICMPv6 header).
    stack.send_dropped(ether6 / Raw(bytes(echo)[:4] + (12).to_bytes(2, "big") + bytes(echo)[6:]), "rx_malformed_icmpv6")
    stack.send_dropped(ether6 / Raw(bytes(echo)[:4] + (4).to_bytes(2, "big") + bytes(echo)[6:]), "rx_malformed_icmpv6")
    stack.expect_silence(mark, "malformed IPv6 headers")
    # Hop limit 0 only matters to a router (RFC 8200 §3): a host answers a packet addressed to it.
    mark = stack.wire.mark()
    stack.wire.send(stack.echo_request(0x6a05, hlim=0))
    stack.expect_echo_reply(mark, 0x6a05, "echo reply to a request with hop limit 0")


def ipv6_extension_headers(stack):
    wire = stack.wire
    # The stack walks at most 8 extension headers (Ipv6Extensions::kMaxHeaders): 8 are processed...
    mark = wire.mark()
    chain = IPv6ExtHdrHopByHop()
    for _ in range(7):
        chain = chain / IPv6ExtHdrDestOpt()
    wire.send(stack.ip6() / chain / ICMPv6EchoRequest(id=0x6b01))
    stack.expect_echo_reply(mark, 0x6b01, "echo reply behind 8 extension headers (the limit)")
    # ... a ninth is dropped, silently, as is a Hop-by-Hop header that is not first (RFC 8200 §4.1).
    mark = wire.mark()
    chain = IPv6ExtHdrDestOpt()
    for _ in range(8):
        chain = chain / IPv6ExtHdrDestOpt()
    stack.send_dropped(stack.ip6() / chain / ICMPv6EchoRequest(id=0x6b02), "rx_malformed_ipv6")
    stack.send_dropped(stack.ip6() / IPv6ExtHdrDestOpt() / IPv6ExtHdrHopByHop() / ICMPv6EchoRequest(id=0x6b03),
                       "rx_malformed_ipv6")
    stack.send_dropped(stack.ip6() / IPv6ExtHdrDestOpt(len=10) / ICMPv6EchoRequest(id=0x6b04),
                       "rx_malformed_ipv6")  # runs past the payload
    stack.send_dropped(stack.ip6() / IPv6ExtHdrFragment(nh=44, id=0x6b05) / IPv6ExtHdrFragment(nh=58, id=0x6b05) /
                       ICMPv6EchoRequest(id=0x6b05), "rx_malformed_ipv6")  # two Fragment headers (§4.1)
    stack.expect_silence(mark, "over-long or misordered extension-header chains")
    # RFC 5095 §3: Routing Type 0 is processed as an unrecognized type (RFC 8200 §4.4): with
    # segments left the packet is discarded and a Parameter Problem code 0 points at the type...
    mark = wire.mark()
    stack.send_dropped(stack.ip6() / IPv6ExtHdrRouting(type=0, addresses=["fd00:7a::5"], segleft=1) /
                       ICMPv6EchoRequest(id=0x6b06), "rx_malformed_ipv6")
    stack.expect_error(mark, ICMPv6ParamProblem, "Parameter Problem for Routing Type 0 with segments left",
                       code=0, ptr=40 + 2)
    stack.expect("ipv6_parameter_problems_sent")
    wire.expect_silence(mark, lambda p: stack.from_stack(p) and ICMPv6EchoReply in p, "echo behind RH0")
    # ... without segments left the header is ignored and the packet processed.
    mark = wire.mark()
    wire.send(stack.ip6() / IPv6ExtHdrRouting(type=0, addresses=["fd00:7a::5"], segleft=0) /
              ICMPv6EchoRequest(id=0x6b07))
    stack.expect_echo_reply(mark, 0x6b07, "echo reply behind a Routing header with no segments left")
    # RFC 8200 §4: an unknown Next Header gets a Parameter Problem code 1 pointing at it.
    mark = wire.mark()
    stack.send_dropped(stack.ip6(nh=253) / Raw(b"\0" * 8), "rx_unsupported_next_header")
    stack.expect_error(mark, ICMPv6ParamProblem, "Parameter Problem for Next Header 253", code=1, ptr=6)
    stack.expect("ipv6_parameter_problems_sent")


def ipv6_fragments(stack):
    wire = stack.wire
    message = stack.icmpv6_bytes(ICMPv6EchoRequest(id=0x6c01, data=b"f" * 40))  # 48 bytes
    # RFC 5722 §4: overlapping fragments discard the whole datagram, and its later fragments too.
    mark = wire.mark()
    wire.send(stack.fragment(0x6c01, 0, True, message[:24]))
    stack.send_dropped(stack.fragment(0x6c01, 16, True, message[16:32]), "ipv6_reassembly_dropped")
    stack.send_dropped(stack.fragment(0x6c01, 32, False, message[32:]), "ipv6_reassembly_dropped")
    # RFC 7112 §5 (RFC 8200 §4.5): a first fragment must hold the upper-layer header; a TCP one
    # with 8 bytes does not: Parameter Problem code 3.
    stack.send_dropped(stack.fragment(0x6c02, 0, True, b"\0" * 8, nh=6), "rx_malformed_ipv6")
    stack.expect_error(mark, ICMPv6ParamProblem, "Parameter Problem code 3 for a tiny first fragment", code=3)
    stack.expect("ipv6_parameter_problems_sent")
    wire.expect_silence(mark, lambda p: stack.from_stack(p) and ICMPv6EchoReply in p, "echo from overlapping fragments")
    # RFC 6980 §5: Neighbor Discovery never comes in fragments; a reassembled solicitation is dropped.
    group, group_mac = solicited_node(stack.ip)
    ns = bytes(IPv6(src=stack.peer_ip, dst=group) / ICMPv6ND_NS(tgt=stack.ip) /
               ICMPv6NDOptSrcLLAddr(lladdr=PEER_MAC))[40:]  # 32 bytes
    mark = wire.mark()
    for offset, more in ((0, True), (16, False)):
        wire.send(Ether(src=PEER_MAC, dst=group_mac) / IPv6(src=stack.peer_ip, dst=group, hlim=ND_HOP_LIMIT) /
                  IPv6ExtHdrFragment(nh=ICMPV6, offset=offset // 8, m=int(more), id=0x6c03) /
                  Raw(ns[offset:offset + 16]))
    stack.expect("rx_malformed_nd")
    stack.expect("ipv6_reassembly_completed")
    wire.expect_silence(mark, lambda p: stack.from_stack(p) and ICMPv6ND_NA in p, "NA to a fragmented NS")
    # An atomic fragment (RFC 6946) is a whole packet; two fragments that tile a datagram are one.
    mark = wire.mark()
    wire.send(stack.ip6() / IPv6ExtHdrFragment(nh=ICMPV6, offset=0, m=0, id=0x6c04) / ICMPv6EchoRequest(id=0x6c04))
    stack.expect_echo_reply(mark, 0x6c04, "echo reply to an atomic fragment")
    whole = stack.icmpv6_bytes(ICMPv6EchoRequest(id=0x6c05, data=b"w" * 40))
    mark = wire.mark()
    wire.send(stack.fragment(0x6c05, 24, False, whole[24:]))
    wire.send(stack.fragment(0x6c05, 0, True, whole[:24]))
    stack.expect_echo_reply(mark, 0x6c05, "echo reply to a request reassembled from two fragments")
    stack.expect("ipv6_reassembly_completed")
    # Never completed (RFC 8200 §4.5): freed when the reassembly timer fires; a Time Exceeded
    # (code 1) goes to the source only when the first fragment had come.
    mark = wire.mark()
    wire.send(stack.fragment(0x6c06, 0, True, message[:24]))
    wire.send(stack.fragment(0x6c07, 16, False, message[16:]))
    stack.expect("ipv6_reassembly_timeouts", 2)
    stack.expect_error(mark, ICMPv6TimeExceeded, "Time Exceeded (reassembly) for an incomplete datagram",
                       timeout=REASSEMBLY_WAIT, code=1)


def ipv6_neighbor_discovery(stack):
    wire = stack.wire
    group, group_mac = solicited_node(stack.ip)

    def ns(target=None, hlim=ND_HOP_LIMIT, options=None, dst=None, dst_mac=None):
        options = ICMPv6NDOptSrcLLAddr(lladdr=PEER_MAC) if options is None else options
        return (Ether(src=PEER_MAC, dst=dst_mac or group_mac) /
                IPv6(src=stack.peer_ip, dst=dst or group, hlim=hlim) / ICMPv6ND_NS(tgt=target or stack.ip) / options)

    def na_for(target):
        return lambda p: stack.from_stack(p) and ICMPv6ND_NA in p and p[ICMPv6ND_NA].tgt == target

    mark = wire.mark()
    # RFC 4861 §7.1.1: hop limit other than 255, an option of length 0, an option cut short, one
    # running past the message: all silently discarded.
    stack.send_dropped(ns(hlim=64), "rx_malformed_nd")
    stack.send_dropped(ns(hlim=0), "rx_malformed_nd")
    stack.send_dropped(ns(options=Raw(b"\x01\x00" + b"\0" * 6)), "rx_malformed_nd")
    stack.send_dropped(ns(options=Raw(b"\x01")), "rx_malformed_nd")
    stack.send_dropped(ns(options=Raw(b"\x01\x02" + b"\0" * 6)), "rx_malformed_nd")
    stack.send_dropped(stack.ip6(hlim=ND_HOP_LIMIT) / ICMPv6ND_NA(tgt=stack.peer_ip, S=1, O=1) /
                       Raw(b"\x02\x02" + b"\0" * 14), "rx_malformed_nd")  # target link-layer option length 2
    stack.send_dropped(stack.ip6(hlim=ND_HOP_LIMIT) / ICMPv6ND_RA(), "rx_malformed_nd")  # RFC 4861 §6.1.2: not link-local
    stack.send_dropped(stack.ip6(src="fe80::99", hlim=64) / ICMPv6ND_RA(), "rx_malformed_nd")
    wire.expect_silence(mark, na_for(stack.ip), "NA to an invalid NS")
    # RFC 4861 §7.2.3: a solicitation for an address that is not the stack's is not answered.
    foreign = "fd00:7a::55"
    foreign_group, foreign_mac = solicited_node(foreign)
    mark = wire.mark()
    stack.send_dropped(ns(target=foreign, dst=stack.ip, dst_mac=stack.mac), "nd_target_not_ours")
    wire.send(ns(target=foreign, dst=foreign_group, dst_mac=foreign_mac))
    wire.expect_silence(mark, na_for(foreign), "NA for an address that is not the stack's")
    # RFC 4862 §5.4.4: another node advertises the stack's own (preferred) address: counted and
    # logged; the stack keeps the address and goes on answering for it with its own MAC.
    wire.send(Ether(src=FOREIGN_MAC, dst="33:33:00:00:00:01") /
              IPv6(src="fe80::bad", dst="ff02::1", hlim=ND_HOP_LIMIT) /
              ICMPv6ND_NA(tgt=stack.ip, R=0, S=0, O=1) / ICMPv6NDOptDstLLAddr(lladdr=FOREIGN_MAC))
    stack.expect("nd_duplicate_address")
    mark = wire.mark()
    wire.send(ns())
    answer = wire.expect(mark, na_for(stack.ip), "NA for the stack's address after another node claimed it")
    if answer[Ether].src != stack.mac or (ICMPv6NDOptDstLLAddr in answer and
                                          answer[ICMPv6NDOptDstLLAddr].lladdr != stack.mac):
        raise Failure(f"stack answered for {stack.ip} with another MAC: {answer.summary()}")
    stack.expect("nd_advertisements_sent")


def ipv6_errors_and_tcp(stack, listen_port, closed_port):
    wire = stack.wire
    mark = wire.mark()
    # RFC 4443 §2.4 (e): an error is never answered, whatever it quotes.
    stack.send_dropped(stack.ip6() / ICMPv6DestUnreach(code=4) / Raw(b"\x60" + b"\0" * 9),
                       "rx_malformed_icmpv6")  # quote shorter than an IPv6 header
    stack.send_dropped(stack.ip6() / ICMPv6PacketTooBig(mtu=1280) / Raw(b"\x45" + b"\0" * 60),
                       "rx_malformed_icmpv6")  # quote is not IPv6
    # RFC 5927 §4.1: a Packet Too Big about a TCP segment of no connection changes nothing.
    quoted = IPv6(src=stack.ip, dst=stack.peer_ip) / TCP(sport=7999, dport=40200, flags="A", seq=12345)
    stack.send_dropped(stack.ip6() / ICMPv6PacketTooBig(mtu=1280) / Raw(bytes(quoted)),
                       "icmpv6_packet_too_big_unvalidated")
    stack.expect("icmpv6_packet_too_big_received")
    # About a packet someone else sent: not ours, ignored.
    other = IPv6(src="fd00:7a::77", dst=stack.peer_ip) / TCP(sport=1, dport=2)
    wire.send(stack.ip6() / ICMPv6DestUnreach(code=4) / Raw(bytes(other)))
    stack.expect("icmpv6_errors_received", 4)
    stack.send_dropped(stack.ip6() / ICMPv6TimeExceeded(cksum=0x1234) / Raw(bytes(quoted)), "rx_malformed_icmpv6")
    # TCP over IPv6: a bad checksum, and a data offset past the segment, draw no SYN-ACK.
    stack.send_dropped(stack.ip6() / TCP(sport=40201, dport=listen_port, flags="S", chksum=0xDEAD), "tcp_bad_checksum")
    stack.send_dropped(stack.ip6() / TCP(sport=40202, dport=listen_port, flags="S", dataofs=15), "rx_malformed_tcp")
    stack.expect_silence(mark, "ICMPv6 errors with garbage quotes, malformed TCP over IPv6")
    # A SYN to a closed port is still reset (RFC 9293 §3.10.7.1), and ping6 still answers.
    mark = wire.mark()
    wire.send(stack.ip6() / TCP(sport=40203, dport=closed_port, flags="S", seq=1000))
    rst = wire.expect(mark, lambda p: stack.from_stack(p) and TCP in p and p[TCP].dport == 40203,
                      "RST for a SYN over IPv6 to a closed port")
    if rst[TCP].flags != "RA" or rst[TCP].ack != 1001:
        raise Failure(f"SYN to closed port over IPv6: wanted RST,ACK ack 1001, got {rst[TCP].flags} ack {rst[TCP].ack}")
    stack.expect("tcp_rst_sent")
    mark = wire.mark()
    wire.send(stack.echo_request(0x6d01))
    stack.expect_echo_reply(mark, 0x6d01, "ping6 after the hostile IPv6 frames")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("group", choices=["malformed", "arp", "ipv6"])
    parser.add_argument("--iface", required=True)
    parser.add_argument("--stack-ip", required=True)
    parser.add_argument("--peer-ip", required=True, help="made-up host on the tap's subnet")
    parser.add_argument("--kernel-ip", required=True)
    parser.add_argument("--listen-port", type=int, required=True, help="the stack's echo listener")
    parser.add_argument("--closed-port", type=int, required=True)
    parser.add_argument("--stack-ip6", help="the stack's IPv6 address (group ipv6)")
    parser.add_argument("--peer-ip6", help="made-up IPv6 host on the tap's prefix (group ipv6)")
    args = parser.parse_args()
    wire = Wire(args.iface)
    try:
        if args.group == "ipv6":
            if not args.stack_ip6 or not args.peer_ip6:
                parser.error("group ipv6 needs --stack-ip6 and --peer-ip6")
            stack = Stack6(args, wire)
            ipv6_malformed_headers(stack)
            ipv6_extension_headers(stack)
            ipv6_neighbor_discovery(stack)
            ipv6_errors_and_tcp(stack, args.listen_port, args.closed_port)
            ipv6_fragments(stack)  # last: its never-completed datagrams wait for the reassembly timer
        elif args.group == "malformed":
            stack = Stack(args, wire)
            malformed_link_and_ip(stack)
            malformed_tcp(stack, args.listen_port)
            closed_port(stack, args.closed_port)
            established_connection(stack, args.listen_port)
            incomplete_fragments(stack)
        else:
            stack = Stack(args, wire)
            with open(f"/sys/class/net/{args.iface}/address") as f:
                kernel_mac = f.read().strip()
            arp_cases(stack, args.kernel_ip, kernel_mac)
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        wire.stop()
    for counter, n in sorted(stack.expected.items()):
        print(f"expect {counter} {n}")
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
