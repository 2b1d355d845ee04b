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
segments on an established connection, fragments that never complete) and `arp` (duplicate and
gratuitous ARP, an ARP claim on the stack's own address, a truncated ARP packet).
"""
import argparse
import collections
import sys
import threading
import time

from scapy.all import ARP, ICMP, IP, TCP, AsyncSniffer, Ether, Raw, conf, sendp

conf.verb = 0

PEER_MAC = "02:00:00:68:00:99"
FOREIGN_MAC = "02:00:00:68:0b:ad"
BROADCAST = "ff:ff:ff:ff:ff:ff"
ANSWER_WAIT = 2.0  # seconds to wait for an answer the stack must send
SILENCE_WAIT = 0.3  # seconds to watch for an answer the stack must not send


class Failure(Exception):
    pass


class Wire:
    """Sends frames on the tap and collects every frame the stack sends to the peer."""

    def __init__(self, iface):
        self.iface = iface
        self.frames = []
        self.lock = threading.Lock()
        started = threading.Event()
        self.sniffer = AsyncSniffer(iface=iface, store=False, prn=self._collect,
                                    lfilter=lambda p: Ether in p and p[Ether].src != PEER_MAC
                                    and p[Ether].dst in (PEER_MAC, BROADCAST),
                                    started_callback=started.set)
        self.sniffer.start()
        if not started.wait(5):
            raise Failure(f"sniffer on {iface} did not start within 5 s")

    def _collect(self, frame):
        with self.lock:
            self.frames.append(frame)

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
    answer = wire.expect(mark, lambda p: ARP in p and p[ARP].op == 2 and p[ARP].psrc == stack.ip,
                         "ARP reply after a claim on the stack's address")
    if answer[ARP].hwsrc != stack.mac:
        raise Failure(f"stack answered with {answer[ARP].hwsrc}, it was {stack.mac}")
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("group", choices=["malformed", "arp"])
    parser.add_argument("--iface", required=True)
    parser.add_argument("--stack-ip", required=True)
    parser.add_argument("--peer-ip", required=True, help="made-up host on the tap's subnet")
    parser.add_argument("--kernel-ip", required=True)
    parser.add_argument("--listen-port", type=int, required=True, help="the stack's echo listener")
    parser.add_argument("--closed-port", type=int, required=True)
    args = parser.parse_args()
    wire = Wire(args.iface)
    try:
        stack = Stack(args, wire)
        if args.group == "malformed":
            malformed_link_and_ip(stack)
            malformed_tcp(stack, args.listen_port)
            closed_port(stack, args.closed_port)
            established_connection(stack, args.listen_port)
            incomplete_fragments(stack)
        else:
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
