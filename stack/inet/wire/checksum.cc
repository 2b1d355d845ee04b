#include "stack/inet/wire/checksum.h"

namespace bypass::inet {

void ChecksumAccumulator::add(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (len == 0) return;
  if (odd_) {
    sum_ += p[0];  // low byte of the word started by the previous piece
    ++p;
    --len;
    odd_ = false;
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
