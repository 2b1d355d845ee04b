#include "stack/inet/wire/checksum.h"

#include <bit>
#include <cstring>

namespace bypass::inet {

namespace {

// One's-complement sum of the 16-bit words of `p` (len a multiple of 8) in the machine's byte
// order, folded to 16 bits. RFC 1071 §2: the sum may be formed in wider units and folded, since
// 2^16 = 1 modulo 2^16 - 1 (a 32-bit unit is the sum of its two words), and summing in swapped
// byte order gives the byte-swapped sum ("byte order independence"). About 3x faster than one
// word at a time; it matters wherever the port has no checksum offload (memif, ring).
uint16_t sum_words_native(const uint8_t* p, size_t len) {
  // 32-bit halves summed into 64-bit accumulators: no carries to chase in the loop.
  uint64_t low = 0, high = 0;
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    low += word & 0xffffffff;
    high += word >> 32;
  }
  uint64_t folded = low + high;  // both below 2^63 for len below 2^34 bytes
  folded = (folded & 0xffffffff) + (folded >> 32);
  folded = (folded & 0xffff) + (folded >> 16);
  folded = (folded & 0xffff) + (folded >> 16);
  folded = (folded & 0xffff) + (folded >> 16);
  return static_cast<uint16_t>(folded);
}

}  // namespace

void ChecksumAccumulator::add(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (len == 0) return;
  if (odd_) {
    sum_ += p[0];  // low byte of the word started by the previous piece
    ++p;
    --len;
    odd_ = false;
  }
  if (len >= 64) {
    const size_t bulk = len & ~size_t{7};
    const uint16_t native = sum_words_native(p, bulk);
    sum_ += std::endian::native == std::endian::big ? native : static_cast<uint16_t>(native >> 8 | native << 8);
    p += bulk;
    len -= bulk;
  }
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
  uint8_t bytes[2] = {static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
  add(bytes, 2);
}

void ChecksumAccumulator::add_u32(uint32_t v) {
  add_u16(static_cast<uint16_t>(v >> 16));
  add_u16(static_cast<uint16_t>(v));
}

uint16_t ChecksumAccumulator::folded() const {
  uint64_t s = sum_;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

uint16_t internet_checksum(const void* data, size_t len) {
  ChecksumAccumulator acc;
  acc.add(data, len);
  return acc.finish();
}

}  // namespace bypass::inet
