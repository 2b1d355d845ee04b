// Mutated and truncated frames, with and without repaired checksums, must be dropped and
// counted (or handled) without crashing; the stacks keep working afterwards.
#include <random>

#include "tests/unit/inet/harness.h"

namespace bypass::inet::test {
namespace {

// Recompute the IPv4 header and TCP checksums so a mutation reaches the deeper parsers.
void repair_checksums(std::vector<uint8_t>& f) {
  if (f.size() < 34 || load_be16(f.data() + 12) != 0x0800) return;
  uint8_t* ip = f.data() + 14;
  size_t ihl = (ip[0] & 0xf) * 4u;
  if (ihl < 20 || 14 + ihl > f.size()) return;
  store_be16(ip + 10, 0);
  store_be16(ip + 10, internet_checksum(ip, ihl));
  size_t total = load_be16(ip + 2);
  if (ip[9] != 6 || total < ihl + 20 || 14 + total > f.size()) return;
  uint8_t* tcp = ip + ihl;
  store_be16(tcp + 16, 0);
  BufferList seg;
  seg.append_copy(tcp, total - ihl);
  Ipv4Address s{load_be32(ip + 12)}, d{load_be32(ip + 16)};
  store_be16(tcp + 16, tcp_checksum(s, d, seg));
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
