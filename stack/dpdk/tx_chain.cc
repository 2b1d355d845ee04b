#include "stack/dpdk/tx_chain.h"

#include <rte_eal.h>
#include <rte_memory.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include "stack/inet/wire/tcp_segmentation.h"

namespace bypass {

namespace {

std::atomic<uint64_t> pieces_outstanding{0};

// What one attached mbuf owns: DPDK's shared-info block (refcount + free callback) and a view on
// the piece's storage, which keeps that storage alive until the callback runs.
struct ExternalPiece {
  rte_mbuf_ext_shared_info shinfo{};
  BufferSegment piece;
};

// DPDK calls this when the last mbuf referring to the external buffer is freed: after the driver
// sent (or dropped) the frame, possibly on another thread (a looped net_ring hands the mbuf to the
// receiving worker). attach() made the piece's count atomic, so releasing here is safe.
// ExternalPiece blocks come from the thread's block pool (base/buffer_storage.h): the one that
// frees them keeps them for its own next attach, so a steady stream allocates nothing.
const int kPieceClass = block_pool::class_for(sizeof(ExternalPiece));
static_assert(sizeof(ExternalPiece) <= block_pool::kLargestBlock);

void release_piece(void* /*addr*/, void* opaque) {
  auto* piece = static_cast<ExternalPiece*>(opaque);
  piece->~ExternalPiece();
  block_pool::put(kPieceClass, piece);
  pieces_outstanding.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace

uint64_t tx_pieces_outstanding() { return pieces_outstanding.load(std::memory_order_relaxed); }

// The chain under construction: pieces are copied into the tail while it is a direct mbuf with
// room; attached mbufs are linked as they come. Frees everything if it is dropped unfinished.
class TxChainBuilder::Chain {
 public:
  explicit Chain(rte_mempool* pool) : pool_(pool) {}
  ~Chain() {
    if (head_ != nullptr) rte_pktmbuf_free(head_);
  }
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;

  // The head: a direct mbuf the headers are copied into.
  bool start() {
    head_ = tail_ = rte_pktmbuf_alloc(pool_);
    return head_ != nullptr;
  }
  uint16_t segments() const { return head_->nb_segs; }

  // With `sum`, the copied bytes are also added to it (one pass over them).
  bool copy(const char* src, size_t len, inet::ChecksumAccumulator* sum = nullptr) {
    while (len > 0) {
      if (!RTE_MBUF_DIRECT(tail_) || rte_pktmbuf_tailroom(tail_) == 0) {
        rte_mbuf* m = rte_pktmbuf_alloc(pool_);
        if (m == nullptr) return false;
        link(m);
      }
      const size_t n = std::min<size_t>(len, rte_pktmbuf_tailroom(tail_));
      char* dst = rte_pktmbuf_mtod_offset(tail_, char*, tail_->data_len);
      if (sum != nullptr) {
        sum->add_copy(dst, src, n);
      } else {
        std::memcpy(dst, src, n);
      }
      grow(static_cast<uint16_t>(n));
      src += n;
      len -= n;
    }
    return true;
  }

  // `m` carries an attached external buffer of m->buf_len bytes.
  void append_attached(rte_mbuf* m) {
    const uint16_t len = m->buf_len;
    link(m);
    grow(len);
  }

  rte_mbuf* head() const { return head_; }
  rte_mbuf* release() {
    rte_mbuf* h = head_;
    head_ = tail_ = nullptr;
    return h;
  }

 private:
  void link(rte_mbuf* m) {
    tail_->next = m;
    ++head_->nb_segs;
    tail_ = m;
  }
  void grow(uint16_t n) {
    tail_->data_len = static_cast<uint16_t>(tail_->data_len + n);
    head_->pkt_len += n;
  }

  rte_mempool* pool_;
  rte_mbuf* head_ = nullptr;
  rte_mbuf* tail_ = nullptr;
};

namespace {

// The EtherType ends the L2 header (14 bytes, or 18 behind a VLAN tag); the stack's headers are
// always copied into the first mbuf (build()), so it is there to read.
bool carries_ipv6(const rte_mbuf* head, uint8_t l2_length) {
  if (l2_length < 2 || head->data_len < l2_length) return false;
  const auto* type = rte_pktmbuf_mtod_offset(head, const uint8_t*, l2_length - 2);
  return type[0] == 0x86 && type[1] == 0xdd;
}

// DPDK's offload contract (rte_mbuf_core.h): RTE_MBUF_F_TX_IPV4 or _IPV6 names the L3 header the
// device parses; IPv6 has no header checksum (RFC 8200 §3), so never RTE_MBUF_F_TX_IP_CKSUM. The
// TCP checksum field holds the pseudo-header sum of the family (RFC 8200 §8.1 for IPv6).
uint64_t l3_flags(const rte_mbuf* head, const inet::TxOffload& tx) {
  if (carries_ipv6(head, tx.l2_length)) return RTE_MBUF_F_TX_IPV6;
  return RTE_MBUF_F_TX_IPV4 | (tx.ipv4_checksum ? RTE_MBUF_F_TX_IP_CKSUM : 0);
}

}  // namespace

TxChainBuilder::TxChainBuilder(rte_mempool* pool, const TxChainOptions& options)
    : pool_(pool),
      options_(options),
      iova_is_va_(rte_eal_iova_mode() == RTE_IOVA_VA),
      low_water_(pool->size / 4) {
  // Attaching means chaining; and a DMA-ing NIC in physical-address mode could not follow a piece
  // across non-contiguous pages with the single IOVA an mbuf carries.
  if (!options_.multi_seg || (options_.dma_needs_registered_memory && !iova_is_va_)) options_.zero_copy = false;
  if (options_.device_copies && !options_.attach_when_device_copies) options_.zero_copy = false;
  options_.zero_copy_threshold = std::max<size_t>(options_.zero_copy_threshold, 1);
}

bool TxChainBuilder::pool_has_room() {
  if (frames_until_pool_check_ == 0) {
    frames_until_pool_check_ = kPoolCheckInterval;
    pool_has_room_ = rte_mempool_avail_count(pool_) >= low_water_;
  }
  return pool_has_room_;
}

bool TxChainBuilder::attachable_here(const char* data, size_t length) {
  if (!pool_has_room()) {
    ++counters_.low_pool_copies;
    return false;
  }
  if (!options_.dma_needs_registered_memory) return true;
  const char* last = data + length - 1;
  const rte_memseg_list* list = rte_mem_virt2memseg_list(data);
  if (list != nullptr && list == rte_mem_virt2memseg_list(last)) return true;
  ++counters_.unregistered_copies;
  return false;
}

rte_mbuf* TxChainBuilder::attach(const BufferSegment& piece) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) return nullptr;
  auto* owned = new (block_pool::get(kPieceClass)) ExternalPiece{};
  owned->piece = piece;
  // The mbuf may be freed on another worker (a looped net_ring delivers it there): from now on
  // the piece's count is atomic (base/buffer_storage.h).
  owned->piece.share_across_threads();
  owned->shinfo.free_cb = &release_piece;
  owned->shinfo.fcb_opaque = owned;
  rte_mbuf_ext_refcnt_set(&owned->shinfo, 1);
  pieces_outstanding.fetch_add(1, std::memory_order_relaxed);
  // The IOVA matters only to a device that DMAs, and such a port attaches only with IOVA as VA
  // (see the constructor). Never rte_mem_virt2iova here: in PA mode it reads /proc/self/pagemap,
  // four syscalls per piece.
  const auto iova = static_cast<rte_iova_t>(reinterpret_cast<uintptr_t>(piece.data()));
  rte_pktmbuf_attach_extbuf(m, piece.data(), iova, static_cast<uint16_t>(piece.length()), &owned->shinfo);
  return m;
}

void TxChainBuilder::store_tcp_checksum(rte_mbuf* head, size_t l4_offset, uint16_t checksum) {
  const uint8_t bytes[2] = {static_cast<uint8_t>(checksum >> 8), static_cast<uint8_t>(checksum)};
  size_t at = l4_offset + 16;  // RFC 9293 §3.1: the checksum field
  int written = 0;
  for (rte_mbuf* m = head; m != nullptr && written < 2; m = m->next) {
    for (; at < m->data_len && written < 2; ++at) *rte_pktmbuf_mtod_offset(m, uint8_t*, at) = bytes[written++];
    if (written < 2) at -= m->data_len;
  }
}

rte_mbuf* TxChainBuilder::build(const inet::Packet& frame) {
  if (frames_until_pool_check_ > 0) --frames_until_pool_check_;
  Chain chain(pool_);
  if (!chain.start()) return nullptr;
  // The TCP checksum the port cannot complete is summed here over the L4 bytes (the field holds the
  // pseudo-header sum already), as they are copied.
  const bool trusted = frame.tx.tcp_checksum && options_.trusted_link;
  const bool sum_here = frame.tx.tcp_checksum && options_.software_tcp_checksum && !trusted;
  const size_t l4_offset = size_t{frame.tx.l2_length} + frame.tx.l3_length;
  inet::ChecksumAccumulator sum;
  const auto& segments = frame.data.segments();
  uint64_t attached_pieces = 0, attached_bytes = 0;
  size_t at = 0;  // frame offset of segments[i]
  for (size_t i = 0; i < segments.size(); at += segments[i].length(), ++i) {
    const BufferSegment& segment = segments[i];
    // Bytes of this segment before the L4 header are not summed.
    const size_t unsummed = !sum_here ? segment.length() : at >= l4_offset ? 0 : std::min(segment.length(), l4_offset - at);
    // The first segment is the stack's header block: always copied, so the headers sit in the
    // first mbuf, where checksum offload (and net_tap's software fallback for it) looks for them.
    // Keep one segment spare for a copied tail when the port limits the chain length.
    const bool attach_it =
        i > 0 && chain.segments() + 2 <= options_.max_segments && attachable(segment.data(), segment.length());
    if (!attach_it) {
      if (!chain.copy(segment.data(), unsummed) ||
          !chain.copy(segment.data() + unsummed, segment.length() - unsummed, &sum))
        return nullptr;
      continue;
    }
    if (sum_here) sum.add(segment.data() + unsummed, segment.length() - unsummed);
    constexpr size_t kMaxPiece = UINT16_MAX;  // rte_mbuf::buf_len
    for (size_t offset = 0; offset < segment.length(); offset += kMaxPiece) {
      const BufferSegment piece = segment.sub(offset, std::min(kMaxPiece, segment.length() - offset));
      rte_mbuf* m = attach(piece);
      if (m == nullptr) return nullptr;
      chain.append_attached(m);
      ++attached_pieces;
      attached_bytes += piece.length();
    }
  }
  rte_mbuf* head = chain.head();
  if (sum_here) {
    store_tcp_checksum(head, l4_offset, sum.finish());
    ++counters_.software_checksums;
  }
  if (trusted) ++counters_.trusted_checksums;
  const bool port_tcp_checksum = frame.tx.tcp_checksum && !sum_here && !trusted;
  if (frame.tx.segment_payload != 0 && options_.tso) {
    // DPDK's TSO contract (rte_mbuf_core.h, RTE_MBUF_F_TX_TCP_SEG): implies the TCP checksum, the
    // field holding the pseudo-header sum without the length (the stack wrote it so), tso_segsz
    // the payload per cut segment; drivers that want otherwise fix it in rte_eth_tx_prepare.
    head->l2_len = frame.tx.l2_length;
    head->l3_len = frame.tx.l3_length;
    head->l4_len = frame.tx.l4_length;
    head->tso_segsz = frame.tx.segment_payload;
    head->ol_flags |= RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_TCP_CKSUM | l3_flags(head, frame.tx);
    ++counters_.tso_segments;
  } else if (frame.tx.ipv4_checksum || port_tcp_checksum) {
    // DPDK's contract (rte_mbuf_core.h, RTE_MBUF_F_TX_*_CKSUM): l2/l3/l4 lengths set, the IPv4
    // checksum field zero and the TCP field holding the pseudo-header sum; the stack did both.
    head->l2_len = frame.tx.l2_length;
    head->l3_len = frame.tx.l3_length;
    head->l4_len = frame.tx.l4_length;
    head->ol_flags |= l3_flags(head, frame.tx);
    if (port_tcp_checksum) head->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM;
    ++counters_.checksum_offloads;
  }
  ++counters_.frames;
  counters_.attached_pieces += attached_pieces;
  counters_.attached_bytes += attached_bytes;
  counters_.copied_bytes += head->pkt_len - attached_bytes;
  return chain.release();
}

bool TxChainBuilder::build_cut(const inet::Packet& frame, EmitFrame emit, void* context) {
  const inet::TxOffload& tx = frame.tx;
  const size_t l4_offset = size_t{tx.l2_length} + tx.l3_length;
  const size_t header_length = l4_offset + tx.l4_length;
  uint8_t large[inet::TcpSegmentCutter::kMaxHeaderLength];
  if (header_length > sizeof(large) || frame.data.length() < header_length) return false;
  frame.data.copy_out(0, header_length, large);
  const inet::TcpSegmentCutter cutter(large, tx, frame.data.length() - header_length);
  if (cutter.frames() == 0) return false;
  // Where the payload starts: segment index and offset in it.
  const auto& segments = frame.data.segments();
  size_t segment = 0, offset = header_length;
  while (segment < segments.size() && offset >= segments[segment].length()) offset -= segments[segment++].length();
  const bool sum_here = options_.software_tcp_checksum && !options_.trusted_link;
  for (size_t i = 0; i < cutter.frames(); ++i) {
    Chain chain(pool_);
    if (!chain.start()) return false;
    uint8_t headers[inet::TcpSegmentCutter::kMaxHeaderLength];
    cutter.write_headers(i, headers);
    inet::ChecksumAccumulator sum;
    inet::ChecksumAccumulator* summing = sum_here ? &sum : nullptr;
    if (!chain.copy(reinterpret_cast<const char*>(headers), l4_offset) ||
        !chain.copy(reinterpret_cast<const char*>(headers) + l4_offset, tx.l4_length, summing))
      return false;
    for (size_t remaining = cutter.payload_length(i); remaining > 0;) {
      const BufferSegment& whole = segments[segment];
      const size_t n = std::min(remaining, whole.length() - offset);
      // Where the port attaches (dpdk.zero_copy_* and the port's limits), the payload is
      // attached as in build(), and only summed when the port cannot sum it. A view of the piece
      // (a count on its storage, atomic when shared across threads) is made only to attach it.
      if (n != 0 && chain.segments() + 2 <= options_.max_segments && attachable(whole.data() + offset, n)) {
        rte_mbuf* m = attach(whole.sub(offset, n));
        if (m == nullptr) return false;
        if (summing != nullptr) summing->add(whole.data() + offset, n);
        chain.append_attached(m);
        ++counters_.attached_pieces;
        counters_.attached_bytes += n;
      } else if (!chain.copy(whole.data() + offset, n, summing)) {
        return false;
      }
      remaining -= n;
      offset += n;
      if (offset == whole.length()) {
        ++segment;
        offset = 0;
      }
    }
    rte_mbuf* head = chain.head();
    if (sum_here) {
      store_tcp_checksum(head, l4_offset, sum.finish());
      ++counters_.software_checksums;
    } else if (options_.trusted_link) {
      ++counters_.trusted_checksums;
    } else {
      head->l2_len = tx.l2_length;
      head->l3_len = tx.l3_length;
      head->l4_len = tx.l4_length;
      inet::TxOffload cut = tx;
      cut.ipv4_checksum = false;  // the cutter wrote each IPv4 header's checksum
      head->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM | l3_flags(head, cut);
      ++counters_.checksum_offloads;
    }
    ++counters_.frames;
    ++counters_.cut_frames;
    for (const rte_mbuf* m = head; m != nullptr; m = m->next)
      if (RTE_MBUF_DIRECT(m)) counters_.copied_bytes += m->data_len;
    emit(context, chain.release());
  }
  ++counters_.cut_segments;
  return true;
}

}  // namespace bypass
