#include "stack/inet/wire/checksum.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace bypass::inet {

namespace {

// RFC 1071 §2: the sum may be formed in wider units and folded, since 2^16 = 1 modulo 2^16 - 1 (a
// 32-bit unit is the sum of its two words), and summing in swapped byte order gives the byte-swapped
// sum ("byte order independence"). So every kernel adds native-order words into wide lanes and
// folds at the end; it matters wherever the port has no checksum offload (memif, ring, af_packet).
uint16_t fold64(uint64_t sum) {
  sum = (sum & 0xffffffff) + (sum >> 32);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// 32-bit halves of 8-byte words summed into 64-bit accumulators: no carries to chase in the loop.
uint16_t sum_scalar(const uint8_t* p, size_t len, uint8_t* copy_to) {
  uint64_t low = 0, high = 0;
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    if (copy_to != nullptr) {
      std::memcpy(copy_to, &word, sizeof(word));
      copy_to += 8;
    }
    low += word & 0xffffffff;
    high += word >> 32;
  }
  return fold64(low + high);  // both below 2^63 for len below 2^34 bytes
}

#if defined(__x86_64__)
// Vector kernels: 16-bit words zero-extended into 32-bit lanes (unpack with zero) and added. A lane
// gains at most 0xffff per step, so it cannot overflow within 65536 steps; the lanes are moved into
// a 64-bit total every kStepsPerFlush steps.
constexpr size_t kStepsPerFlush = 32768;

uint64_t lanes_sum(__m128i v) {
  alignas(16) uint32_t lanes[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), v);
  return uint64_t{lanes[0]} + lanes[1] + lanes[2] + lanes[3];
}

uint16_t sum_sse2(const uint8_t* p, size_t len, uint8_t* copy_to) {
  const __m128i zero = _mm_setzero_si128();
  uint64_t total = 0;
  while (len >= 16) {
    __m128i acc_low = zero, acc_high = zero;
    size_t steps = std::min(len / 16, kStepsPerFlush);
    len -= steps * 16;
    for (; steps > 0; --steps, p += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      if (copy_to != nullptr) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(copy_to), v);
        copy_to += 16;
      }
      acc_low = _mm_add_epi32(acc_low, _mm_unpacklo_epi16(v, zero));
      acc_high = _mm_add_epi32(acc_high, _mm_unpackhi_epi16(v, zero));
    }
    total += lanes_sum(acc_low) + lanes_sum(acc_high);
  }
  return fold64(total);
}

__attribute__((target("avx2"))) uint16_t sum_avx2(const uint8_t* p, size_t len, uint8_t* copy_to) {
  const __m256i zero = _mm256_setzero_si256();
  uint64_t total = 0;
  while (len >= 64) {
    // Two independent pairs of accumulators per 64 bytes keep both vector adders busy.
    __m256i a0 = zero, a1 = zero, b0 = zero, b1 = zero;
    size_t steps = std::min(len / 64, kStepsPerFlush);
    len -= steps * 64;
    for (; steps > 0; --steps, p += 64) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
      if (copy_to != nullptr) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(copy_to), v);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(copy_to + 32), w);
        copy_to += 64;
      }
      a0 = _mm256_add_epi32(a0, _mm256_unpacklo_epi16(v, zero));
      a1 = _mm256_add_epi32(a1, _mm256_unpackhi_epi16(v, zero));
      b0 = _mm256_add_epi32(b0, _mm256_unpacklo_epi16(w, zero));
      b1 = _mm256_add_epi32(b1, _mm256_unpackhi_epi16(w, zero));
    }
    // Each lane is below 2^31 (at most kStepsPerFlush words of 0xffff), so a sum of two fits 32 bits.
    const __m256i a = _mm256_add_epi32(a0, a1);
    const __m256i b = _mm256_add_epi32(b0, b1);
    total += lanes_sum(_mm256_castsi256_si128(a)) + lanes_sum(_mm256_extracti128_si256(a, 1)) +
             lanes_sum(_mm256_castsi256_si128(b)) + lanes_sum(_mm256_extracti128_si256(b, 1));
  }
  return fold64(total);
}

constexpr detail::ChecksumKernelInfo kKernelTable[] = {
    {"scalar", &sum_scalar, 8, true},
    {"sse2", &sum_sse2, 16, true},
    {"avx2", &sum_avx2, 64, false},
};
#else
constexpr detail::ChecksumKernelInfo kKernelTable[] = {
    {"scalar", &sum_scalar, 8, true},
};
#endif

constexpr size_t kKernelCount = sizeof(kKernelTable) / sizeof(kKernelTable[0]);

struct Kernels {
  detail::ChecksumKernelInfo table[kKernelCount];
  detail::ChecksumKernelInfo best;
  Kernels() {
    for (size_t i = 0; i < kKernelCount; ++i) table[i] = kKernelTable[i];
#if defined(__x86_64__)
    __builtin_cpu_init();
    table[2].supported = __builtin_cpu_supports("avx2");
#endif
    best = table[0];
    for (const auto& k : table)
      if (k.supported) best = k;
  }
};

const Kernels& kernels() {
  static const Kernels instance;
  return instance;
}

// Below this the per-call setup of a vector loop costs more than it saves.
constexpr size_t kBulkMinimum = 64;

// internet_checksum's short path: up to an IPv4 header with the most options (RFC 791 §3.1).
constexpr size_t kShortWordsMaximum = 60;
constexpr size_t kIpv4HeaderMinimum = 20;

// The native-order 32-bit words of `len` bytes (a multiple of 4) added in 64 bits: inlined, so a
// constant `len` unrolls.
inline __attribute__((always_inline)) uint64_t sum_words(const uint8_t* p, size_t len) {
  uint64_t sum = 0;
  for (size_t i = 0; i < len; i += 4) {
    uint32_t word;
    std::memcpy(&word, p + i, sizeof(word));
    sum += word;
  }
  return sum;
}

}  // namespace

namespace detail {
const ChecksumKernelInfo* checksum_kernels(size_t* count) {
  *count = kKernelCount;
  return kernels().table;
}
}  // namespace detail

void ChecksumAccumulator::add_bytes(const uint8_t* p, size_t len, uint8_t* dst) {
  if (len == 0) return;
  if (odd_) {
    sum_ += p[0];  // low byte of the word started by the previous piece
    if (dst != nullptr) *dst++ = p[0];
    ++p;
    --len;
    odd_ = false;
  }
  const auto add_native = [this](uint16_t native) {
    sum_ += std::endian::native == std::endian::big ? native : static_cast<uint16_t>(native >> 8 | native << 8);
  };
  if (len >= kBulkMinimum) {
    static const detail::ChecksumKernelInfo kBest = kernels().best;
    const size_t bulk = len - len % kBest.block;
    add_native(kBest.kernel(p, bulk, dst));
    p += bulk;
    len -= bulk;
    if (dst != nullptr) dst += bulk;
  }
  // Headers and the vector loop's remainder: 8 bytes at a time, then at most three words.
  if (len >= 8) {
    const size_t words = len & ~size_t{7};
    add_native(sum_scalar(p, words, dst));
    p += words;
    len -= words;
    if (dst != nullptr) dst += words;
  }
  if (dst != nullptr) std::memcpy(dst, p, len);
  while (len >= 2) {
    sum_ += static_cast<uint32_t>(p[0]) << 8 | p[1];
    p += 2;
    len -= 2;
  }
  if (len == 1) {
    sum_ += static_cast<uint32_t>(p[0]) << 8;
    odd_ = true;
  }
}

void ChecksumAccumulator::add(const void* data, size_t len) {
  add_bytes(static_cast<const uint8_t*>(data), len, nullptr);
}

void ChecksumAccumulator::add_copy(void* dst, const void* src, size_t len) {
  add_bytes(static_cast<const uint8_t*>(src), len, static_cast<uint8_t*>(dst));
}

void ChecksumAccumulator::add(const BufferList& list, size_t offset, size_t len) {
  for (const BufferSegment& seg : list.segments()) {
    if (len == 0) break;
    if (offset >= seg.length()) {
      offset -= seg.length();
      continue;
    }
    size_t take = seg.length() - offset;
    if (take > len) take = len;
    add(seg.data() + offset, take);
    len -= take;
    offset = 0;
  }
}

void ChecksumAccumulator::add_u16(uint16_t v) {
  if (!odd_) {
    sum_ += v;  // on the word grid: the value is the big-endian word the sum adds
    return;
  }
  uint8_t bytes[2] = {static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
  add(bytes, 2);
}

void ChecksumAccumulator::add_u32(uint32_t v) {
  if (!odd_) {
    sum_ += (v >> 16) + (v & 0xffff);
    return;
  }
  add_u16(static_cast<uint16_t>(v >> 16));
  add_u16(static_cast<uint16_t>(v));
}

uint16_t ChecksumAccumulator::folded() const {
  uint64_t s = sum_;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

uint16_t internet_checksum(const void* data, size_t len) {
  // An IPv4 header (20 to 60 bytes, a whole number of 32-bit words: RFC 791 §3.1, checksummed on
  // every packet sent and received) takes the short way: its native-order 32-bit words added in one
  // 64-bit register and folded (RFC 1071 §2), without the accumulator's piece and vector set-up,
  // which cost about four times as many instructions on 20 bytes.
  if (len <= kShortWordsMaximum && len % 4 == 0) {
    const auto* p = static_cast<const uint8_t*>(data);
    // The option-less header, nearly every one, unrolled.
    const uint64_t sum = len == kIpv4HeaderMinimum ? sum_words(p, kIpv4HeaderMinimum) : sum_words(p, len);
    const uint16_t native = fold64(sum);
    const uint16_t folded = std::endian::native == std::endian::big ? native : static_cast<uint16_t>(native >> 8 | native << 8);
    return static_cast<uint16_t>(~folded);
  }
  ChecksumAccumulator acc;
  acc.add(data, len);
  return acc.finish();
}

void add_ipv6_pseudo_header(ChecksumAccumulator& sum, const Ipv6Address& source,
                            const Ipv6Address& destination, uint32_t upper_length, uint8_t next_header) {
  sum.add(source.bytes.data(), Ipv6Address::kLength);
  sum.add(destination.bytes.data(), Ipv6Address::kLength);
  sum.add_u32(upper_length);
  sum.add_u32(next_header);  // zero, zero, zero, Next Header: one 32-bit word
}

uint16_t ipv6_pseudo_header_sum(const Ipv6Address& source, const Ipv6Address& destination,
                                uint32_t upper_length, uint8_t next_header) {
  ChecksumAccumulator sum;
  add_ipv6_pseudo_header(sum, source, destination, upper_length, next_header);
  return sum.folded();
}

}  // namespace bypass::inet
