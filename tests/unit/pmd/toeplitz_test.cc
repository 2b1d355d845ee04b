// Toeplitz hashing against the Microsoft RSS verification suite and DPDK's rte_softrss, and the
// symmetric key's direction independence.
#include <gtest/gtest.h>
#include <rte_thash.h>

#include <arpa/inet.h>

#include <array>
#include <random>

#include "pmd/toeplitz.h"

namespace bypass::pmd {
namespace {

// The key of Microsoft's "Verifying the RSS Hash Calculation" examples.
const std::vector<uint8_t> kMicrosoftKey = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
                                            0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
                                            0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

constexpr uint32_t ip(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return uint32_t{a} << 24 | uint32_t{b} << 16 | uint32_t{c} << 8 | d;
}

TEST(Toeplitz, MicrosoftVerificationVectors) {
  // Destination 161.142.100.80:1766, source 66.9.149.187:2794 (the spec's first row); the hash
  // input is source then destination.
  EXPECT_EQ(toeplitz_ipv4_tuple(kMicrosoftKey, ip(66, 9, 149, 187), ip(161, 142, 100, 80), 2794, 1766), 0x51ccc178u);
  EXPECT_EQ(toeplitz_ipv4_tuple(kMicrosoftKey, ip(199, 92, 111, 2), ip(65, 69, 140, 83), 14230, 4739), 0xc626b0eau);
  EXPECT_EQ(toeplitz_ipv4_addresses(kMicrosoftKey, ip(66, 9, 149, 187), ip(161, 142, 100, 80)), 0x323e8fc2u);
}

std::array<uint8_t, 16> ip6(const char* text) {
  std::array<uint8_t, 16> a{};
  EXPECT_EQ(inet_pton(AF_INET6, text, a.data()), 1) << text;
  return a;
}

TEST(Toeplitz, MicrosoftIpv6VerificationVectors) {
  // The spec's IPv6 rows: destination 3ffe:2501:200:3::1 port 1766, source 3ffe:2501:200:1fff::7
  // port 2794; with ports (TCP) and addresses only.
  const auto src = ip6("3ffe:2501:200:1fff::7"), dst = ip6("3ffe:2501:200:3::1");
  EXPECT_EQ(toeplitz_ipv6_tuple(kMicrosoftKey, src, dst, 2794, 1766), 0x40207d3du);
  EXPECT_EQ(toeplitz_ipv6_addresses(kMicrosoftKey, src, dst), 0x2cc18cd5u);
  EXPECT_EQ(toeplitz_ipv6_tuple(kMicrosoftKey, ip6("3ffe:501:8::260:97ff:fe40:efab"), ip6("ff02::1"), 14230, 4739),
            0xdde51bbfu);
}

TEST(Toeplitz, Ipv6AgreesWithDpdkSoftRssAndIsSymmetric) {
  std::mt19937 rng(9);
  const std::vector<uint8_t> key = symmetric_rss_key(40);
  for (int i = 0; i < 1000; ++i) {
    std::array<uint8_t, 16> src, dst;
    for (auto& b : src) b = static_cast<uint8_t>(rng());
    for (auto& b : dst) b = static_cast<uint8_t>(rng());
    const uint16_t sport = static_cast<uint16_t>(rng()), dport = static_cast<uint16_t>(rng());
    // rte_softrss takes host-order words: the addresses as eight big-endian words, then the ports.
    uint32_t tuple[9];
    for (int w = 0; w < 4; ++w) {
      tuple[w] = uint32_t{src[4 * w]} << 24 | uint32_t{src[4 * w + 1]} << 16 | uint32_t{src[4 * w + 2]} << 8 | src[4 * w + 3];
      tuple[4 + w] = uint32_t{dst[4 * w]} << 24 | uint32_t{dst[4 * w + 1]} << 16 | uint32_t{dst[4 * w + 2]} << 8 | dst[4 * w + 3];
    }
    tuple[8] = uint32_t{sport} << 16 | dport;
    const uint32_t hash = toeplitz_ipv6_tuple(key, src, dst, sport, dport);
    EXPECT_EQ(hash, rte_softrss(tuple, 9, key.data()));
    EXPECT_EQ(hash, toeplitz_ipv6_tuple(key, dst, src, dport, sport));
  }
}

TEST(Toeplitz, AgreesWithDpdkSoftRss) {
  std::mt19937 rng(7);
  const std::vector<uint8_t> key = symmetric_rss_key(40);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t src = rng(), dst = rng();
    const uint16_t sport = static_cast<uint16_t>(rng()), dport = static_cast<uint16_t>(rng());
    uint32_t tuple[3] = {src, dst, uint32_t{sport} << 16 | dport};  // rte_softrss takes host-order words
    EXPECT_EQ(toeplitz_ipv4_tuple(key, src, dst, sport, dport), rte_softrss(tuple, 3, key.data()));
  }
}

TEST(Toeplitz, SymmetricKeyHashesBothDirectionsAlike) {
  const std::vector<uint8_t> key = symmetric_rss_key();
  std::mt19937 rng(11);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t a = rng(), b = rng();
    const uint16_t pa = static_cast<uint16_t>(rng()), pb = static_cast<uint16_t>(rng());
    EXPECT_EQ(toeplitz_ipv4_tuple(key, a, b, pa, pb), toeplitz_ipv4_tuple(key, b, a, pb, pa));
  }
  // The non-symmetric key does not have that property.
  EXPECT_NE(toeplitz_ipv4_tuple(kMicrosoftKey, 1, 2, 3, 4), toeplitz_ipv4_tuple(kMicrosoftKey, 2, 1, 4, 3));
}

TEST(Toeplitz, ShortKeyIsRejected) {
  const uint8_t input[12] = {};
  const std::vector<uint8_t> key(8);
  EXPECT_THROW(toeplitz_hash(key, input), std::invalid_argument);
}

TEST(RssSteering, RetaSpreadsOverWorkersAndFlowsSpreadToo) {
  const RssSteering steering(3, 128);
  ASSERT_EQ(steering.reta().size(), 128u);
  for (size_t i = 0; i < steering.reta().size(); ++i) EXPECT_EQ(steering.reta()[i], i % 3);
  std::vector<int> per_worker(3);
  for (uint16_t port = 1024; port < 1024 + 3000; ++port) {
    const unsigned w = steering.worker_for_ipv4(ip(10, 0, 0, 1), ip(10, 0, 0, 2), port, 80);
    ASSERT_LT(w, 3u);
    ++per_worker[w];
    EXPECT_EQ(w, steering.worker_for_ipv4(ip(10, 0, 0, 2), ip(10, 0, 0, 1), 80, port));
  }
  for (int count : per_worker) EXPECT_GT(count, 600);  // 1000 expected each; loose bound
}

}  // namespace
}  // namespace bypass::pmd
