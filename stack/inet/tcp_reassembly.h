// The receiver's out-of-order queue (RFC 9293 §3.10.7.4: data beyond RCV.NXT kept until the gap
// before it fills) and the SACK blocks that describe it (RFC 2018 §4).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/buffer_list.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet {

class ReassemblyQueue {
 public:
  static constexpr size_t kMaxSegments = 1024;  // bound on reassembly bookkeeping per connection

  // Keeps `data` (and a FIN after it) received at `seq` beyond RCV.NXT, trimmed against what is
  // already queued; drops it when the queue is full (the sender will retransmit).
  void insert(SeqNumber seq, BufferList&& data, bool fin);
  // Moves what `rcv_nxt` now reaches to `sink` (dropped if null: nobody reads any more), advancing
  // `rcv_nxt` and `delivered`. Returns whether an in-order FIN was reached (`fin`: already).
  bool drain(SeqNumber& rcv_nxt, bool fin, BufferList* sink, uint64_t& delivered);
  // Appends SACK blocks after those already in `options`, up to `max_blocks` in all: the block
  // holding the most recent arrival first, then the others from the highest down (RFC 2018 §4).
  void sack_blocks(TcpOptions& options, size_t max_blocks) const;

  bool empty() const { return segments_.empty(); }
  size_t size() const { return segments_.size(); }
  void clear() { segments_.clear(); }

 private:
  struct Segment {
    SeqNumber seq;
    BufferList data;
    bool fin;
    SeqNumber end() const { return seq + static_cast<uint32_t>(data.length()); }
  };
  std::vector<Segment> segments_;  // sorted by seq, non-overlapping
  SackBlock last_block_{};         // the most recent arrival (RFC 2018 §4)
};

}  // namespace bypass::inet
