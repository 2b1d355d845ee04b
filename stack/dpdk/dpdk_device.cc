#include "stack/dpdk/dpdk_device.h"

#include <algorithm>
#include <memory>

#include "base/log.h"

namespace bypass {

namespace {

// Frames kept for a later flush when the TX queue is full; beyond this the stack's
// retransmission covers the loss better than an ever-growing queue.
constexpr size_t kMaxBacklog = 8192;

TxChainOptions with_port_limits(TxChainOptions tx, const pmd::PortInfo& info) {
  tx.multi_seg = info.offloads.enabled.multi_seg;
  tx.dma_needs_registered_memory = info.dma_needs_registered_memory;
  tx.max_segments = info.tx_max_segments;
  tx.device_copies = !info.dma_needs_registered_memory;
  tx.software_tcp_checksum = !info.offloads.enabled.tx_tcp_checksum && !tx.trusted_link;
  tx.tso = info.offloads.enabled.tso;
  return tx;
}

inet::DeviceCapabilities capabilities_of(const pmd::OffloadFlags& enabled, const TxChainOptions& tx) {
  inet::DeviceCapabilities caps;
  // TCP segments of up to 64 KiB: the port cuts them (TSO) or TxChainBuilder::build_cut does.
  if (tx.tso || tx.software_segmentation) caps.tx_large_segment_bytes = 65535;
  caps.tx_ipv4_checksum = enabled.tx_ipv4_checksum;
  // Always: what the port cannot do, TxChainBuilder completes while it copies the frame
  // (TxChainOptions::software_tcp_checksum), so the stack never sums the payload a second time.
  caps.tx_tcp_checksum = true;
  caps.rx_checksum = (enabled.rx_ipv4_checksum && enabled.rx_tcp_checksum) || tx.trusted_link;
  return caps;
}

// RTE_MBUF_F_RX_*_CKSUM_NONE: the field in the packet is not valid but the device checked the
// data's integrity, which is all the stack wants to know.
inet::RxChecksum verdict(uint64_t flags, uint64_t mask, uint64_t good, uint64_t bad, uint64_t none) {
  const uint64_t v = flags & mask;
  if (v == good || v == none) return inet::RxChecksum::Good;
  if (v == bad) return inet::RxChecksum::Bad;
  return inet::RxChecksum::Unknown;
}

}  // namespace

DpdkDevice::DpdkDevice(pmd::Port& port, unsigned worker, inet::MacAddress mac, TxChainOptions tx)
    : port_(port),
      worker_(worker),
      mtu_(port.info().mtu != 0 ? port.info().mtu : 1500),
      mac_(mac),
      trusted_link_(tx.trusted_link),
      hold_when_backlogged_(tx.hold_when_backlogged),
      capabilities_(capabilities_of(port.info().offloads.enabled, with_port_limits(tx, port.info()))),
      tx_chain_(port.mempool(), with_port_limits(tx, port.info())) {}

DpdkDevice::~DpdkDevice() {
  rte_pktmbuf_free_bulk(pending_.data(), pending_count_);
  pending_count_ = 0;
  for (rte_mbuf* m : backlog_) rte_pktmbuf_free(m);
  backlog_.clear();
}

inet::Packet DpdkDevice::receive(rte_mbuf* mbuf) {
  const bool copy = rx_pool_is_low(mbuf->pool);
  if (copy) ++rx_low_pool_copies_;
  // One Packet, built in place (a default-constructed one assigned later cost two allocations).
  inet::Packet packet = copy ? packet_copied_from_mbuf(mbuf) : packet_from_mbuf(mbuf);
  if (packet.rx_l4_checksum != inet::RxChecksum::Unknown) {
    ++rx_checksum_offloads_;
  } else if (trusted_link_) {
    // dpdk.trusted_link: the frame crossed shared memory from a Bypass process that computed no TCP
    // checksum (Linux marks loopback and veth frames CHECKSUM_UNNECESSARY alike). The IPv4 header
    // checksum is still verified: it is 20 bytes, and the sender still writes it.
    packet.rx_l4_checksum = inet::RxChecksum::Good;
    ++rx_checksums_trusted_;
  }
  return packet;
}

bool DpdkDevice::rx_pool_is_low(rte_mempool* pool) {
  // rte_mempool_avail_count walks every lcore cache, so it is read once per burst's worth of frames.
  if (frames_until_rx_pool_check_ == 0) {
    frames_until_rx_pool_check_ = kBurst;
    rx_pool_low_ = rte_mempool_avail_count(pool) < pool->size / 4;
  }
  --frames_until_rx_pool_check_;
  return rx_pool_low_;
}

inet::Packet DpdkDevice::packet_copied_from_mbuf(rte_mbuf* mbuf) {
  inet::Packet packet;
  set_rx_metadata(packet, mbuf);
  for (rte_mbuf* seg = mbuf; seg != nullptr; seg = seg->next) {
    if (seg->data_len != 0) packet.data.append(BufferSegment::copy_of(rte_pktmbuf_mtod(seg, char*), seg->data_len));
  }
  rte_pktmbuf_free(mbuf);
  return packet;
}

void DpdkDevice::set_rx_metadata(inet::Packet& packet, const rte_mbuf* mbuf) {
  // A frame the port merged from several TCP segments (LRO, e.g. virtio-user with GUEST_TSO) is one
  // segment for the stack; tso_segsz says how large the merged ones were.
  if ((mbuf->ol_flags & RTE_MBUF_F_RX_LRO) != 0) packet.rx_lro_segment_size = mbuf->tso_segsz;
  packet.rx_ip_checksum = verdict(mbuf->ol_flags, RTE_MBUF_F_RX_IP_CKSUM_MASK, RTE_MBUF_F_RX_IP_CKSUM_GOOD,
                                  RTE_MBUF_F_RX_IP_CKSUM_BAD, RTE_MBUF_F_RX_IP_CKSUM_NONE);
  packet.rx_l4_checksum = verdict(mbuf->ol_flags, RTE_MBUF_F_RX_L4_CKSUM_MASK, RTE_MBUF_F_RX_L4_CKSUM_GOOD,
                                  RTE_MBUF_F_RX_L4_CKSUM_BAD, RTE_MBUF_F_RX_L4_CKSUM_NONE);
}

namespace {
void free_mbuf_segment(void* mbuf, BufferStorage* /*header*/) { rte_pktmbuf_free_seg(static_cast<rte_mbuf*>(mbuf)); }
}  // namespace

// The storage header goes into the segment's own headroom when it is ours alone (a direct mbuf
// nobody else references): wrapping then allocates nothing. Attached external buffers (a looped
// port hands over the sender's pieces) have no headroom of theirs and take a pooled header.
BufferSegment DpdkDevice::wrap_mbuf_segment(rte_mbuf* seg) {
  char* data = rte_pktmbuf_mtod(seg, char*);
  if (RTE_MBUF_DIRECT(seg) && rte_mbuf_refcnt_read(seg) == 1 && seg->data_off >= BufferSegment::header_size) {
    auto* header = static_cast<BufferStorage*>(seg->buf_addr);  // cache-line aligned
    return BufferSegment::wrap(header, data, seg->data_len, &free_mbuf_segment, seg);
  }
  return BufferSegment::wrap(data, seg->data_len, &free_mbuf_segment, seg);
}

inet::Packet DpdkDevice::packet_from_mbuf(rte_mbuf* mbuf) {
  inet::Packet packet;
  set_rx_metadata(packet, mbuf);
  // Each segment is owned on its own, so the one holding only headers (the stack trims them at
  // once) goes back to the pool while the payload segments wait in the receive queue: a chain
  // pinned whole would hold twice the mbufs of what the application has not read yet.
  for (rte_mbuf* seg = mbuf; seg != nullptr;) {
    rte_mbuf* next = seg->next;
    seg->next = nullptr;
    seg->nb_segs = 1;
    seg->pkt_len = seg->data_len;
    if (seg->data_len == 0) {
      rte_pktmbuf_free_seg(seg);
    } else {
      packet.data.append(wrap_mbuf_segment(seg));
    }
    seg = next;
  }
  return packet;
}

void DpdkDevice::transmit(inet::Packet&& frame) {
  if (tx_chain_.cuts(frame)) {
    // The pieces of one large segment go out together (in bursts of kBurst), batching or not.
    const bool was_batching = batching_;
    batching_ = true;
    if (!tx_chain_.build_cut(frame, &DpdkDevice::queue_frame, this)) ++tx_alloc_failures_;
    batching_ = was_batching;
    if (!batching_) flush();
    return;
  }
  rte_mbuf* mbuf = tx_chain_.build(frame);
  if (mbuf == nullptr) {
    ++tx_alloc_failures_;
    return;
  }
  queue_frame(this, mbuf);
}

void DpdkDevice::queue_frame(void* self, rte_mbuf* mbuf) {
  auto& device = *static_cast<DpdkDevice*>(self);
  device.pending_[device.pending_count_++] = mbuf;
  if (!device.batching_ || device.pending_count_ == kBurst) device.flush();
}

uint16_t DpdkDevice::transmit_burst(rte_mbuf** mbufs, uint16_t count) {
  const uint16_t sent = port_.tx_burst(worker_, mbufs, count);
  ++tx_bursts_;
  tx_refused_bursts_ += sent == 0;
  return sent;
}

unsigned DpdkDevice::flush() {
  // Most poll iterations send nothing: no call into the driver (or the shared queue's lock) then.
  if (pending_count_ == 0 && backlog_.empty()) return 0;
  const unsigned queued = pending_count_;
  // Older frames first, so the queue keeps the stack's order.
  while (!backlog_.empty()) {
    rte_mbuf* burst[kBurst];
    const uint16_t n = static_cast<uint16_t>(std::min<size_t>(kBurst, backlog_.size()));
    std::copy_n(backlog_.begin(), n, burst);
    const uint16_t sent = transmit_burst(burst, n);
    backlog_.erase(backlog_.begin(), backlog_.begin() + sent);
    if (sent < n) break;
  }
  uint16_t sent = 0;
  if (backlog_.empty() && pending_count_ != 0) {
    sent = transmit_burst(pending_.data(), pending_count_);
  }
  for (uint16_t i = sent; i < pending_count_; ++i) {
    if (backlog_.size() < kMaxBacklog) {
      backlog_.push_back(pending_[i]);
    } else {
      rte_pktmbuf_free(pending_[i]);
      ++tx_dropped_;
    }
  }
  pending_count_ = 0;
  // TCP holds new data until the backlog is gone (dpdk.hold_when_backlogged).
  set_transmit_backlogged(hold_when_backlogged_ && !backlog_.empty());
  return queued + static_cast<unsigned>(backlog_.size());
}

}  // namespace bypass
