// What the rdma_cm connect mode (rdma.connect_mode: rdma_cm) adds to the CM's own REQ/REP: the CM
// carries the QP number, starting PSN, path and MTU itself (what the TCP side channel's QpInfo
// carries), but not that the peer speaks Bypass, nor the size of the peer's receive chunks, which
// bounds every SEND we post (a larger SEND would fail the peer's receive with a length error), nor
// its receive window (flow_credits.h). Fixed 16-byte big-endian layout, well inside the 56 bytes
// rdma_cm leaves in an IB CM REQ:
//
//   0  magic "BYCM"   4  version (3)   5  kind (1 connect request, 2 accept)
//   6  read depth (0 .. kMaxReadDepth, as QpInfo's)   7  reserved (0)
//   8  receive chunk size in bytes (4096 .. 1 GiB, rdma.chunk_size's range)
//   12 receive window in messages (1 .. kMaxWindow)
// Version 2 added the window: a version-1 peer returns no credits, so it is refused. Version 3
// added the read depth (rendezvous.h): a version-2 peer cannot read descriptors, so it is refused.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace bypass::rdma {

struct CmPrivateData {
  enum class Kind : uint8_t { ConnectRequest = 1, Accept = 2 };
  Kind kind = Kind::ConnectRequest;
  uint32_t receive_chunk_size = 0;
  uint32_t rx_window = 0;
  uint8_t read_depth = 0;

  static constexpr size_t kWireSize = 16;
  static constexpr uint8_t kVersion = 3;
  static constexpr uint8_t kMaxReadDepth = 16;
  static constexpr uint32_t kMaxWindow = 1u << 20;  // rdma.chunk_count's maximum
  static constexpr uint32_t kMinChunk = 4096;      // rdma.chunk_size's minimum
  static constexpr uint32_t kMaxChunk = 1u << 30;  // and maximum

  std::array<uint8_t, kWireSize> encode() const;
  // Parses the private data of a CM event. `len` may exceed kWireSize: IB CM pads private data
  // with zeros to the message's fixed size. On malformed input returns nullopt and sets *error to
  // a one-line reason naming the field and its offset.
  static std::optional<CmPrivateData> decode(const void* data, size_t len, Kind expected,
                                             std::string* error);
  bool operator==(const CmPrivateData&) const = default;
};

}  // namespace bypass::rdma
