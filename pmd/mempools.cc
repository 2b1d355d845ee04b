#include "pmd/mempools.h"

#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <atomic>

#include "base/log.h"
#include "pmd/eal.h"
#include "pmd/error.h"

namespace bypass::pmd {

MempoolSet::MempoolSet(unsigned mbufs, unsigned cache_size, unsigned data_room)
    : mbufs_(mbufs), cache_size_(cache_size), data_room_(data_room) {}

std::unique_ptr<MempoolSet> MempoolSet::from_config(const config::Config& config) {
  return std::make_unique<MempoolSet>(static_cast<unsigned>(config.get_int("dpdk.mbufs")),
                    static_cast<unsigned>(config.get_int("dpdk.mbuf_cache")),
                    static_cast<unsigned>(config.get_size("dpdk.mbuf_size")));
}

MempoolSet::~MempoolSet() {
  for (auto& [socket, pool] : pools_) rte_mempool_free(pool);
}

rte_mempool* MempoolSet::for_socket(int socket) {
  if (socket < 0) socket = 0;
  if (auto it = pools_.find(socket); it != pools_.end()) return it->second;
  // Names are global in a DPDK process; a counter keeps two MempoolSets apart.
  static std::atomic<unsigned> generation{0};
  const std::string name = "bypass_s" + std::to_string(socket) + "_" + std::to_string(generation++);
  rte_mempool* pool = rte_pktmbuf_pool_create(name.c_str(), mbufs_, cache_size_, 0,
                                              static_cast<uint16_t>(data_room_), socket);
  if (!pool && socket != 0) {
    // The port's node has no memory left: a pool elsewhere works, every mbuf crossing the interconnect.
    pool = rte_pktmbuf_pool_create(name.c_str(), mbufs_, cache_size_, 0, static_cast<uint16_t>(data_room_),
                                   SOCKET_ID_ANY);
    if (pool)
      BYPASS_LOG(Warn, "pmd", "mempool %s: no room on NUMA node %d (the port's), created on node %d instead; "
                 "reserve hugepages on node %d (dpdk-hugepages.py --node %d --reserve SIZE)", name.c_str(), socket,
                 pool->socket_id, socket, socket);
  }
  if (!pool)
    throw PmdError("dpdk.mbufs: cannot create a pool of " + std::to_string(mbufs_) + " mbufs of " +
                   std::to_string(data_room_) + " bytes on socket " + std::to_string(socket) + ": " +
                   rte_strerror(rte_errno) + " (lower dpdk.mbufs or raise dpdk.memory)");
  BYPASS_LOG(Debug, "pmd", "mempool %s: %u mbufs of %u bytes, cache %u", name.c_str(), mbufs_, data_room_,
             cache_size_);
  pools_.emplace(socket, pool);
  return pool;
}

namespace {

MempoolUsage usage_of(rte_mempool* pool, int socket) {
  MempoolUsage u;
  u.name = pool->name;
  u.socket = socket;
  u.size = pool->size;
  u.available = rte_mempool_avail_count(pool);
  u.in_use = rte_mempool_in_use_count(pool);
  u.cache_size = pool->cache_size;
  u.data_room = rte_pktmbuf_data_room_size(pool);
  return u;
}

}  // namespace

std::vector<MempoolUsage> MempoolSet::usage() const {
  std::vector<MempoolUsage> out;
  for (const auto& [socket, pool] : pools_) out.push_back(usage_of(pool, socket));
  return out;
}

std::vector<MempoolUsage> process_mempool_usage() {
  std::vector<MempoolUsage> out;
  if (!eal_started()) return out;
  rte_mempool_walk(
      [](rte_mempool* pool, void* into) {
        static_cast<std::vector<MempoolUsage>*>(into)->push_back(usage_of(pool, pool->socket_id));
      },
      &out);
  return out;
}

}  // namespace bypass::pmd
