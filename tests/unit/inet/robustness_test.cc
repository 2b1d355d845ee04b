// Mutated and truncated frames, with and without repaired checksums, must be dropped and
// counted (or handled) without crashing; the stacks keep working afterwards.
#include <random>

#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

// Recompute the IPv4 header and TCP checksums so a mutation reaches the deeper parsers.
void repair_checksums(std::vector<uint8_t>& f) {
  const EthernetView ethernet(f.data(), f.size());
  if (ethernet.check_len() || ethernet.ethertype() != static_cast<uint16_t>(EtherType::Ipv4)) return;
  // Only the version and IHL need to be sane: the rest is what the mutation made of it.
  const Ipv4View ip(ethernet.payload(), f.size() - EthernetHeader::kLength);
  if (ip.size() < Ipv4Header::kMinLength || ip.header_length() < Ipv4Header::kMinLength ||
      ip.header_length() > ip.size())
    return;
  ip.set_checksum(0);
  ip.set_checksum(internet_checksum(ip.data(), ip.header_length()));
  const size_t total = ip.total_length();
  if (ip.protocol() != static_cast<uint8_t>(IpProtocol::Tcp) || total < ip.header_length() + TcpHeader::kMinLength ||
      total > ip.size())
    return;
  const TcpView tcp(ip.payload(), total - ip.header_length());
  tcp.set_checksum(0);
  BufferList seg;
  seg.append_copy(tcp.data(), tcp.size());
  tcp.set_checksum(tcp_checksum(ip.source(), ip.destination(), seg));
}

TEST(Robustness, MutatedFramesNeverCrash) {
  TwoHosts hosts(91);
  auto [client, server] = connect_pair(hosts);
  ASSERT_TRUE(client && server);
  std::vector<std::pair<int, std::vector<uint8_t>>> captured;
  hosts.wire.tap = [&](int from, std::vector<uint8_t>& bytes) {
    if (captured.size() < 2000) captured.emplace_back(from, bytes);
    return true;
  };
  ASSERT_TRUE(transfer(hosts, client, server, 1 << 20, 60s).complete);
  BufferList back = pattern(0, 100000);
  server->send(back);
  hosts.run_until([&] { return client->read().length() > 0 && server->send_space() > 0; }, 5s);
  hosts.wire.tap = nullptr;
  ASSERT_GT(captured.size(), 100u);

  std::mt19937_64 rng(5);
  const int kIterations = 60000;
  for (int i = 0; i < kIterations; ++i) {
    auto [from, frame] = captured[rng() % captured.size()];
    switch (rng() % 5) {
      case 0:  // flip a few bits anywhere
        for (int k = 0, n = 1 + rng() % 4; k < n; ++k) frame[rng() % frame.size()] ^= 1u << (rng() % 8);
        break;
      case 1:  // truncate
        frame.resize(rng() % frame.size());
        break;
      case 2:  // garbage in the header area (IP header, TCP header and options)
        for (int k = 0, n = 1 + rng() % 6; k < n; ++k)
          frame[14 + rng() % std::min<size_t>(frame.size() - 14, 80)] = static_cast<uint8_t>(rng());
        break;
      case 3:  // random TCP option bytes
        if (frame.size() > 60)
          for (size_t k = 54; k < 54 + rng() % 20 && k < frame.size(); ++k) frame[k] = static_cast<uint8_t>(rng());
        break;
      default:  // sequence/ack/flags scramble
        if (frame.size() > 54) {
          store_be32(frame.data() + 38, static_cast<uint32_t>(rng()));
          if (rng() % 2) store_be32(frame.data() + 42, static_cast<uint32_t>(rng()));
          frame[47] = static_cast<uint8_t>(rng());
        }
        break;
    }
    if (rng() % 2) repair_checksums(frame);
    Packet p;
    if (!frame.empty()) p.data.append(BufferSegment::copy_of(frame.data(), frame.size()));
    (from == 0 ? hosts.b : hosts.a)->receive(std::move(p));
    if (i % 64 == 0) hosts.run_for(1ms);
  }
  InetStats& sa = hosts.a->stats();
  InetStats& sb = hosts.b->stats();
  uint64_t rejected = sa.rx_malformed_ethernet + sb.rx_malformed_ethernet + sa.rx_malformed_ipv4 +
                      sb.rx_malformed_ipv4 + sa.tcp_bad_checksum + sb.tcp_bad_checksum +
                      sa.rx_malformed_tcp + sb.rx_malformed_tcp + sa.rx_not_for_us + sb.rx_not_for_us;
  EXPECT_GT(rejected, uint64_t{kIterations / 4});
  // The stacks still work: a fresh connection transfers data intact.
  hosts.run_for(200s);  // let TIME-WAITs and timers settle
  auto [c2, s2] = connect_pair(hosts, 8080);
  ASSERT_TRUE(c2 && s2);
  EXPECT_TRUE(transfer(hosts, c2, s2, 256 * 1024, 60s).complete);
}

}  // namespace
}  // namespace bypass::inet::test
