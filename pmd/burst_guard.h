// Keeps a departing memif peer from crashing the process that still polls the port.
//
// DPDK 22.11's net_memif handles a peer's departure (its DISCONNECT message, or EOF on the control
// socket when the peer exits or is killed) on the EAL interrupt thread, in memif_disconnect()
// (drivers/net/memif/memif_socket.c): it clears ETH_MEMIF_FLAG_CONNECTED, then memif_free_regions()
// munmap()s the shared rings and buffers, rte_free()s each region and sets regions[i] = NULL. The
// bursts (eth_memif_rx/tx in rte_eth_memif.c) test the flag once, on entry, and then walk the ring
// descriptors and regions[] with no synchronisation: an lcore inside a burst when the peer leaves
// reads unmapped memory (SIGSEGV at `d0->flags` in eth_memif_rx, seen with 1 client in 10 leaving
// under load) or a NULL region.
//
// The workaround: every worker marks its bursts on such a port (a sequence number, odd while inside
// one), and munmap() — which this library interposes for the whole process — waits, when called on
// the EAL interrupt thread, until every worker that was inside a burst has left it. The flag was
// cleared before the unmap, so a burst entered after that returns at once; the unmap, the frees and
// the NULLs then happen under no burst. Other threads' munmaps, and the interrupt thread's while no
// burst is running, go straight to the system call.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace bypass::pmd {

// The burst marks of one port's workers, registered for munmap() to wait on while it lives.
class BurstGuard {
 public:
  explicit BurstGuard(unsigned workers);
  ~BurstGuard();
  BurstGuard(const BurstGuard&) = delete;
  BurstGuard& operator=(const BurstGuard&) = delete;

  // Called by `worker` around each driver burst. The full barrier on entry orders our mark before
  // the driver's load of its connected flag (store-load order is not kept otherwise).
  void enter(unsigned worker) { marks_[worker].sequence.fetch_add(1, std::memory_order_seq_cst); }
  void leave(unsigned worker) {
    auto& s = marks_[worker].sequence;
    s.store(s.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Waits (bounded) until every worker inside a burst now has left it. Returns false on timeout.
  bool wait_for_bursts_to_leave() const;


 private:
  struct alignas(64) Mark {
    std::atomic<uint64_t> sequence{0};
  };
  unsigned workers_;
  std::unique_ptr<Mark[]> marks_;
};

// munmap() calls this first: on the EAL interrupt thread it waits for every registered guard.
void wait_for_bursts_before_unmap();

// Waits (bounded) until the EAL interrupt thread has finished whatever handler it is running.
// memif_disconnect() marks the link down first and frees the regions and the control channel
// after, on that thread; a process that closes its port as soon as it sees the link down (a
// generator lingering until its receiver leaves) would free the same state under it (SIGSEGV on
// the interrupt thread, 1 close in 6 on plain memory). An EAL alarm runs on that thread after the
// handler in progress, so its firing is the condition. Returns false when it did not fire in time.
bool wait_for_interrupt_thread();

}  // namespace bypass::pmd
