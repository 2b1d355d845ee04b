// The queue-pair description two peers exchange over the TCP side channel before an RC QP can be
// moved to RTR/RTS (what rdma_cm carries in its CM REQ/REP): QP number, starting PSN, LID (IB) or
// GID (RoCE), path MTU, and the sender's receive window (flow_credits.h). Fixed 40-byte
// big-endian layout:
//
//   0  magic "BYRD"     4  version (3)   5  kind (Request/Reply/Ready)   6  mtu (ibv_mtu enum)
//   7  read depth       8  qp_num (24 significant bits)   12 psn (24 bits)   16 lid   18 reserved
//   20 gid[16]          36 rx_window (messages the sender can queue; 1..kMaxWindow, 0 in Ready)
//
// Version 2 added rx_window: a version-1 peer returns no credits, so it is refused rather than
// stalled after one window. Version 3 added the read depth (0..kMaxReadDepth: the RDMA READs the
// sender can have outstanding and serve at once; rendezvous.h): a version-2 peer cannot read
// descriptors, so it is refused too. Both ends use the smaller depth; 0 means no rendezvous.
//
// Connection flow: the client sends Request; the server moves its QP to RTS and answers Reply; the
// client moves its QP to RTS and sends Ready, after which both may post sends (the server waits for
// Ready so its first send never reaches a QP that is not yet in RTR).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace bypass::rdma {

struct QpInfo {
  enum class Kind : uint8_t { Request = 1, Reply = 2, Ready = 3 };
  Kind kind = Kind::Request;
  uint8_t mtu = 0;          // enum ibv_mtu value (1 = 256 ... 5 = 4096)
  uint32_t qp_num = 0;
  uint32_t psn = 0;
  uint16_t lid = 0;
  std::array<uint8_t, 16> gid{};
  uint32_t rx_window = 0;   // Request and Reply: how many data messages we let the peer send ahead
  uint8_t read_depth = 0;   // Request and Reply: RDMA READs outstanding at once, either way

  static constexpr size_t kWireSize = 40;
  static constexpr uint8_t kVersion = 3;
  static constexpr uint8_t kMaxReadDepth = 16;
  static constexpr uint32_t kMaxWindow = 1u << 20;  // rdma.chunk_count's maximum

  std::array<uint8_t, kWireSize> encode() const;
  // Parses one message; on malformed input returns nullopt and sets *error to a one-line reason
  // naming the field and offset.
  static std::optional<QpInfo> decode(const uint8_t* data, size_t len, std::string* error);
  std::string describe() const;  // "qpn 0x11 psn 0x1234 mtu 1024 gid fe80::..." for logs
  bool operator==(const QpInfo&) const = default;
};

const char* to_string(QpInfo::Kind kind);
// 256..4096 for ibv_mtu values 1..5, 0 otherwise.
int mtu_bytes(uint8_t ibv_mtu);

}  // namespace bypass::rdma
