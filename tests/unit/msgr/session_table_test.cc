// SessionTable: the server's sessions and the two lookups accept_session makes per CLIENT_IDENT.
#include "msgr/session_table.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstdint>
#include <memory>

namespace bypass::msgr {
namespace {

// The table only keeps and compares connection pointers: distinct non-owning handles serve.
SessionTable::ConnectionRef handle(uintptr_t n) {
  return SessionTable::ConnectionRef(std::shared_ptr<void>(), reinterpret_cast<AsyncConnection*>(n * 64));
}

EntityAddrVec addrs(uint16_t port, uint32_t nonce) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return EntityAddrVec{{EntityAddr::msgr2(reinterpret_cast<const sockaddr*>(&sa), sizeof(sa), nonce)}};
}

TEST(SessionTable, FindsBySessionAndClientCookieExceptTheAsker) {
  SessionTable t;
  t.add(100, handle(1), 7, addrs(4000, 1));
  t.add(101, handle(2), 7, addrs(4000, 1));
  t.add(102, handle(3), 8, addrs(4001, 2));
  EXPECT_EQ(t.find(101), handle(2));
  EXPECT_EQ(t.find(999), nullptr);
  auto same = t.with_client_cookie(7, handle(2).get());
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0], handle(1));
  EXPECT_TRUE(t.with_client_cookie(9, nullptr).empty());
}

TEST(SessionTable, FindsEarlierIncarnationsOfTheSameAddresses) {
  SessionTable t;
  t.add(100, handle(1), 7, addrs(4000, 1));  // the old incarnation
  t.add(101, handle(2), 8, addrs(4000, 2));  // same port, another nonce: another entity
  t.add(102, handle(3), 9, addrs(4000, 1));  // the client again, new cookie
  auto old = t.with_addrs_not_cookie(addrs(4000, 1), 9, handle(3).get());
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0], handle(1));
  // A session of the asker's own cookie is never an earlier incarnation, whoever asks.
  old = t.with_addrs_not_cookie(addrs(4000, 1), 9, nullptr);
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0], handle(1));
}

// Clients that listen nowhere all send a port-0 address: it names no entity, so none of them
// retires another.
TEST(SessionTable, AddressesWithoutPortMatchNothing) {
  SessionTable t;
  t.add(100, handle(1), 7, addrs(0, 0));
  t.add(101, handle(2), 8, addrs(0, 0));
  EXPECT_TRUE(t.with_addrs_not_cookie(addrs(0, 0), 9, nullptr).empty());
  EXPECT_TRUE(t.with_addrs_not_cookie(EntityAddrVec{}, 9, nullptr).empty());
  t.remove(handle(1).get());
  EXPECT_EQ(t.find(101), handle(2));
}

TEST(SessionTable, RemoveForgetsEveryIndex) {
  SessionTable t;
  t.add(100, handle(1), 7, addrs(4000, 1));
  t.add(101, handle(2), 8, addrs(4000, 1));
  t.remove(handle(1).get());
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.find(100), nullptr);
  EXPECT_TRUE(t.with_client_cookie(7, nullptr).empty());
  auto left = t.with_addrs_not_cookie(addrs(4000, 1), 9, nullptr);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], handle(2));
  t.clear();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_TRUE(t.with_client_cookie(8, nullptr).empty());
}

// Thousands of sessions, some sharing a hash bucket or a port: each lookup still finds exactly
// its own, and removing them all leaves the indexes empty.
TEST(SessionTable, ThousandsOfSessionsStayIndexed) {
  SessionTable t;
  for (uint32_t i = 0; i < 4096; ++i) t.add(1000 + i, handle(i + 1), 50000 + i, addrs(static_cast<uint16_t>(10000 + i), i));
  for (uint32_t i = 0; i < 4096; i += 97) {
    EXPECT_EQ(t.with_client_cookie(50000 + i, nullptr).size(), 1u);
    EXPECT_EQ(t.with_addrs_not_cookie(addrs(static_cast<uint16_t>(10000 + i), i), 1, nullptr).size(), 1u);
  }
  for (uint32_t i = 0; i < 4096; ++i) t.remove(handle(i + 1).get());
  EXPECT_EQ(t.size(), 0u);
}

}  // namespace
}  // namespace bypass::msgr
