// rdma.gid_index: which entry of a port's GID table the transport uses. On RoCE every IP address of
// the port's netdev appears in the table once per RoCE version (mlx5: index 0/1 the link-local
// IPv6 address as v1/v2, 2/3 an IPv4 address as v1/v2; the order differs per driver and host), and
// the right index had to be set per host (ceph/ceph PR 12648, rook/rook issue 13911). `auto`
// finds it from the table instead.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/host_files.h"

namespace bypass::rdma {

// One non-empty entry of a port's GID table, as sysfs shows it.
struct GidEntry {
  int index = 0;
  std::array<uint8_t, 16> gid{};
  std::string type;    // "IB/RoCE v1" or "RoCE v2" (gid_attrs/types/N); empty when unknown
  std::string netdev;  // the netdev whose address it is (gid_attrs/ndevs/N); empty on InfiniBand

  // "10.0.0.1" for an IPv4-mapped GID (::ffff:0:0/96), the IPv6 text otherwise.
  std::string address_text() const;
  // "3: 10.0.0.1 RoCE v2 on ens1f0"
  std::string describe() const;
};

// The non-empty GIDs of DEVICE's PORT from sysfs (/sys/class/infiniband/DEVICE/ports/PORT/gids/N
// and gid_attrs/), by index; nullopt when the port has no readable table.
std::optional<std::vector<GidEntry>> read_gid_table(const HostFiles& files, const std::string& device, int port);

// rdma.gid_index: auto. On Ethernet (RoCE) the GID of `roce_version` ("v1" or "v2") whose address
// is, in this order of preference, an IPv4 address, a global IPv6 address, an IPv4 link-local
// address (169.254/16), an IPv6 link-local address (fe80::/10); the lowest index among equals. On
// InfiniBand, index 0 (the port GID). `error` says why there is none, naming what the table holds
// and how to give the netdev an address.
struct GidChoice {
  int index = -1;     // -1: no usable GID
  std::string error;  // set when index is -1
};
GidChoice choose_gid(const std::vector<GidEntry>& table, bool ethernet, const std::string& roce_version);

// Whether sysfs's GID type ("IB/RoCE v1", "RoCE v2") is RoCE `roce_version` ("v1" or "v2").
bool gid_type_matches(const std::string& type, const std::string& roce_version);

// A GID text as `ip` and show_gids print it ("fe80::1", "::ffff:10.0.0.1" as "10.0.0.1").
std::string gid_address_text(const std::array<uint8_t, 16>& gid);

}  // namespace bypass::rdma
