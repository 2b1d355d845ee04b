// The PacketDevice of one dpdk worker: received mbufs become zero-copy Packets for the inet stack,
// transmitted Packets become mbuf chains (payload attached without a copy, see tx_chain.h) on the
// worker's TX path of a pmd::Port. Checksum offloads the port enabled are offered to the stack.
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <cstdint>
#include <deque>

#include "pmd/port.h"
#include "stack/dpdk/tx_chain.h"
#include "stack/inet/device.h"
#include "stack/inet/packet.h"

namespace bypass {

class DpdkDevice final : public inet::PacketDevice {
 public:
  static constexpr uint16_t kBurst = 32;

  // `tx` comes from dpdk.zero_copy_*; the port's own limits (multi-seg, DMA) are applied here.
  DpdkDevice(pmd::Port& port, unsigned worker, inet::MacAddress mac, TxChainOptions tx = {});
  ~DpdkDevice() override;
  DpdkDevice(const DpdkDevice&) = delete;
  DpdkDevice& operator=(const DpdkDevice&) = delete;

  // Wraps every segment of `mbuf` (a chain) as a BufferSegment without copying; each segment is
  // freed when the last view on it is gone (possibly on another thread: rte_pktmbuf_free_seg is
  // safe there since the pools are multi-producer). The device's checksum verdicts
  // (RTE_MBUF_F_RX_*_CKSUM_*) become Packet::rx_*_checksum.
  static inet::Packet packet_from_mbuf(rte_mbuf* mbuf);
  // One segment of a chain as a worker_local BufferSegment (header in its headroom when it can).
  static BufferSegment wrap_mbuf_segment(rte_mbuf* seg);
  // The frame's bytes copied to the heap; the mbuf chain is freed before this returns.
  static inet::Packet packet_copied_from_mbuf(rte_mbuf* mbuf);
  // packet_from_mbuf, counting the frames whose TCP checksum the device already verified (on a
  // trusted link, TxChainOptions::trusted_link, the rest are marked verified and counted). While
  // the frame's mempool is under a quarter free the payload is copied and the mbuf freed at once:
  // zero-copy payload waits for the application to read it, and a pool drained by unread data
  // would leave no mbuf to receive the ACKs that free the rest (a stall, seen on a looped
  // net_ring with 16 busy connections).
  inet::Packet receive(rte_mbuf* mbuf);

  // While batching (inside the poll hook) frames are queued and sent together by flush();
  // otherwise each frame goes out at once, so nothing waits for the next loop iteration.
  void transmit(inet::Packet&& frame) override;
  uint16_t mtu() const override { return mtu_; }
  inet::MacAddress mac() const override { return mac_; }
  inet::DeviceCapabilities capabilities() const override { return capabilities_; }

  void begin_batch() { batching_ = true; }
  // Sends what the batch queued; returns how many frames that was.
  unsigned end_batch() {
    batching_ = false;
    return flush();
  }

  // Frames the TX queue refused so far, retried on the next flush (a looped net_ring drains only
  // when this same worker polls its RX side, so retrying in place cannot help).
  size_t backlog() const { return backlog_.size(); }
  uint64_t tx_dropped() const { return tx_dropped_; }
  uint64_t tx_alloc_failures() const { return tx_alloc_failures_; }
  // Worker-thread counters: zero-copy and checksum offload use on transmit.
  const TxChainCounters& tx_counters() const { return tx_chain_.counters(); }
  uint64_t rx_checksum_offloads() const { return rx_checksum_offloads_; }
  // Frames whose TCP checksum was taken on trust (TxChainOptions::trusted_link), not verified.
  uint64_t rx_checksums_trusted() const { return rx_checksums_trusted_; }
  uint64_t rx_low_pool_copies() const { return rx_low_pool_copies_; }
  // Calls into the driver's transmit (port_tx_packets / tx_bursts is the mean TX burst).
  uint64_t tx_bursts() const { return tx_bursts_; }
  // Of those, the calls that sent nothing: the TX ring was full (the peer had not drained it).
  uint64_t tx_refused_bursts() const { return tx_refused_bursts_; }

 private:
  unsigned flush();
  // One call into the driver's transmit, counted (tx_bursts, tx_refused_bursts).
  uint16_t transmit_burst(rte_mbuf** mbufs, uint16_t count);
  // Queues one built frame for the next flush (TxChainBuilder::EmitFrame).
  static void queue_frame(void* self, rte_mbuf* mbuf);
  bool rx_pool_is_low(rte_mempool* pool);
  static void set_rx_metadata(inet::Packet& packet, const rte_mbuf* mbuf);

  pmd::Port& port_;
  unsigned worker_;
  uint16_t mtu_;
  inet::MacAddress mac_;
  bool trusted_link_;
  bool hold_when_backlogged_;
  inet::DeviceCapabilities capabilities_;
  TxChainBuilder tx_chain_;
  uint64_t rx_checksum_offloads_ = 0;
  uint64_t rx_checksums_trusted_ = 0;
  uint64_t rx_low_pool_copies_ = 0;
  unsigned frames_until_rx_pool_check_ = 0;
  bool rx_pool_low_ = false;
  bool batching_ = false;
  std::array<rte_mbuf*, kBurst> pending_{};
  uint16_t pending_count_ = 0;
  std::deque<rte_mbuf*> backlog_;
  uint64_t tx_dropped_ = 0;
  uint64_t tx_alloc_failures_ = 0;
  uint64_t tx_bursts_ = 0;
  uint64_t tx_refused_bursts_ = 0;
};

}  // namespace bypass
