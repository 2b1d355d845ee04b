#include "stack/rdma/mapped_region.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "base/log.h"

namespace bypass::rdma {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

MappedRegion::MappedRegion(const std::string& name, size_t bytes, bool hugepages) {
  void* p = MAP_FAILED;
  if (hugepages) {
    mapped_bytes_ = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
      BYPASS_LOG(Warn, "rdma", "%s: no hugepages for %zu bytes (%s); using normal pages", name.c_str(),
                 mapped_bytes_, strerror(errno));
    } else {
      hugepage_backed_ = true;
    }
  }
  if (p == MAP_FAILED) {
    mapped_bytes_ = bytes;
    p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      throw std::runtime_error(name + ": cannot map " + std::to_string(bytes) +
                               " bytes of buffer memory: " + strerror(errno));
    }
  }
  base_ = static_cast<char*>(p);
}

MappedRegion::~MappedRegion() {
  if (base_ != nullptr) munmap(base_, mapped_bytes_);
}

}  // namespace bypass::rdma
