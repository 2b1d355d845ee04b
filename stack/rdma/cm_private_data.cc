#include "stack/rdma/cm_private_data.h"

#include <cstring>

namespace bypass::rdma {

namespace {

constexpr uint8_t kMagic[4] = {'B', 'Y', 'C', 'M'};

const char* kind_name(uint8_t kind) {
  switch (kind) {
    case 1: return "connect request";
    case 2: return "accept";
  }
  return "unknown";
}

}  // namespace

std::array<uint8_t, CmPrivateData::kWireSize> CmPrivateData::encode() const {
  std::array<uint8_t, kWireSize> out{};
  std::memcpy(out.data(), kMagic, 4);
  out[4] = kVersion;
  out[5] = static_cast<uint8_t>(kind);
  out[6] = read_depth;
  out[8] = static_cast<uint8_t>(receive_chunk_size >> 24);
  out[9] = static_cast<uint8_t>(receive_chunk_size >> 16);
  out[10] = static_cast<uint8_t>(receive_chunk_size >> 8);
  out[11] = static_cast<uint8_t>(receive_chunk_size);
  out[12] = static_cast<uint8_t>(rx_window >> 24);
  out[13] = static_cast<uint8_t>(rx_window >> 16);
  out[14] = static_cast<uint8_t>(rx_window >> 8);
  out[15] = static_cast<uint8_t>(rx_window);
  return out;
}

std::optional<CmPrivateData> CmPrivateData::decode(const void* data, size_t len, Kind expected,
                                                   std::string* error) {
  auto fail = [error](const std::string& message) -> std::optional<CmPrivateData> {
    if (error) *error = "rdma_cm private data: " + message;
    return std::nullopt;
  };
  const auto* p = static_cast<const uint8_t*>(data);
  if (p == nullptr || len < kWireSize)
    return fail(std::to_string(len) + " bytes, expected at least " + std::to_string(kWireSize));
  if (std::memcmp(p, kMagic, 4) != 0) return fail("bad magic at offset 0 (not a Bypass RDMA peer?)");
  if (p[4] != kVersion)
    return fail("unsupported version " + std::to_string(p[4]) + " at offset 4 (expected " +
                std::to_string(kVersion) + ")");
  if (p[5] != static_cast<uint8_t>(expected))
    return fail("kind " + std::to_string(p[5]) + " (" + kind_name(p[5]) + ") at offset 5, expected " +
                kind_name(static_cast<uint8_t>(expected)));
  const uint32_t chunk = uint32_t{p[8]} << 24 | uint32_t{p[9]} << 16 | uint32_t{p[10]} << 8 | p[11];
  if (chunk < kMinChunk || chunk > kMaxChunk)
    return fail("receive chunk size " + std::to_string(chunk) + " at offset 8 is outside 4096.." +
                std::to_string(kMaxChunk));
  const uint32_t window = uint32_t{p[12]} << 24 | uint32_t{p[13]} << 16 | uint32_t{p[14]} << 8 | p[15];
  if (window == 0 || window > kMaxWindow)
    return fail("receive window " + std::to_string(window) + " at offset 12 is outside 1.." +
                std::to_string(kMaxWindow));
  if (p[6] > kMaxReadDepth)
    return fail("read depth " + std::to_string(p[6]) + " at offset 6 is outside 0.." + std::to_string(kMaxReadDepth));
  CmPrivateData out;
  out.kind = expected;
  out.read_depth = p[6];
  out.receive_chunk_size = chunk;
  out.rx_window = window;
  return out;
}

}  // namespace bypass::rdma
