// TupleTable (the TCP connection table): a randomized comparison with std::unordered_map, probe
// runs that wrap around the array end, erasure in the middle of runs (backward shift), growth.
#include "stack/inet/tuple_table.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace bypass::inet {
namespace {

FourTuple tuple_of(uint32_t n) {
  // Clustered keys as a busy listener sees them: one local address and port, few peers, ports in a run.
  return FourTuple{Ipv4Address{0x0a000001}, 7000, Ipv4Address{0x0a000100 + (n >> 16)}, static_cast<uint16_t>(n)};
}

TEST(TupleTable, MatchesUnorderedMapUnderRandomInsertEraseFind) {
  TupleTable<int> table(8);
  std::unordered_map<FourTuple, int, FourTupleHash> reference;
  std::mt19937 rng(7);
  for (int step = 0; step < 200000; ++step) {
    const uint32_t key = rng() % 3000;
    const int op = static_cast<int>(rng() % 3);
    if (op == 0) {
      const bool inserted = table.insert(tuple_of(key), step);
      EXPECT_EQ(inserted, reference.emplace(tuple_of(key), step).second) << step;
    } else if (op == 1) {
      const int taken = table.take(tuple_of(key));
      auto it = reference.find(tuple_of(key));
      EXPECT_EQ(taken, it == reference.end() ? 0 : it->second) << step;
      if (it != reference.end()) reference.erase(it);
    } else {
      const int* found = table.find(tuple_of(key));
      auto it = reference.find(tuple_of(key));
      ASSERT_EQ(found != nullptr, it != reference.end()) << step;
      if (found) {
        EXPECT_EQ(*found, it->second);
      }
    }
    ASSERT_EQ(table.size(), reference.size());
  }
  // Everything left is reachable, and nothing else is there.
  size_t visited = 0;
  table.for_each([&](const FourTuple& key, const int& value) {
    ++visited;
    auto it = reference.find(key);
    ASSERT_NE(it, reference.end());
    EXPECT_EQ(value, it->second);
  });
  EXPECT_EQ(visited, reference.size());
  EXPECT_LE(table.size() * 2, table.capacity());
}

TEST(TupleTable, EraseInsideWrappedProbeRunsKeepsEveryKeyReachable) {
  // Fill to the load limit of a small array so runs are long and cross the end of the array, then
  // erase each key in turn and check every other one is still found.
  for (uint32_t victim = 0; victim < 32; ++victim) {
    TupleTable<uint32_t> table(64);
    for (uint32_t k = 0; k < 32; ++k) ASSERT_TRUE(table.insert(tuple_of(k * 977), k + 1));
    ASSERT_EQ(table.capacity(), 64u);
    EXPECT_EQ(table.take(tuple_of(victim * 977)), victim + 1);
    for (uint32_t k = 0; k < 32; ++k) {
      const uint32_t* found = table.find(tuple_of(k * 977));
      if (k == victim) {
        EXPECT_EQ(found, nullptr);
      } else {
        ASSERT_NE(found, nullptr) << "victim " << victim << " lost " << k;
        EXPECT_EQ(*found, k + 1);
      }
    }
  }
}

TEST(TupleTable, SteadyOpenCloseNeverGrowsTheArray) {
  // A server that opens and closes connections at a steady level: the slot array settles at the
  // first power of two above twice the peak and never allocates again.
  TupleTable<int> table(8);
  for (uint32_t k = 0; k < 1000; ++k) table.insert(tuple_of(k), 1);
  const size_t capacity = table.capacity();
  EXPECT_EQ(capacity, 2048u);
  for (uint32_t k = 1000; k < 100000; ++k) {
    ASSERT_EQ(table.take(tuple_of(k - 1000)), 1);
    ASSERT_TRUE(table.insert(tuple_of(k), 1));
  }
  EXPECT_EQ(table.capacity(), capacity);
  EXPECT_EQ(table.size(), 1000u);
  EXPECT_FALSE(table.insert(tuple_of(99999), 2));  // already there: untouched
  EXPECT_EQ(*table.find(tuple_of(99999)), 1);
  EXPECT_EQ(table.drain().size(), 1000u);
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.find(tuple_of(99999)), nullptr);
}

}  // namespace
}  // namespace bypass::inet
