#include "stack/rdma/rendezvous.h"

#include <algorithm>
#include <cstdio>

namespace bypass::rdma {

namespace {

void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes; i-- > 0;) v = v << 8 | p[i];
  return v;
}

bool fail(std::string* error, const std::string& message) {
  if (error) *error = "rendezvous descriptor: " + message;
  return false;
}

}  // namespace

uint64_t Descriptor::total() const {
  uint64_t sum = 0;
  for (size_t i = 0; i < count; ++i) sum += regions[i].length;
  return sum;
}

void Descriptor::encode(uint8_t* out) const {
  out[0] = kVersion;
  out[1] = count;
  out[2] = out[3] = 0;
  for (size_t i = 0; i < count; ++i) {
    uint8_t* r = out + kHeaderSize + i * kRegionSize;
    put_le(r, regions[i].address, 8);
    put_le(r + 8, regions[i].rkey, 4);
    put_le(r + 12, regions[i].length, 4);
  }
}

bool Descriptor::decode(const uint8_t* data, size_t len, Descriptor* out, std::string* error) {
  if (len < kHeaderSize) return fail(error, std::to_string(len) + " bytes, shorter than its 4-byte header");
  if (data[0] != kVersion)
    return fail(error, "unsupported version " + std::to_string(data[0]) + " at offset 0 (expected 1)");
  const size_t count = data[1];
  if (count == 0 || count > kMaxRegions)
    return fail(error, "region count " + std::to_string(count) + " at offset 1 is outside 1..16");
  if (len != kHeaderSize + count * kRegionSize)
    return fail(error, std::to_string(len) + " bytes for " + std::to_string(count) + " regions (expected " +
                           std::to_string(kHeaderSize + count * kRegionSize) + ")");
  Descriptor d;
  d.count = static_cast<uint8_t>(count);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* r = data + kHeaderSize + i * kRegionSize;
    RemoteRegion& region = d.regions[i];
    region.address = get_le(r, 8);
    region.rkey = static_cast<uint32_t>(get_le(r + 8, 4));
    region.length = static_cast<uint32_t>(get_le(r + 12, 4));
    const size_t at = kHeaderSize + i * kRegionSize;
    if (region.length == 0 || region.length > kMaxRegionLength)
      return fail(error, "region " + std::to_string(i) + " length " + std::to_string(region.length) +
                             " at offset " + std::to_string(at + 12) + " is outside 1..2^31");
    if (region.address > UINT64_MAX - region.length) {
      char text[128];
      std::snprintf(text, sizeof text, "region %zu at offset %zu: address 0x%llx + length %u wraps around", i, at,
                    static_cast<unsigned long long>(region.address), region.length);
      return fail(error, text);
    }
  }
  *out = d;
  return true;
}

// ---------------------------------------------------------------- sender

void OutboundTransfers::reset(uint32_t peer_window) {
  ring_.clear();
  ring_.resize(2 * size_t{std::max<uint32_t>(peer_window, 1)});
  head_ = count_ = 0;
}

void OutboundTransfers::unpin(Transfer& t, RegistrationCache* cache) {
  for (size_t i = 0; i < t.count; ++i) {
    if (t.pinned[i] != nullptr && cache != nullptr) cache->release(t.pinned[i]);
    t.pinned[i] = nullptr;
  }
  t.count = 0;
  t.bytes = 0;
  t.held.clear();
}

void OutboundTransfers::abandon(RegistrationCache* cache) { unpin(next(), cache); }

bool OutboundTransfers::release(uint32_t n, RegistrationCache* cache, uint64_t* bytes) {
  if (n > count_) return false;
  for (uint32_t i = 0; i < n; ++i) {
    Transfer& t = ring_[head_];
    *bytes += t.bytes;
    unpin(t, cache);
    head_ = (head_ + 1) % ring_.size();
    --count_;
  }
  return true;
}

void OutboundTransfers::release_all(RegistrationCache* cache) {
  uint64_t ignored = 0;
  release(static_cast<uint32_t>(count_), cache, &ignored);
}

// ---------------------------------------------------------------- receiver

void InboundTransfers::reset(uint32_t capacity) {
  ring_.clear();
  ring_.resize(std::max<uint32_t>(capacity, 1));
  head_ = count_ = posted_ = 0;
}

InboundTransfer* InboundTransfers::add(const Descriptor& descriptor) {
  if (count_ == ring_.size()) return nullptr;
  InboundTransfer& t = ring_[(head_ + count_) % ring_.size()];
  t.descriptor = descriptor;
  t.region = 0;
  t.offset = 0;
  t.total = descriptor.total();
  t.read = 0;
  t.ready.clear();
  ++count_;
  return &t;
}

InboundTransfer* InboundTransfers::next_to_read() {
  return posted_ < count_ ? &ring_[(head_ + posted_) % ring_.size()] : nullptr;
}

RemoteRegion InboundTransfers::take_piece(InboundTransfer& transfer, uint32_t max) {
  const RemoteRegion& region = transfer.descriptor.regions[transfer.region];
  RemoteRegion piece;
  piece.rkey = region.rkey;
  piece.address = region.address + transfer.offset;
  piece.length = std::min(max, region.length - transfer.offset);
  transfer.offset += piece.length;
  if (transfer.offset == region.length) {
    ++transfer.region;
    transfer.offset = 0;
    if (transfer.all_posted()) ++posted_;
  }
  return piece;
}

void InboundTransfers::pop_front() {
  InboundTransfer& t = ring_[head_];
  t.ready.clear();
  head_ = (head_ + 1) % ring_.size();
  --count_;
  if (posted_ > 0) --posted_;
}

void InboundTransfers::clear() {
  while (count_ > 0) pop_front();
  posted_ = 0;
}

}  // namespace bypass::rdma
