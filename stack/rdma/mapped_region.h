// MappedRegion: anonymous memory for registered buffers, optionally backed by 2 MiB hugepages
// (falling back to normal pages, with a warning, when the kernel has none reserved). One mapping,
// unmapped on destruction. The chunk pools and the registered payload memory both sit on one.
#pragma once

#include <cstddef>
#include <string>

namespace bypass::rdma {

class MappedRegion {
 public:
  // Throws std::runtime_error naming `name` when the memory cannot be mapped.
  MappedRegion(const std::string& name, size_t bytes, bool hugepages);
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  char* base() const { return base_; }
  bool hugepage_backed() const { return hugepage_backed_; }

 private:
  char* base_ = nullptr;
  size_t mapped_bytes_ = 0;
  bool hugepage_backed_ = false;
};

}  // namespace bypass::rdma
