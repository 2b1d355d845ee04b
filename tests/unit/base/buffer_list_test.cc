#include "base/buffer_list.h"

#include <gtest/gtest.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <numeric>
#include <string>

namespace bypass {
namespace {

std::string pattern(size_t n, char seed = 'a') {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i % 23);
  return s;
}

// Three segments of different storage: "hello", " big ", "world".
BufferList three_segments() {
  BufferList bl;
  bl.append(BufferSegment::copy_of("hello", 5));
  bl.append(BufferSegment::copy_of(" big ", 5));
  bl.append(BufferSegment::copy_of("world", 5));
  return bl;
}

TEST(BufferList, AppendSharesSegmentsAndCopyCopiesBytes) {
  BufferSegment seg = BufferSegment::copy_of("abc", 3);
  BufferList bl;
  bl.append(seg);
  EXPECT_EQ(seg.use_count(), 2);
  EXPECT_EQ(bl.segments().front().data(), seg.data());
  bl.append_copy("defg");
  EXPECT_EQ(bl.length(), 7u);
  EXPECT_EQ(bl.to_string(), "abcdefg");
  // Small copies share one tail block.
  for (int i = 0; i < 100; ++i) bl.append_copy("x");
  EXPECT_EQ(bl.segment_count(), 2u);
  EXPECT_EQ(bl.length(), 107u);
  EXPECT_TRUE(bl.contents_equal("abcdefg" + std::string(100, 'x')));
}

TEST(BufferList, AppendCopyLargerThanABlockSpillsIntoNewBlocks) {
  BufferList bl;
  const std::string big = pattern(3 * BufferList::append_block + 17);
  bl.append_copy("z");
  bl.append_copy(big);
  EXPECT_EQ(bl.length(), big.size() + 1);
  EXPECT_EQ(bl.to_string(), "z" + big);
}

TEST(BufferList, AppendHoleIsWritableAndContiguous) {
  BufferList bl;
  bl.append_copy("head");
  char* hole = bl.append_hole(10);
  ASSERT_NE(hole, nullptr);
  std::memcpy(hole, "0123456789", 10);
  char* big = bl.append_hole(2 * BufferList::append_block);
  std::memset(big, 'q', 2 * BufferList::append_block);
  EXPECT_EQ(bl.to_string(), "head0123456789" + std::string(2 * BufferList::append_block, 'q'));
  EXPECT_EQ(bl.append_hole(0), nullptr);
}

TEST(BufferList, TailRoomIsNotSharedBetweenCopies) {
  BufferList original;
  original.append_copy("shared");
  BufferList copy = original;
  BufferList assigned;
  assigned = original;
  original.append_copy("-original");
  copy.append_copy("-copy");
  assigned.append_copy("-assigned");
  EXPECT_EQ(original.to_string(), "shared-original");
  EXPECT_EQ(copy.to_string(), "shared-copy");
  EXPECT_EQ(assigned.to_string(), "shared-assigned");
  // A sub-list or spliced-out part must not scribble into the source's tail room either.
  BufferList part = original.sub(0, 6);
  part.append_copy("!");
  EXPECT_EQ(original.to_string(), "shared-original");
  BufferList front;
  original.splice_front(6, front);
  front.append_copy("?");
  EXPECT_EQ(front.to_string(), "shared?");
  EXPECT_EQ(original.to_string(), "-original");
}

TEST(BufferList, TrimFrontAcrossSegments) {
  BufferList bl = three_segments();
  bl.trim_front(3);
  EXPECT_EQ(bl.to_string(), "lo big world");
  bl.trim_front(2);  // exactly a segment boundary
  EXPECT_EQ(bl.segment_count(), 2u);
  EXPECT_EQ(bl.to_string(), " big world");
  bl.trim_front(7);
  EXPECT_EQ(bl.to_string(), "rld");
  EXPECT_THROW(bl.trim_front(4), std::out_of_range);
  bl.trim_front(3);
  EXPECT_TRUE(bl.empty());
  EXPECT_EQ(bl.segment_count(), 0u);
}

TEST(BufferList, TruncateKeepsAPrefix) {
  BufferList bl = three_segments();
  bl.truncate(12);
  EXPECT_EQ(bl.to_string(), "hello big wo");
  bl.truncate(10);  // on a boundary
  EXPECT_EQ(bl.segment_count(), 2u);
  EXPECT_EQ(bl.to_string(), "hello big ");
  bl.truncate(100);  // longer than the list: no change
  EXPECT_EQ(bl.length(), 10u);
  bl.truncate(0);
  EXPECT_TRUE(bl.empty());
  // Appending after a truncate must not resurrect the dropped bytes.
  BufferList tail;
  tail.append_copy("abcdef");
  tail.truncate(3);
  tail.append_copy("XY");
  EXPECT_EQ(tail.to_string(), "abcXY");
}

TEST(BufferList, SpliceFrontMovesViewsWithoutCopying) {
  BufferList bl = three_segments();
  const char* world = bl.segments().back().data();
  BufferList out;
  out.append_copy(">");
  bl.splice_front(7, out);
  EXPECT_EQ(out.to_string(), ">hello b");
  EXPECT_EQ(bl.to_string(), "ig world");
  EXPECT_EQ(bl.segments().back().data(), world);
  EXPECT_THROW(bl.splice_front(9, out), std::out_of_range);
  bl.splice_front(bl.length(), out);
  EXPECT_TRUE(bl.empty());
  EXPECT_EQ(out.to_string(), ">hello big world");
}

TEST(BufferList, SubViewsARange) {
  BufferList bl = three_segments();
  EXPECT_EQ(bl.sub(3, 9).to_string(), "lo big wo");
  EXPECT_EQ(bl.sub(3, 9).segment_count(), 3u);
  EXPECT_EQ(bl.sub(5, 5).segment_count(), 1u);
  EXPECT_EQ(bl.sub(5, 5).segments().front().data(), bl.segments()[1].data());
  EXPECT_TRUE(bl.sub(15, 0).empty());
  EXPECT_THROW(bl.sub(10, 6), std::out_of_range);
}

// The way TCP reads its send buffer: segments cut front to back, the acknowledged front trimmed
// (sometimes mid-segment), more appended, now and then a retransmission from further back. The
// hinted sub must always equal the plain one.
TEST(BufferList, SubFromAPositionMatchesSubFromTheFront) {
  BufferList bl;
  std::string mirror;
  BufferList::Position position;
  size_t cursor = 0;  // next byte to "send", relative to the front
  uint32_t rng = 12345;
  auto next = [&rng](uint32_t bound) {
    rng = rng * 1103515245u + 12345u;
    return (rng >> 8) % bound;
  };
  for (int round = 0; round < 2000; ++round) {
    const size_t add = 1 + next(900);
    const std::string bytes = pattern(add, static_cast<char>('a' + round % 20));
    bl.append(BufferSegment::copy_of(bytes.data(), bytes.size()));
    mirror += bytes;
    while (cursor < bl.length() && next(4) != 0) {
      const size_t len = std::min<size_t>(1 + next(700), bl.length() - cursor);
      const BufferList cut = bl.sub(cursor, len, position);
      ASSERT_EQ(cut.to_string(), mirror.substr(cursor, len)) << "round " << round;
      ASSERT_TRUE(cut.contents_equal(bl.sub(cursor, len)));
      cursor += len;
    }
    if (next(5) == 0 && cursor > 0) {  // retransmit from somewhere already sent
      const size_t from = next(static_cast<uint32_t>(cursor));
      const size_t len = std::min<size_t>(1 + next(700), bl.length() - from);
      ASSERT_EQ(bl.sub(from, len, position).to_string(), mirror.substr(from, len));
    }
    if (next(2) == 0 && cursor > 0) {  // an ACK for part of what was sent
      const size_t acked = 1 + next(static_cast<uint32_t>(cursor));
      position.shift(bl.trim_front(acked), acked);
      mirror.erase(0, acked);
      cursor -= acked;
    }
  }
}

TEST(BufferList, TrimFrontCountsWholeSegments) {
  BufferList bl = three_segments();
  EXPECT_EQ(bl.trim_front(3), 0u);
  EXPECT_EQ(bl.trim_front(7), 2u);  // "lo" and " big "
  EXPECT_EQ(bl.to_string(), "world");
}

TEST(BufferList, CopyOutAndContentsEqual) {
  BufferList bl = three_segments();
  char buf[8] = {};
  bl.copy_out(4, 7, buf);
  EXPECT_EQ(std::string(buf, 7), "o big w");
  EXPECT_THROW(bl.copy_out(10, 6, buf), std::out_of_range);
  // Inside the first segment (the inline path), up to its last byte, and empty at its end.
  bl.copy_out(1, 4, buf);
  EXPECT_EQ(std::string(buf, 4), "ello");
  bl.copy_out(0, 5, buf);
  EXPECT_EQ(std::string(buf, 5), "hello");
  bl.copy_out(5, 0, buf);
  bl.copy_out(15, 0, buf);
  EXPECT_THROW(bl.copy_out(16, 0, buf), std::out_of_range);
  EXPECT_THROW(bl.copy_out(SIZE_MAX, 2, buf), std::out_of_range) << "offset + len wraps around";
  EXPECT_THROW(BufferList().copy_out(0, 1, buf), std::out_of_range);
  BufferList flat;
  flat.append_copy("hello big world");
  EXPECT_TRUE(bl.contents_equal(flat));
  EXPECT_FALSE(bl.contents_equal("hello big worle"));
  EXPECT_FALSE(bl.contents_equal("hello"));
}

TEST(BufferList, CStrFlattensOnlyWhenNeeded) {
  BufferList one;
  one.append_copy("single");
  const char* before = one.segments().front().data();
  EXPECT_EQ(one.c_str(), before);
  BufferList bl = three_segments();
  char* flat = bl.c_str();
  EXPECT_EQ(bl.segment_count(), 1u);
  EXPECT_EQ(std::string(flat, bl.length()), "hello big world");
  BufferList empty;
  EXPECT_EQ(empty.c_str(), nullptr);
}

TEST(BufferList, ToIovecFromAnOffset) {
  BufferList bl = three_segments();
  struct iovec iov[8];
  ASSERT_EQ(bl.to_iovec(iov, 8), 3);
  EXPECT_EQ(iov[0].iov_len, 5u);
  ASSERT_EQ(bl.to_iovec(iov, 8, 7), 2);
  EXPECT_EQ(std::string(static_cast<char*>(iov[0].iov_base), iov[0].iov_len), "ig ");
  EXPECT_EQ(std::string(static_cast<char*>(iov[1].iov_base), iov[1].iov_len), "world");
  ASSERT_EQ(bl.to_iovec(iov, 1, 0), 1);
  EXPECT_EQ(bl.to_iovec(iov, 8, 15), 0);
}

TEST(BufferList, WrapReleaseRunsExactlyOnceWhenTheLastViewGoes) {
  static char storage[64] = "foreign memory owned by a transport";
  int releases = 0;
  {
    BufferList a;
    a.append(BufferSegment::wrap(
        storage, 35, [](void* count, BufferStorage*) { ++*static_cast<int*>(count); }, &releases));
    EXPECT_EQ(releases, 0);
    BufferList b = a;
    BufferList part = a.sub(8, 6);
    a.clear();
    EXPECT_EQ(releases, 0);
    b.trim_front(35);
    EXPECT_EQ(releases, 0);
    EXPECT_EQ(part.to_string(), "memory");
  }
  EXPECT_EQ(releases, 1);
  // borrow() never releases and never frees.
  BufferList borrowed;
  borrowed.append(BufferSegment::borrow(storage, 7));
  EXPECT_EQ(borrowed.to_string(), "foreign");
}

TEST(BufferList, MoveLeavesTheSourceEmpty) {
  BufferList a = three_segments();
  BufferList b = std::move(a);
  EXPECT_EQ(b.to_string(), "hello big world");
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): documented state
  BufferList c;
  c.append_copy("<");
  c.append(std::move(b));
  EXPECT_EQ(c.to_string(), "<hello big world");
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  c.prepend(BufferSegment::copy_of("[", 1));
  EXPECT_EQ(c.to_string(), "[<hello big world");
}

TEST(BufferList, AppendingAListToItselfDoublesIt) {
  BufferList bl = three_segments();
  bl.append(bl);
  EXPECT_EQ(bl.to_string(), "hello big worldhello big world");
  EXPECT_EQ(bl.segment_count(), 6u);
}

TEST(BufferList, Crc32cKnownVectors) {
  // CRC-32C check value (RFC 3720 B.4 / the "123456789" catalogue value) with the usual
  // pre- and post-inversion done by the caller.
  EXPECT_EQ(crc32c(0xFFFFFFFFu, "123456789", 9) ^ 0xFFFFFFFFu, 0xE3069283u);
  // RFC 3720 B.4: 32 bytes of zeros -> 0x8A9136AA.
  const unsigned char zeros[32] = {};
  EXPECT_EQ(crc32c(0xFFFFFFFFu, zeros, 32) ^ 0xFFFFFFFFu, 0x8A9136AAu);
  unsigned char ones[32];
  std::memset(ones, 0xFF, sizeof(ones));
  EXPECT_EQ(crc32c(0xFFFFFFFFu, ones, 32) ^ 0xFFFFFFFFu, 0x62A8AB43u);
  EXPECT_EQ(crc32c(1234u, nullptr, 0), 1234u);
}

// Bit-at-a-time CRC-32C (reflected polynomial 0x82F63B78), the definition the fast paths must match.
uint32_t reference_crc32c(uint32_t crc, const unsigned char* p, size_t len) {
  for (size_t i = 0; i < len; ++i) {
    crc ^= p[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return crc;
}

// Short ranges (preambles, message headers) take an inline SSE4.2 path, longer ones ISA-L: every
// length on both sides of the switch, at every alignment within a word, chains to the definition.
TEST(BufferList, Crc32cMatchesDefinitionAcrossLengthsAndAlignments) {
  const std::string bytes = pattern(700, '\x81');
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t len = 0; len + offset <= 600; ++len) {
      for (uint32_t seed : {0u, 0xFFFFFFFFu, 0x9E3779B9u}) {
        ASSERT_EQ(crc32c(seed, p + offset, len), reference_crc32c(seed, p + offset, len))
            << "offset " << offset << " length " << len << " seed " << seed;
      }
    }
  }
}

#if defined(__x86_64__)
// XINUSE (XGETBV with ECX=1): which register state components are not in their initial state.
__attribute__((target("xsave"))) uint64_t vector_state_in_use() { return __builtin_ia32_xgetbv(1); }

// ISA-L's AVX-512 crc kernel returns with the upper halves of the vector registers dirty; left so,
// every legacy-SSE instruction after it pays the SSE/AVX transition (it doubled the messenger's
// CPU per message). crc32c() must hand the registers back clean.
TEST(BufferList, Crc32cLeavesNoDirtyUpperVectorState) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__builtin_cpu_supports("avx") || !__get_cpuid_count(0xd, 1, &eax, &ebx, &ecx, &edx) || !(eax & (1u << 2)))
    GTEST_SKIP() << "no AVX or no XGETBV(1) on this CPU";
  constexpr uint64_t kYmmUpper = 1u << 2, kZmmUpper = 1u << 6;
  const std::string bytes = pattern(4096);
  const uint32_t crc = crc32c(0xFFFFFFFFu, bytes.data(), bytes.size());
  const uint64_t in_use = vector_state_in_use();
  EXPECT_EQ(in_use & (kYmmUpper | kZmmUpper), 0u) << "XINUSE " << in_use << " after crc32c " << crc;
}
#endif

TEST(BufferList, ChainedCrcOverSegmentsEqualsFlatCrc) {
  const std::string flat = pattern(10'000);
  BufferList bl;
  size_t at = 0;
  for (size_t piece : {1u, 7u, 4096u, 3u, 999u, 2000u}) {
    bl.append(BufferSegment::copy_of(flat.data() + at, piece));
    at += piece;
  }
  bl.append_copy(flat.data() + at, flat.size() - at);
  ASSERT_EQ(bl.to_string(), flat);
  for (uint32_t seed : {0u, 0xFFFFFFFFu, 0x12345678u}) {
    EXPECT_EQ(bl.crc32c(seed), crc32c(seed, flat.data(), flat.size())) << "seed " << seed;
  }
  EXPECT_NE(bl.crc32c(0), bl.sub(1, flat.size() - 1).crc32c(0));
}

// remember_crc32c: the remembered value is what crc32c() answers for that seed (a deliberately
// wrong one proves no pass was made); every change through the list forgets it, copies, moves and
// an append into an empty list keep it.
TEST(BufferList, RememberedCrcIsUsedUntilTheListChanges) {
  const std::string flat = pattern(5000);
  const uint32_t real = crc32c(0xFFFFFFFFu, flat.data(), flat.size());
  const uint32_t fake = real ^ 0x5a5a5a5au;
  auto remembering = [&] {
    BufferList bl;
    bl.append(BufferSegment::copy_of(flat.data(), 3000));
    bl.append(BufferSegment::copy_of(flat.data() + 3000, 2000));
    bl.remember_crc32c(0xFFFFFFFFu, fake);
    return bl;
  };
  BufferList bl = remembering();
  EXPECT_EQ(bl.crc32c(0xFFFFFFFFu), fake);
  EXPECT_EQ(bl.crc32c(0), crc32c(0, flat.data(), flat.size())) << "another seed computes";

  const BufferList copy(bl);
  EXPECT_EQ(copy.crc32c(0xFFFFFFFFu), fake);
  BufferList assigned;
  assigned = bl;
  EXPECT_EQ(assigned.crc32c(0xFFFFFFFFu), fake);
  BufferList moved(std::move(assigned));
  EXPECT_EQ(moved.crc32c(0xFFFFFFFFu), fake);
  EXPECT_EQ(assigned.crc32c(0xFFFFFFFFu), 0xFFFFFFFFu) << "the moved-from list is empty and forgot";
  BufferList into_empty;
  into_empty.append(bl);
  EXPECT_EQ(into_empty.crc32c(0xFFFFFFFFu), fake);
  BufferList moved_into_empty;
  moved_into_empty.append(BufferList(bl));
  EXPECT_EQ(moved_into_empty.crc32c(0xFFFFFFFFu), fake);

  // Every change through the list forgets.
  const std::vector<std::pair<const char*, void (*)(BufferList&)>> changes = {
      {"append segment", [](BufferList& l) { l.append(BufferSegment::copy_of("x", 1)); }},
      {"append list", [](BufferList& l) { BufferList x; x.append_copy("x"); l.append(x); }},
      {"append moved list", [](BufferList& l) { BufferList x; x.append_copy("x"); l.append(std::move(x)); }},
      {"prepend", [](BufferList& l) { l.prepend(BufferSegment::copy_of("x", 1)); }},
      {"append_copy", [](BufferList& l) { l.append_copy("x"); }},
      {"append_hole", [](BufferList& l) { *l.append_hole(1) = 'x'; }},
      {"trim_front", [](BufferList& l) { l.trim_front(1); }},
      {"truncate", [](BufferList& l) { l.truncate(l.length() - 1); }},
      {"splice_front", [](BufferList& l) { BufferList out; l.splice_front(1, out); }},
      {"c_str", [](BufferList& l) { l.c_str()[0] ^= 1; }},
      {"forget_crc32c", [](BufferList& l) { l.forget_crc32c(); }},
  };
  for (const auto& [what, change] : changes) {
    BufferList changed = remembering();
    change(changed);
    const std::string now = changed.to_string();
    EXPECT_EQ(changed.crc32c(0xFFFFFFFFu), crc32c(0xFFFFFFFFu, now.data(), now.size())) << what;
  }
  BufferList cleared = remembering();
  cleared.clear();
  EXPECT_EQ(cleared.crc32c(0xFFFFFFFFu), 0xFFFFFFFFu);
  // A list appended to one that already holds bytes does not lend it its value.
  BufferList longer;
  longer.append_copy("abc");
  longer.append(bl);
  const std::string both = longer.to_string();
  EXPECT_EQ(longer.crc32c(0xFFFFFFFFu), crc32c(0xFFFFFFFFu, both.data(), both.size()));
}

}  // namespace
}  // namespace bypass
