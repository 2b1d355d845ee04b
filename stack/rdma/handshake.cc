#include "stack/rdma/handshake.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

namespace bypass::rdma {

namespace {

constexpr uint8_t kMagic[4] = {'B', 'Y', 'R', 'D'};

void put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
uint32_t get32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

bool fail(std::string* error, const std::string& message) {
  if (error) *error = "rdma handshake: " + message;
  return false;
}

}  // namespace

const char* to_string(QpInfo::Kind kind) {
  switch (kind) {
    case QpInfo::Kind::Request: return "request";
    case QpInfo::Kind::Reply: return "reply";
    case QpInfo::Kind::Ready: return "ready";
  }
  return "?";
}

int mtu_bytes(uint8_t ibv_mtu) { return ibv_mtu >= 1 && ibv_mtu <= 5 ? 128 << ibv_mtu : 0; }

std::array<uint8_t, QpInfo::kWireSize> QpInfo::encode() const {
  std::array<uint8_t, kWireSize> out{};
  std::memcpy(out.data(), kMagic, 4);
  out[4] = kVersion;
  out[5] = static_cast<uint8_t>(kind);
  out[6] = mtu;
  out[7] = read_depth;
  put32(&out[8], qp_num);
  put32(&out[12], psn);
  out[16] = static_cast<uint8_t>(lid >> 8);
  out[17] = static_cast<uint8_t>(lid);
  std::memcpy(&out[20], gid.data(), gid.size());
  put32(&out[36], rx_window);
  return out;
}

std::optional<QpInfo> QpInfo::decode(const uint8_t* data, size_t len, std::string* error) {
  auto hex = [](uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof(b), "0x%x", v);
    return std::string(b);
  };
  if (len != kWireSize) {
    fail(error, "message is " + std::to_string(len) + " bytes, expected " + std::to_string(kWireSize));
    return std::nullopt;
  }
  if (std::memcmp(data, kMagic, 4) != 0) {
    fail(error, "bad magic at offset 0 (not a Bypass RDMA peer?)");
    return std::nullopt;
  }
  if (data[4] != kVersion) {
    fail(error, "unsupported version " + std::to_string(data[4]) + " at offset 4 (expected " +
                    std::to_string(kVersion) + ")");
    return std::nullopt;
  }
  if (data[5] < 1 || data[5] > 3) {
    fail(error, "unknown message kind " + std::to_string(data[5]) + " at offset 5");
    return std::nullopt;
  }
  if (mtu_bytes(data[6]) == 0) {
    fail(error, "invalid path MTU code " + std::to_string(data[6]) + " at offset 6 (1..5)");
    return std::nullopt;
  }
  QpInfo info;
  info.kind = static_cast<Kind>(data[5]);
  info.mtu = data[6];
  info.qp_num = get32(&data[8]);
  info.psn = get32(&data[12]);
  // QP numbers and PSNs are 24-bit fields in the IBTA base transport header.
  if (info.qp_num > 0xffffff || (info.kind != Kind::Ready && info.qp_num == 0)) {
    fail(error, "invalid QP number " + hex(info.qp_num) + " at offset 8");
    return std::nullopt;
  }
  if (info.psn > 0xffffff) {
    fail(error, "PSN " + hex(info.psn) + " at offset 12 exceeds 24 bits");
    return std::nullopt;
  }
  info.lid = static_cast<uint16_t>(data[16] << 8 | data[17]);
  std::memcpy(info.gid.data(), &data[20], info.gid.size());
  info.read_depth = data[7];
  if (info.read_depth > kMaxReadDepth) {
    fail(error, "read depth " + std::to_string(info.read_depth) + " at offset 7 is outside 0.." +
                    std::to_string(kMaxReadDepth));
    return std::nullopt;
  }
  info.rx_window = get32(&data[36]);
  if (info.kind != Kind::Ready && (info.rx_window == 0 || info.rx_window > kMaxWindow)) {
    fail(error, "receive window " + std::to_string(info.rx_window) + " at offset 36 is outside 1.." +
                    std::to_string(kMaxWindow));
    return std::nullopt;
  }
  return info;
}

std::string QpInfo::describe() const {
  char gidtext[INET6_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET6, gid.data(), gidtext, sizeof(gidtext));
  char b[208];
  std::snprintf(b, sizeof(b), "%s qpn 0x%x psn 0x%x lid %u mtu %d gid %s window %u read depth %u", to_string(kind),
                qp_num, psn, lid, mtu_bytes(mtu), gidtext, rx_window, read_depth);
  return b;
}

}  // namespace bypass::rdma
