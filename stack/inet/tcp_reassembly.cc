#include "stack/inet/tcp_reassembly.h"

#include <algorithm>

#include "stack/inet/wire/seq_number.h"

namespace bypass::inet {

void ReassemblyQueue::insert(SeqNumber seq, BufferList&& data, bool fin) {
  SeqNumber end = seq + static_cast<uint32_t>(data.length());
  auto it = std::find_if(segments_.begin(), segments_.end(), [&](const Segment& e) { return e.seq > seq; });
  // Trim against the predecessor (entries never overlap each other).
  if (it != segments_.begin()) {
    const Segment& prev = *std::prev(it);
    SeqNumber prev_end = prev.end();
    if (prev_end >= end) {
      if (!fin || prev.fin || prev_end != end) return;  // nothing new
      std::prev(it)->fin = true;
      last_block_ = {prev.seq, prev_end};
      return;
    }
    if (prev_end > seq) {
      data.trim_front(prev_end - seq);
      seq = prev_end;
    }
  }
  // Drop successors the new data covers; cut the new data before a partial overlap.
  while (it != segments_.end() && it->seq < end) {
    SeqNumber it_end = it->end();
    if (it_end <= end && !(it->fin && it_end == end && !fin)) {
      fin = fin || (it->fin && it_end == end);
      it = segments_.erase(it);
      continue;
    }
    data.truncate(it->seq - seq);
    end = it->seq;
    fin = false;
    break;
  }
  if (data.empty() && !fin) return;
  if (segments_.size() >= kMaxSegments) return;  // the sender will retransmit
  last_block_ = {seq, end};
  segments_.insert(it, Segment{seq, std::move(data), fin});
}

bool ReassemblyQueue::drain(SeqNumber& rcv_nxt, bool fin, BufferList* sink, uint64_t& delivered) {
  size_t taken = 0;
  for (; !fin && taken < segments_.size() && segments_[taken].seq <= rcv_nxt; ++taken) {
    Segment& e = segments_[taken];
    SeqNumber e_end = e.end();
    if (e_end > rcv_nxt) {
      e.data.trim_front(rcv_nxt - e.seq);
      rcv_nxt = e_end;
      delivered += e.data.length();
      if (sink) sink->append(std::move(e.data));
    }
    fin = e.fin && e_end == rcv_nxt;
  }
  segments_.erase(segments_.begin(), segments_.begin() + static_cast<ptrdiff_t>(taken));
  if (fin) segments_.clear();  // nothing can follow a FIN
  return fin;
}

void ReassemblyQueue::sack_blocks(TcpOptions& options, size_t max_blocks) const {
  // Adjacent entries form one block; walked without a copy (no allocation per ACK).
  const size_t first = options.sack_count;
  auto block_ending_at = [&](size_t last) {  // the block whose last entry is segments_[last]
    size_t i = last;
    while (i > 0 && segments_[i - 1].end() == segments_[i].seq) --i;
    return std::make_pair(i, SackBlock{segments_[i].seq, segments_[last].end()});
  };
  for (size_t last = segments_.size(); last > 0 && options.sack_count < max_blocks;) {
    auto [start, block] = block_ending_at(last - 1);
    last = start;
    if (block.left <= last_block_.left && block.right >= last_block_.right && block.left != block.right) {
      options.sack_blocks[options.sack_count++] = block;
      break;
    }
  }
  for (size_t last = segments_.size(); last > 0 && options.sack_count < max_blocks;) {
    auto [start, block] = block_ending_at(last - 1);
    last = start;
    if (options.sack_count > first && block == options.sack_blocks[first]) continue;
    if (block.left == block.right) continue;
    options.sack_blocks[options.sack_count++] = block;
  }
}

}  // namespace bypass::inet
