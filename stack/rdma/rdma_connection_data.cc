// RdmaConnection's data path: the owner's reads and sends, SEND work requests, credits, FIN, and
// the completions of what it posted (rdma_connection.h). Rendezvous descriptors and their READs
// are rdma_connection_rendezvous.cc's.
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "stack/rdma/rdma_connection.h"
#include "stack/rdma/rdma_worker.h"

namespace bypass::rdma {

bool RdmaConnection::readable() const {
  if (rx_.empty()) return false;
  const RxItem& front = rx_.front();
  return front.transfer == nullptr || !front.transfer->ready.empty();
}

void RdmaConnection::update_events() {
  if (event_id_ < 0) return;
  int ready = 0;
  if (readable() || at_end() || state_ == ConnState::Failed) ready |= kEventReadable;
  // A sender waiting for room or credits from a peer that is gone is told too: send() says EPIPE.
  if ((state_ == ConnState::Established && (!want_writable_ || side_eof_)) || state_ == ConnState::Failed)
    ready |= kEventWritable;
  if (ready) worker_.poller().notify(event_id_, ready);
  const int not_ready = (kEventReadable | kEventWritable) & ~ready;
  if (not_ready) worker_.poller().clear(event_id_, not_ready);
}

// The loop read() and zero_copy_read() share: up to `max_len` bytes from the front of rx_, in
// arrival order, counting the messages consumed whole. `take_ready(ready, n, taken)` takes the
// first n bytes of a rendezvous transfer's received data out of `ready`; `take_segment(seg, n,
// taken)` takes the first n bytes of a received chunk (all of it, which it may move out, when n
// is its length). Inline in both callers: the per-read path keeps its own code for each.
template <class TakeReady, class TakeSegment>
size_t RdmaConnection::drain_rx(size_t max_len, uint32_t& messages, TakeReady&& take_ready,
                                TakeSegment&& take_segment) {
  size_t taken = 0;
  while (taken < max_len && !rx_.empty()) {
    RxItem& item = rx_.front();
    if (item.transfer != nullptr) {
      InboundTransfer& t = *item.transfer;
      const size_t n = std::min(max_len - taken, t.ready.length());
      take_ready(t.ready, n, taken);
      taken += n;
      read_ahead_bytes_ -= n;
      if (!t.complete() || !t.ready.empty()) break;  // the rest is still being read
      inbound_.pop_front();
      rx_.pop_front();
      ++messages;
      continue;
    }
    BufferSegment& seg = item.segment;
    const size_t n = std::min(max_len - taken, seg.length());
    const bool whole = n == seg.length();
    take_segment(seg, n, taken);
    taken += n;
    if (whole) {
      rx_.pop_front();  // the chunk goes back to the receive queue (or left with the reader)
      ++messages;
    } else {
      seg.trim_front(n);
    }
  }
  return taken;
}

ssize_t RdmaConnection::read(char* buf, size_t len) {
  uint32_t messages = 0;
  const size_t copied = drain_rx(
      len, messages,
      [buf](BufferList& ready, size_t n, size_t at) {
        ready.copy_out(0, n, buf + at);
        ready.trim_front(n);
      },
      [buf](BufferSegment& seg, size_t n, size_t at) { std::memcpy(buf + at, seg.data(), n); });
  worker_.counters().rx_copied_bytes += copied;
  return finish_read(copied, len, messages);
}

ssize_t RdmaConnection::zero_copy_read(BufferList& out, size_t max_len) {
  uint32_t messages = 0;
  const size_t moved = drain_rx(
      max_len, messages, [&out](BufferList& ready, size_t n, size_t) { ready.splice_front(n, out); },
      [&out](BufferSegment& seg, size_t n, size_t) {
        if (n == seg.length()) {
          out.append(std::move(seg));
        } else {
          out.append(seg.sub(0, n));
        }
      });
  // The owner holds these chunks now: they left the window (the pool's other users are bounded by
  // their own windows, the owner by what it chooses to keep).
  return finish_read(moved, max_len, messages);
}

ssize_t RdmaConnection::finish_read(size_t taken, size_t wanted, uint32_t messages) {
  worker_.counters().bytes_received += taken;
  if (messages > 0) consumed(messages);
  if (taken > 0 && !inbound_.empty()) pump_reads();  // room to read ahead again
  if (taken > 0 || wanted == 0) {
    update_events();
    return static_cast<ssize_t>(taken);
  }
  // What is left may be a descriptor still being read: not the end yet.
  if (fin_received_ && rx_.empty()) return 0;
  if (state_ == ConnState::Failed) return error_;
  if (side_eof_ && rx_.empty()) return -ECONNRESET;
  update_events();
  return -EAGAIN;
}

bool RdmaConnection::sent_in_place(const char* data, size_t len) const {
  // A registered run shorter than half a send chunk is copied in with its neighbours: its own SEND
  // would cost a work request and a completion on each side, more than the copy (a 4 KiB message
  // from RegisteredMemory went as three SENDs, header, payload and footer: 11x the work requests).
  return len > 0 && len >= worker_.tuning().chunk_size / 2 && worker_.lkey_for(data, len) != 0;
}

bool RdmaConnection::room_for_data() const {
  return sends_outstanding_ + 3 < worker_.tuning().qp_depth && worker_.send_budget_left() > 1;
}

ssize_t RdmaConnection::send(BufferList& data) {
  if (state_ == ConnState::Failed) return error_;
  if (state_ == ConnState::Connecting || state_ == ConnState::Handshaking) return -EAGAIN;
  if (state_ != ConnState::Established || fin_sent_ || fin_wanted_ || side_eof_) return -EPIPE;
  const size_t max_message = send_limit_;
  const size_t threshold = read_depth_ > 0 ? worker_.tuning().rendezvous_threshold : 0;
  size_t accepted = 0;
  // Every data or descriptor SEND takes one of the peer's credits.
  while (!data.empty() && send_credits_.can_send() && room_for_data()) {
    const BufferSegment& front = data.segments().front();
    if (threshold > 0 && front.length() >= threshold) {
      const ssize_t taken = post_descriptor(data);
      if (taken < 0) break;
      if (taken > 0) {
        accepted += static_cast<size_t>(taken);
        continue;
      }
      // Not by rendezvous (borrowed memory, no registration): two-sided below.
    }
    const size_t piece = std::min(front.length(), max_message);
    if (sent_in_place(front.data(), piece)) {
      // Already registered (a received chunk being forwarded, a payload from RegisteredMemory
      // below the threshold): post it in place.
      if (!post_send(nullptr, front.data(), static_cast<uint32_t>(piece), front.sub(0, piece),
                     SendKind::Data))
        break;
      data.trim_front(piece);
      accepted += piece;
      worker_.counters().zero_copy_sent_bytes += piece;
      continue;
    }
    char* chunk = worker_.tx_pool().get();
    if (chunk == nullptr) break;
    // Copy unregistered segments into the chunk, stopping at a registered one (sent in place) and
    // at one long enough for rendezvous.
    size_t fill = 0;
    for (const BufferSegment& seg : data.segments()) {
      if (fill == max_message) break;
      if (fill > 0 && (sent_in_place(seg.data(), std::min(seg.length(), max_message)) ||
                       (threshold > 0 && seg.length() >= threshold)))
        break;
      const size_t n = std::min(seg.length(), max_message - fill);
      std::memcpy(chunk + fill, seg.data(), n);
      fill += n;
      if (n < seg.length()) break;
    }
    if (!post_send(chunk, chunk, static_cast<uint32_t>(fill), {}, SendKind::Data)) break;
    data.trim_front(fill);
    accepted += fill;
    worker_.counters().tx_copied_bytes += fill;
  }
  worker_.counters().bytes_sent += accepted;
  if (state_ == ConnState::Failed && accepted == 0) return error_;
  if (accepted == 0 && !data.empty()) {
    want_writable_ = true;
    worker_.count_send_eagain();
    // Out of credits: on_credits() wakes us. Out of slots or chunks: a completion does.
    if (!blocked_on_credits()) worker_.wait_for_send_room(this);
    update_events();
    return -EAGAIN;
  }
  return static_cast<ssize_t>(accepted);
}

bool RdmaConnection::post_send(char* chunk, const char* data, uint32_t len, BufferSegment held,
                               SendKind kind) {
  const WorkKind work = kind == SendKind::Credit    ? WorkKind::Credit
                        : kind == SendKind::Release ? WorkKind::Release
                                                    : WorkKind::Data;
  const int64_t slot = worker_.acquire_send_slot(this, chunk, std::move(held), work);
  if (slot < 0) {
    if (chunk) worker_.tx_pool().put(chunk);
    return false;
  }
  // Immediate data (flow_credits.h): the FIN's marker, the descriptors released, or what we owe
  // the peer. A data SEND with nothing owed stays a plain SEND.
  uint32_t imm = 0;
  bool with_imm = true;
  uint32_t released = 0;
  if (kind == SendKind::Fin) {
    imm = kFinImmediate;
  } else if (kind == SendKind::Release) {
    released = std::min(releases_owed_, kMaxReleasesPerImmediate);
    imm = release_immediate(released);
  } else {
    const uint32_t returned = recv_credits_.take();
    imm = credit_immediate(returned) | (kind == SendKind::Descriptor ? kDescriptorFlag : 0);
    with_imm = returned > 0 || kind == SendKind::Credit || kind == SendKind::Descriptor;
  }
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(data);
  sge.length = len;
  sge.lkey = len > 0 ? worker_.lkey_for(data, len) : 0;
  ibv_send_wr wr{};
  wr.wr_id = static_cast<uint64_t>(slot);
  wr.sg_list = len > 0 ? &sge : nullptr;
  wr.num_sge = len > 0 ? 1 : 0;
  wr.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
  wr.imm_data = htonl(imm);
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qp_, &wr, &bad);
  if (rc != 0) {
    worker_.cancel_send_slot(slot);
    fail(-rc, "ibv_post_send failed");
    return false;
  }
  ++sends_outstanding_;
  ++worker_.counters().send_work_requests;
  if (kind == SendKind::Data || kind == SendKind::Descriptor) send_credits_.consume();
  if (kind == SendKind::Credit) recv_credits_.credit_message_posted();
  if (kind == SendKind::Release) {
    releases_owed_ -= released;
    release_in_flight_ = true;
  }
  return true;
}

void RdmaConnection::shutdown() {
  if (state_ != ConnState::Established || fin_sent_) return;
  fin_wanted_ = true;
  try_post_fin();
}

void RdmaConnection::try_post_fin() {
  if (!fin_wanted_ || fin_sent_ || qp_ == nullptr || side_eof_) return;
  if (sends_outstanding_ >= worker_.tuning().qp_depth) return;  // a completion retries
  if (worker_.send_budget_left() == 0) {
    // Other connections hold every send slot; with none of ours in flight no completion of ours
    // would retry, so ask for the worker's next one.
    worker_.wait_for_send_room(this);
    return;
  }
  if (post_send(nullptr, nullptr, 0, {}, SendKind::Fin)) {
    fin_sent_ = true;
    fin_wanted_ = false;
  }
}

void RdmaConnection::consumed(uint32_t n) {
  recv_credits_.on_consumed(n);
  try_post_credits();
}

void RdmaConnection::try_post_credits() {
  // Nothing to return to a peer that sends no more (its FIN or close arrived, or it is gone), nor
  // from a connection being closed or failed.
  if (!recv_credits_.credit_message_due() || state_ != ConnState::Established || fin_received_ ||
      side_eof_ || qp_ == nullptr)
    return;
  // The FIN's and a release's slots stay free; a completion of ours retries (on_send_complete).
  if (sends_outstanding_ + 2 >= worker_.tuning().qp_depth) return;
  if (worker_.send_budget_left() == 0) {
    worker_.wait_for_send_room(this);  // as try_post_fin: no completion of ours may be pending
    return;
  }
  post_send(nullptr, nullptr, 0, {}, SendKind::Credit);
}

void RdmaConnection::on_credits(uint32_t n) {
  if (!send_credits_.add(n)) return fail(-EPROTO, "peer returned more credits than it was given");
  if (want_writable_ && state_ == ConnState::Established && send_credits_.can_send()) {
    want_writable_ = false;
    update_events();
  }
}

void RdmaConnection::on_receive(BufferSegment segment, bool fin) {
  if (owner_closed_) return;  // dropping the segment returns its chunk
  if (!segment.empty()) {
    if (!recv_credits_.on_message()) return fail(-EPROTO, "peer overran our receive window");
    rx_.push_back(RxItem{std::move(segment), nullptr});
  }
  if (fin) fin_received_ = true;
  update_events();
}

void RdmaConnection::on_send_complete(bool ok, ibv_wc_status status, WorkKind kind) {
  --sends_outstanding_;
  if (kind == WorkKind::Read) return on_read_complete(ok, status);
  if (kind == WorkKind::Credit) recv_credits_.credit_message_completed();
  if (kind == WorkKind::Release) release_in_flight_ = false;
  // A credit return or release that failed because the peer had finished (and closed) is no error
  // of the stream: the peer needed it no more.
  const bool harmless = (kind == WorkKind::Credit || kind == WorkKind::Release) &&
                        (fin_received_ || side_eof_ || owner_closed_);
  if (!ok && status != IBV_WC_WR_FLUSH_ERR && !harmless) {
    fail(-ECONNRESET, ibv_wc_status_str(status));
  }
  after_send_room();
}

void RdmaConnection::after_send_room() {
  if (want_writable_ && state_ == ConnState::Established && !blocked_on_credits()) {
    want_writable_ = false;
    update_events();
  }
  try_post_fin();
  try_post_release();
  try_post_credits();
  pump_reads();
  maybe_finish_drain();
}

void RdmaConnection::on_send_complete_room() {
  if (fin_wanted_ && !fin_sent_) {
    try_post_fin();
    maybe_finish_drain();
  }
  try_post_release();
  try_post_credits();
  pump_reads();
  if (!want_writable_ || blocked_on_credits()) return;
  want_writable_ = false;
  update_events();
}

}  // namespace bypass::rdma
