// The checksum kernels (scalar, SSE2, AVX2) and the copy-and-sum path against a plain RFC 1071
// reference: random lengths, alignments and piece boundaries, and all-0xff data (the most carries).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "stack/inet/wire/checksum.h"

namespace bypass::inet {
namespace {

uint16_t reference_fold(const uint8_t* p, size_t len) {
  uint64_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (len & 1) sum += static_cast<uint32_t>(p[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// A kernel's native-order fold, brought to network order (RFC 1071 §2, byte order independence).
uint16_t network_order(uint16_t native) {
  return std::endian::native == std::endian::big ? native : static_cast<uint16_t>(native >> 8 | native << 8);
}

// Equal one's-complement values: 0x0000 and 0xffff are both zero.
bool same_sum(uint16_t a, uint16_t b) { return a == b || (a % 0xffff == 0 && b % 0xffff == 0); }

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

TEST(ChecksumKernels, EachMatchesTheReferenceAndCopies) {
  size_t count = 0;
  const detail::ChecksumKernelInfo* kernels = detail::checksum_kernels(&count);
  ASSERT_GE(count, 1u);
  const std::vector<uint8_t> random = random_bytes(80000, 1);
  const std::vector<uint8_t> ones(80000, 0xff);
  std::mt19937 rng(2);
  int checked = 0;
  for (size_t k = 0; k < count; ++k) {
    const detail::ChecksumKernelInfo& info = kernels[k];
    if (!info.supported) continue;
    for (const auto* data : {&random, &ones}) {
      for (int round = 0; round < 300; ++round) {
        const size_t start = rng() % 64;
        const size_t blocks = round < 20 ? static_cast<size_t>(round) : rng() % ((data->size() - 64) / info.block);
        const size_t len = blocks * info.block;
        const uint8_t* p = data->data() + start;
        ASSERT_TRUE(same_sum(network_order(info.kernel(p, len, nullptr)), reference_fold(p, len)))
            << info.name << " start " << start << " len " << len;
        std::vector<uint8_t> copy(len + 64, 0);
        const size_t dst_offset = rng() % 64;
        ASSERT_TRUE(same_sum(network_order(info.kernel(p, len, copy.data() + dst_offset)), reference_fold(p, len)))
            << info.name << " (copying) start " << start << " len " << len;
        ASSERT_EQ(std::memcmp(copy.data() + dst_offset, p, len), 0) << info.name << " copy, len " << len;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Beyond 32768 vector steps the lanes are flushed: a 4 MiB all-0xff buffer crosses that several times.
TEST(ChecksumKernels, LongBuffersDoNotOverflowTheLanes) {
  const std::vector<uint8_t> ones(4u << 20, 0xff);
  size_t count = 0;
  const detail::ChecksumKernelInfo* kernels = detail::checksum_kernels(&count);
  for (size_t k = 0; k < count; ++k) {
    if (!kernels[k].supported) continue;
    EXPECT_TRUE(same_sum(network_order(kernels[k].kernel(ones.data(), ones.size(), nullptr)),
                         reference_fold(ones.data(), ones.size())))
        << kernels[k].name;
  }
  EXPECT_EQ(internet_checksum(ones.data(), ones.size()), static_cast<uint16_t>(~reference_fold(ones.data(), ones.size())));
}

// internet_checksum's short path (headers of whole 32-bit words, up to 60 bytes) and its long one
// give the reference's exact value at every length and alignment, a correct header verifies to 0,
// and all-0xff and all-zero headers (the fold's edges) come out right.
TEST(InternetChecksum, ShortAndLongPathsMatchTheReference) {
  const std::vector<uint8_t> data = random_bytes(200, 6);
  for (size_t start = 0; start < 8; ++start) {
    for (size_t len = 0; len <= 128; ++len) {
      const uint8_t* p = data.data() + start;
      ASSERT_EQ(internet_checksum(p, len), static_cast<uint16_t>(~reference_fold(p, len)))
          << "start " << start << " len " << len;
    }
  }
  for (uint8_t fill : {uint8_t{0x00}, uint8_t{0xff}}) {
    std::vector<uint8_t> header(20, fill);
    EXPECT_EQ(internet_checksum(header.data(), header.size()),
              static_cast<uint16_t>(~reference_fold(header.data(), header.size())))
        << "fill " << int{fill};
  }
  std::vector<uint8_t> header(data.begin(), data.begin() + 20);
  header[10] = header[11] = 0;
  const uint16_t field = internet_checksum(header.data(), header.size());
  header[10] = static_cast<uint8_t>(field >> 8);
  header[11] = static_cast<uint8_t>(field);
  EXPECT_EQ(internet_checksum(header.data(), header.size()), 0);
}

// The accumulator in random pieces, alternately summed and copied-and-summed, equals one flat sum,
// and the copies reassemble the data.
TEST(ChecksumAccumulator, RandomPiecesSumAndCopyLikeOneBuffer) {
  const std::vector<uint8_t> data = random_bytes(20000, 3);
  std::mt19937 rng(4);
  for (int round = 0; round < 500; ++round) {
    const size_t start = rng() % 64;
    const size_t len = rng() % (data.size() - 64);
    const uint8_t* p = data.data() + start;
    std::vector<uint8_t> out(len);
    ChecksumAccumulator sum;
    size_t at = 0;
    while (at < len) {
      const size_t piece = std::min<size_t>(len - at, rng() % 3 == 0 ? rng() % 8 : rng() % 3000);
      if (rng() % 2) {
        sum.add_copy(out.data() + at, p + at, piece);
      } else {
        sum.add(p + at, piece);
        std::memcpy(out.data() + at, p + at, piece);
      }
      at += piece;
    }
    ASSERT_EQ(sum.folded() % 0xffff, reference_fold(p, len) % 0xffff) << "round " << round << " len " << len;
    ASSERT_EQ(std::memcmp(out.data(), p, len), 0) << "round " << round;
  }
}

// add_u16/add_u32 add big-endian words straight to the sum on the word grid and go byte-wise
// after an odd piece: both agree with the bytes added as such.
TEST(ChecksumAccumulator, WordsMatchTheirBytesOnAndOffTheGrid) {
  std::mt19937 rng(5);
  for (int round = 0; round < 2000; ++round) {
    const uint32_t v32 = static_cast<uint32_t>(rng());
    const uint16_t v16 = static_cast<uint16_t>(rng());
    const uint8_t lead = static_cast<uint8_t>(rng());
    const bool odd = round % 2 == 1;
    ChecksumAccumulator words, bytes;
    if (odd) {
      words.add(&lead, 1);
      bytes.add(&lead, 1);
    }
    words.add_u32(v32);
    words.add_u16(v16);
    const uint8_t raw[6] = {uint8_t(v32 >> 24), uint8_t(v32 >> 16), uint8_t(v32 >> 8), uint8_t(v32),
                            uint8_t(v16 >> 8), uint8_t(v16)};
    bytes.add(raw, sizeof(raw));
    ASSERT_EQ(words.folded(), bytes.folded()) << "round " << round;
  }
}

}  // namespace
}  // namespace bypass::inet
