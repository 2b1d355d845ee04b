#include "stack/rdma/gid_selection.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace bypass::rdma {

namespace {

bool is_ipv4_mapped(const std::array<uint8_t, 16>& gid) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};  // RFC 4291 §2.5.5.2
  return std::memcmp(gid.data(), prefix, sizeof prefix) == 0;
}

// Lower is preferred; see choose_gid.
int address_rank(const std::array<uint8_t, 16>& gid) {
  if (is_ipv4_mapped(gid)) return gid[12] == 169 && gid[13] == 254 ? 2 : 0;  // RFC 3927 link-local
  const bool link_local = gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;        // fe80::/10, RFC 4291 §2.5.6
  return link_local ? 3 : 1;
}

// sysfs prints a GID as eight groups of four hex digits: "fe80:0000:0000:0000:0a00:27ff:fe4e:0001".
std::optional<std::array<uint8_t, 16>> parse_sysfs_gid(const std::string& text) {
  std::array<uint8_t, 16> gid{};
  unsigned groups[8];
  char tail = 0;
  if (std::sscanf(text.c_str(), "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x%c", &groups[0], &groups[1], &groups[2],
                  &groups[3], &groups[4], &groups[5], &groups[6], &groups[7], &tail) != 8)
    return std::nullopt;
  for (int i = 0; i < 8; ++i) {
    gid[2 * i] = static_cast<uint8_t>(groups[i] >> 8);
    gid[2 * i + 1] = static_cast<uint8_t>(groups[i]);
  }
  return gid;
}

}  // namespace

bool gid_type_matches(const std::string& type, const std::string& roce_version) {
  return type.size() >= 2 && type.compare(type.size() - 2, 2, roce_version) == 0;
}

std::string gid_address_text(const std::array<uint8_t, 16>& gid) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (is_ipv4_mapped(gid)) inet_ntop(AF_INET, gid.data() + 12, text, sizeof text);
  else inet_ntop(AF_INET6, gid.data(), text, sizeof text);
  return text;
}

std::string GidEntry::address_text() const { return gid_address_text(gid); }

std::string GidEntry::describe() const {
  std::string out = std::to_string(index) + ": " + address_text();
  if (!type.empty()) out += " " + type;
  if (!netdev.empty()) out += " on " + netdev;
  return out;
}

std::optional<std::vector<GidEntry>> read_gid_table(const HostFiles& files, const std::string& device, int port) {
  const std::string dir = "/sys/class/infiniband/" + device + "/ports/" + std::to_string(port);
  const auto names = files.list(dir + "/gids");
  if (!names) return std::nullopt;
  std::vector<GidEntry> table;
  for (const std::string& name : *names) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const auto text = files.first_line(dir + "/gids/" + name);
    if (!text) continue;
    const auto gid = parse_sysfs_gid(*text);
    if (!gid || std::all_of(gid->begin(), gid->end(), [](uint8_t b) { return b == 0; })) continue;
    GidEntry entry;
    entry.index = std::stoi(name);
    entry.gid = *gid;
    entry.type = files.first_line(dir + "/gid_attrs/types/" + name).value_or("");
    entry.netdev = files.first_line(dir + "/gid_attrs/ndevs/" + name).value_or("");
    table.push_back(std::move(entry));
  }
  std::sort(table.begin(), table.end(), [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
  return table;
}

GidChoice choose_gid(const std::vector<GidEntry>& table, bool ethernet, const std::string& roce_version) {
  GidChoice choice;
  if (!ethernet) {
    // InfiniBand: index 0 holds the port GID (subnet prefix + port GUID), always valid.
    const bool has_zero = std::any_of(table.begin(), table.end(), [](const GidEntry& e) { return e.index == 0; });
    if (has_zero) choice.index = 0;
    else choice.error = "the InfiniBand port has no GID at index 0 (is the subnet manager running?)";
    return choice;
  }
  int best_rank = 4;
  for (const GidEntry& entry : table) {  // by index: the first of equal rank wins
    if (!gid_type_matches(entry.type, roce_version)) continue;
    const int rank = address_rank(entry.gid);
    if (rank < best_rank) {
      best_rank = rank;
      choice.index = entry.index;
    }
  }
  if (choice.index >= 0) return choice;
  std::string held, netdev;
  for (const GidEntry& entry : table) {
    held += (held.empty() ? "" : "; ") + entry.describe();
    if (netdev.empty()) netdev = entry.netdev;
  }
  choice.error = "no RoCE " + roce_version + " GID in the table (" + (held.empty() ? "it is empty" : "it holds " + held) +
                 "); give the port's netdev an IP address: ip addr add ADDRESS/PREFIX dev " +
                 (netdev.empty() ? "NETDEV" : netdev);
  return choice;
}

}  // namespace bypass::rdma
