// Turns one transmitted inet::Packet into an mbuf chain, without copying the payload where it can.
//
// The stack hands frames down as a BufferList: the first segment holds the Ethernet/IPv4/TCP
// headers the stack just wrote, the rest are views into the connection's send buffer (message
// buffers the application gave up, or received mbufs being echoed). The headers and every piece
// shorter than the zero-copy threshold are copied into direct mbufs; longer pieces are attached to
// mbufs as external buffers (rte_pktmbuf_attach_extbuf). An attached mbuf holds its own reference
// on the piece's storage (an ExternalPiece), dropped by DPDK's free callback when the driver is
// done with the mbuf, so the memory outlives both the NIC's use and the TCP retransmission queue,
// whichever lets go last; a retransmission attaches the same memory again.
//
// Ports that copy anyway: a virtual device (memif in copy mode, tap, af_packet, ring) reads every
// frame with the CPU, so an attachment saves no copy; it only adds an mbuf, a heap-allocated owner
// and a free callback microseconds later. There pieces are copied into the mbufs (unless
// dpdk.attach_on_copying_ports asks otherwise), and where the port cannot complete the TCP checksum
// the copy sums the bytes it moves (ChecksumAccumulator::add_copy) and fills the field itself.
//
// Mbufs: an attachment costs one mbuf more than a copy (the payload no longer shares the header
// mbuf), and on a looped or shared-memory port the receiver may hold those mbufs until its
// application reads. So attaching stops while the pool is below a quarter free: copying then keeps
// the frames, and the ACKs that release memory, flowing instead of starving the pool.
//
// DMA: a virtual device (memif, tap, ring, af_packet) reads buffers with the CPU, so any address
// works. A NIC that DMAs needs IOVA-as-VA (VFIO) and a buffer inside memory DPDK has mapped for the
// device (its hugepages, or areas added with rte_extmem_register + rte_dev_dma_map); anything else
// is copied, and counted in TxChainCounters::unregistered_copies.
#pragma once

#include <rte_mbuf.h>

#include <cstddef>
#include <cstdint>

#include "base/buffer_list.h"
#include "stack/inet/packet.h"
#include "stack/inet/wire/checksum.h"

namespace bypass {

struct TxChainOptions {
  bool zero_copy = true;             // dpdk.zero_copy_send
  size_t zero_copy_threshold = 512;  // dpdk.zero_copy_threshold
  bool multi_seg = true;             // the port takes chained mbufs (tx-multi-seg)
  bool dma_needs_registered_memory = false;  // pmd::PortInfo::dma_needs_registered_memory
  uint16_t max_segments = UINT16_MAX;        // pmd::PortInfo::tx_max_segments
  bool device_copies = false;         // the port reads frames with the CPU (a virtual device)
  bool attach_when_device_copies = false;  // dpdk.attach_on_copying_ports
  // The port has no TCP checksum offload: frames asking for it (TxOffload::tcp_checksum, the
  // pseudo-header sum in the field) get it completed here, summed while their bytes are copied.
  bool software_tcp_checksum = false;
  // dpdk.trusted_link: the link cannot corrupt frames and the peer does not verify TCP checksums
  // (two Bypass processes over memif or ring), so none is computed, here or by the port.
  bool trusted_link = false;
  // Large TCP segments (inet::TxOffload::segment_payload): the port cuts them (TSO, marked
  // RTE_MBUF_F_TX_TCP_SEG with tso_segsz), or, without it, build_cut() cuts them while copying.
  bool tso = false;
  // dpdk.gso: without TSO, large segments are still offered to the stack and cut by build_cut().
  bool software_segmentation = true;
  // dpdk.hold_when_backlogged: read by DpdkDevice, which then tells TCP to hold new data while it
  // holds refused frames (inet::PacketDevice::transmit_backlogged).
  bool hold_when_backlogged = false;
};

struct TxChainCounters {
  uint64_t frames = 0;
  uint64_t attached_pieces = 0;   // mbufs carrying an external (zero-copy) buffer
  uint64_t attached_bytes = 0;
  uint64_t copied_bytes = 0;      // headers included
  uint64_t unregistered_copies = 0;  // pieces copied only because the NIC could not DMA from them
  uint64_t low_pool_copies = 0;      // pieces copied because the mempool was running low
  uint64_t checksum_offloads = 0;    // frames whose IPv4/TCP checksum the port completes
  uint64_t software_checksums = 0;   // frames whose TCP checksum the chain completed while copying
  uint64_t trusted_checksums = 0;    // frames sent without a TCP checksum (TxChainOptions::trusted_link)
  uint64_t tso_segments = 0;         // large segments handed to the port to cut (TSO)
  uint64_t cut_segments = 0;         // large segments cut here (software segmentation)
  uint64_t cut_frames = 0;           // frames those became
};

class TxChainBuilder {
 public:
  TxChainBuilder(rte_mempool* pool, const TxChainOptions& options);

  // The chain for `frame`, with the offload fields (ol_flags, l2/l3/l4_len) the frame asks for;
  // nullptr when the pool ran out (nothing is leaked then).
  rte_mbuf* build(const inet::Packet& frame);

  // Software segmentation: whether `frame` is a large TCP segment the port cannot cut itself.
  bool cuts(const inet::Packet& frame) const { return frame.tx.segment_payload != 0 && !options_.tso; }
  // Cuts such a frame into MTU-sized frames while copying it into mbufs (inet::TcpSegmentCutter:
  // headers repeated and patched per frame, the TCP checksum summed in the same pass as the copy
  // unless the port completes it), handing each to `emit(context, mbuf)` in order. Returns false
  // when the pool ran out or the headers are not a TCP segment's (over IPv4 or IPv6); frames
  // already emitted stand (TCP retransmits the rest). Allocates nothing but mbufs.
  using EmitFrame = void (*)(void* context, rte_mbuf* frame);
  bool build_cut(const inet::Packet& frame, EmitFrame emit, void* context);

  const TxChainCounters& counters() const { return counters_; }
  const TxChainOptions& options() const { return options_; }

 private:
  class Chain;
  // Whether a piece of a segment is attached rather than copied (inline: most ports copy).
  bool attachable(const char* data, size_t length) {
    return options_.zero_copy && length >= options_.zero_copy_threshold && attachable_here(data, length);
  }
  // The rest of the decision: pool room, and memory the port can DMA from.
  bool attachable_here(const char* data, size_t length);
  // Re-evaluated every kPoolCheckInterval frames (counting free mbufs walks the lcore caches).
  bool pool_has_room();
  static constexpr unsigned kPoolCheckInterval = 16;
  // A fresh mbuf whose external buffer is `piece` (at most 65535 bytes: buf_len is 16 bits).
  rte_mbuf* attach(const BufferSegment& piece);
  // Fills the TCP checksum field of a frame whose L4 bytes `sum` covered.
  static void store_tcp_checksum(rte_mbuf* head, size_t l4_offset, uint16_t checksum);

  rte_mempool* pool_;
  TxChainOptions options_;
  bool iova_is_va_;
  unsigned low_water_;  // free mbufs below which pieces are copied
  unsigned frames_until_pool_check_ = 0;
  bool pool_has_room_ = true;
  TxChainCounters counters_;
};

// Number of external pieces currently attached to mbufs and not yet released, process-wide (the
// free callback may run on any thread). Tests use it to prove every attachment is released.
uint64_t tx_pieces_outstanding();

}  // namespace bypass
