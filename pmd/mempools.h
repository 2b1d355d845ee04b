// One mbuf mempool per NUMA socket, created on first use by a port on that socket.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

struct rte_mempool;

namespace bypass::pmd {

struct MempoolUsage {
  std::string name;
  int socket = 0;
  unsigned size = 0;       // mbufs in the pool
  unsigned available = 0;  // free, including per-lcore caches
  unsigned in_use = 0;
  unsigned cache_size = 0;
  unsigned data_room = 0;
};

class MempoolSet {
 public:
  MempoolSet(unsigned mbufs, unsigned cache_size, unsigned data_room);
  static std::unique_ptr<MempoolSet> from_config(const config::Config& config);
  ~MempoolSet();  // pools are freed; every mbuf must be back by then
  MempoolSet(const MempoolSet&) = delete;
  MempoolSet& operator=(const MempoolSet&) = delete;

  // Pool for `socket` (SOCKET_ID_ANY maps to socket 0). Throws PmdError naming dpdk.mbufs /
  // dpdk.memory when the pool cannot be created.
  rte_mempool* for_socket(int socket);
  std::vector<MempoolUsage> usage() const;
  unsigned data_room() const { return data_room_; }

 private:
  unsigned mbufs_, cache_size_, data_room_;
  std::map<int, rte_mempool*> pools_;
};

// Every mbuf pool in the process (whoever created it); empty before the EAL starts.
std::vector<MempoolUsage> process_mempool_usage();

}  // namespace bypass::pmd
