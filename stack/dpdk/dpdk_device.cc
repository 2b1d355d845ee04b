#include "stack/dpdk/dpdk_device.h"

#include <algorithm>
#include <memory>

#include "config/log.h"

namespace bypass {

namespace {

// Frees a multi-segment chain once every segment's view is released.
struct MbufChainOwner {
  rte_mbuf* head;
  ~MbufChainOwner() { rte_pktmbuf_free(head); }
};

// Frames kept for a later flush when the TX queue is full; beyond this the stack's
// retransmission covers the loss better than an ever-growing queue.
constexpr size_t kMaxBacklog = 8192;

}  // namespace

DpdkDevice::DpdkDevice(pmd::Port& port, unsigned worker, inet::MacAddress mac)
    : port_(port), worker_(worker), mtu_(port.info().mtu != 0 ? port.info().mtu : 1500), mac_(mac) {}

DpdkDevice::~DpdkDevice() {
  rte_pktmbuf_free_bulk(pending_.data(), pending_count_);
  pending_count_ = 0;
  for (rte_mbuf* m : backlog_) rte_pktmbuf_free(m);
  backlog_.clear();
}

inet::Packet DpdkDevice::packet_from_mbuf(rte_mbuf* mbuf) {
  inet::Packet packet;
  if (mbuf->nb_segs == 1) {
    packet.data.append(BufferSegment::wrap(rte_pktmbuf_mtod(mbuf, char*), mbuf->data_len,
                                           [mbuf] { rte_pktmbuf_free(mbuf); }));
    return packet;
  }
  auto owner = std::make_shared<MbufChainOwner>(MbufChainOwner{mbuf});
  for (rte_mbuf* seg = mbuf; seg != nullptr; seg = seg->next) {
    if (seg->data_len == 0) continue;
    packet.data.append(
        BufferSegment::wrap(rte_pktmbuf_mtod(seg, char*), seg->data_len, [owner] {}));
  }
  return packet;
}

rte_mbuf* DpdkDevice::build_mbuf(const inet::Packet& frame) {
  rte_mempool* pool = port_.mempool();
  rte_mbuf* head = rte_pktmbuf_alloc(pool);
  if (head == nullptr) return nullptr;
  const size_t total = frame.data.length();
  size_t offset = 0;
  rte_mbuf* tail = head;
  while (true) {
    const size_t room = rte_pktmbuf_tailroom(tail);
    const size_t chunk = std::min(room, total - offset);
    char* dst = rte_pktmbuf_append(tail, static_cast<uint16_t>(chunk));
    frame.data.copy_out(offset, chunk, dst);
    offset += chunk;
    if (offset >= total) break;
    rte_mbuf* next = rte_pktmbuf_alloc(pool);
    if (next == nullptr || rte_pktmbuf_chain(head, next) != 0) {
      rte_pktmbuf_free(next);
      rte_pktmbuf_free(head);
      return nullptr;
    }
    tail = next;
  }
  return head;
}

void DpdkDevice::transmit(inet::Packet&& frame) {
  rte_mbuf* mbuf = build_mbuf(frame);
  if (mbuf == nullptr) {
    ++tx_alloc_failures_;
    return;
  }
  pending_[pending_count_++] = mbuf;
  if (!batching_ || pending_count_ == kBurst) flush();
}

unsigned DpdkDevice::flush() {
  const unsigned queued = pending_count_;
  // Older frames first, so the queue keeps the stack's order.
  while (!backlog_.empty()) {
    rte_mbuf* burst[kBurst];
    const uint16_t n = static_cast<uint16_t>(std::min<size_t>(kBurst, backlog_.size()));
    std::copy_n(backlog_.begin(), n, burst);
    const uint16_t sent = port_.tx_burst(worker_, burst, n);
    backlog_.erase(backlog_.begin(), backlog_.begin() + sent);
    if (sent < n) break;
  }
  uint16_t sent = 0;
  if (backlog_.empty()) sent = port_.tx_burst(worker_, pending_.data(), pending_count_);
  for (uint16_t i = sent; i < pending_count_; ++i) {
    if (backlog_.size() < kMaxBacklog) {
      backlog_.push_back(pending_[i]);
    } else {
      rte_pktmbuf_free(pending_[i]);
      ++tx_dropped_;
    }
  }
  pending_count_ = 0;
  return queued + static_cast<unsigned>(backlog_.size());
}

}  // namespace bypass
