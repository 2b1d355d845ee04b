// A read-only view of the host's sysfs, procfs and /etc, rooted at a directory: "/" on a real
// host, a fake tree in tests (tests/data/hosts/...). Code that inspects the host (hugepages, NUMA
// topology, PCI drivers, RDMA GID tables, the doctor's checks) reads through it so each piece is
// testable on hosts this machine is not: two NUMA nodes, an IOMMU, an mlx5 NIC, a RoCE GID table.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bypass {

class HostFiles {
 public:
  explicit HostFiles(std::string root = "/");

  const std::string& root() const { return root_; }
  // `path` (absolute, as on the host: "/sys/...") under the root.
  std::string full_path(std::string_view path) const;

  // The whole file; nullopt when it cannot be read (missing, a directory, EINVAL from sysfs).
  std::optional<std::string> read(std::string_view path) const;
  // The first line without its newline, blanks trimmed at both ends.
  std::optional<std::string> first_line(std::string_view path) const;
  // Entry names of a directory, sorted ("." and ".." left out); nullopt when unreadable.
  std::optional<std::vector<std::string>> list(std::string_view dir) const;
  // The last component of a symbolic link's target ("vfio-pci" for .../driver); nullopt when
  // `path` is no link.
  std::optional<std::string> link_name(std::string_view path) const;
  bool exists(std::string_view path) const;
  // Why `path` cannot be read ("No such file or directory"): for one clear error line.
  std::string why_unreadable(std::string_view path) const;

 private:
  std::string root_;  // without a trailing slash; "" for "/"
};

}  // namespace bypass
