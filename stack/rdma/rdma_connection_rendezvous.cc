// RdmaConnection's rendezvous (rendezvous.h): descriptors out, RDMA READs of the descriptors that
// came in, and releases both ways.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "stack/rdma/rdma_connection.h"
#include "stack/rdma/rdma_worker.h"

namespace bypass::rdma {

void RdmaConnection::take_read_depth(uint8_t peer_depth) {
  read_depth_ = std::min(worker_.read_depth(), peer_depth);
}

ssize_t RdmaConnection::post_descriptor(BufferList& data) {
  // Unreleased descriptors are bounded by the peer's window (a release precedes the credits of
  // the same descriptor on the peer's send queue, give or take the one release in flight).
  if (outbound_.full()) return -1;
  RegisteredMemory& payload = worker_.payload_memory();
  RegistrationCache& cache = worker_.registration_cache();
  const size_t threshold = worker_.tuning().rendezvous_threshold;
  OutboundTransfers::Transfer& t = outbound_.next();
  Descriptor d;
  size_t taken = 0;
  for (const BufferSegment& seg : data.segments()) {
    if (d.count == Descriptor::kMaxRegions || seg.length() < threshold) break;
    const size_t len = std::min<size_t>(seg.length(), Descriptor::kMaxRegionLength);
    const BufferSegment piece = seg.sub(0, len);
    RegistrationCache::Entry* entry = nullptr;
    uint32_t rkey = 0;
    if (payload.contains(piece.data(), len)) {
      rkey = payload.rkey();  // registered once, at start-up
    } else if (worker_.lkey_for(piece.data(), len) != 0) {
      break;  // our chunk pools allow no remote read: sent two-sided, in place
    } else {
      entry = cache.acquire(piece);
      if (entry == nullptr) break;
      rkey = entry->keys.rkey;
    }
    d.regions[d.count] = {reinterpret_cast<uintptr_t>(piece.data()), rkey, static_cast<uint32_t>(len)};
    t.pinned[d.count] = entry;
    ++d.count;
    t.held.append(piece);
    taken += len;
    if (len < seg.length()) break;  // longer than one READ may be: the rest goes next
  }
  t.count = d.count;
  t.bytes = taken;
  if (d.count == 0) return 0;
  char* chunk = worker_.tx_pool().get();
  if (chunk == nullptr) {
    outbound_.abandon(&cache);
    return -1;
  }
  d.encode(reinterpret_cast<uint8_t*>(chunk));
  if (!post_send(chunk, chunk, static_cast<uint32_t>(d.wire_size()), {}, SendKind::Descriptor)) {
    outbound_.abandon(&cache);
    return -1;
  }
  outbound_.commit();
  worker_.descriptors_posted(1);
  ++worker_.counters().rendezvous_descriptors_sent;
  data.trim_front(taken);
  return static_cast<ssize_t>(taken);
}

int RdmaConnection::inject_descriptor(const uint8_t* bytes, size_t len) {
  if (state_ != ConnState::Established) return -ENOTCONN;
  if (len > send_limit_) return -EMSGSIZE;
  if (!send_credits_.can_send() || !room_for_data()) return -EAGAIN;
  char* chunk = worker_.tx_pool().get();
  if (chunk == nullptr) return -EAGAIN;
  std::memcpy(chunk, bytes, len);
  return post_send(chunk, chunk, static_cast<uint32_t>(len), {}, SendKind::Descriptor) ? 0 : -EIO;
}

void RdmaConnection::on_descriptor(const uint8_t* bytes, size_t len) {
  if (owner_closed_ || state_ == ConnState::Failed) return;
  if (!recv_credits_.on_message()) return fail(-EPROTO, "peer overran our receive window");
  if (read_depth_ == 0) {
    BYPASS_LOG(Warn, "rdma", "qp 0x%x: %s sent a rendezvous descriptor, but this connection agreed on no RDMA READ",
               qp_num(), peer_.to_string().c_str());
    return fail(-EPROTO, "rendezvous descriptor without RDMA READ");
  }
  Descriptor d;
  std::string error;
  if (!Descriptor::decode(bytes, len, &d, &error)) {
    BYPASS_LOG(Warn, "rdma", "qp 0x%x: from %s: %s", qp_num(), peer_.to_string().c_str(), error.c_str());
    return fail(-EPROTO, "malformed rendezvous descriptor");
  }
  InboundTransfer* t = inbound_.add(d);
  if (t == nullptr) return fail(-EPROTO, "peer overran our receive window with descriptors");
  rx_.push_back(RxItem{{}, t});
  pump_reads();
}

void RdmaConnection::pump_reads() {
  if (state_ != ConnState::Established || owner_closed_ || qp_ == nullptr) return;
  RegisteredMemory& payload = worker_.payload_memory();
  // Read ahead of the owner by twice what the READs in flight carry at most: the next pieces are
  // on their way while the owner takes the last ones, and no more.
  const size_t read_ahead_limit = 2 * size_t{read_depth_} * worker_.tuning().rendezvous_read_size;
  while (reads_count_ < read_depth_ && read_ahead_bytes_ < read_ahead_limit) {
    InboundTransfer* t = inbound_.next_to_read();
    if (t == nullptr) return;
    if (!room_for_data()) {
      worker_.wait_for_send_room(this);
      return;
    }
    const RemoteRegion& region = t->descriptor.regions[t->region];
    const size_t len = std::min<size_t>(region.length - t->offset, worker_.tuning().rendezvous_read_size);
    BufferSegment target = payload.allocate(len);
    uint32_t lkey = payload.lkey();
    RegistrationCache::Entry* entry = nullptr;
    if (target.empty()) {
      // RegisteredMemory is used up (owners hold what was read): READ into fresh memory registered
      // through the cache instead. Slower (a registration), but never stuck behind an owner that
      // waits for the rest of a message.
      target = BufferSegment::allocate(len);
      entry = worker_.registration_cache().acquire(target);
      if (entry == nullptr) return schedule_read_retry();
      lkey = entry->keys.lkey;
      ++worker_.counters().rendezvous_read_fallbacks;
    }
    const RemoteRegion piece = inbound_.take_piece(*t, static_cast<uint32_t>(len));
    if (!post_read(piece, target, lkey)) {
      if (entry != nullptr) worker_.registration_cache().release(entry);
      return;
    }
    reads_[(reads_head_ + reads_count_) % QpInfo::kMaxReadDepth] = ReadInFlight{t, piece, std::move(target), entry};
    ++reads_count_;
    read_ahead_bytes_ += piece.length;
  }
}

bool RdmaConnection::post_read(const RemoteRegion& piece, const BufferSegment& target, uint32_t lkey) {
  // The slot holds a view of the target until the completion, so a READ flushed after the owner
  // closed still lands in memory that is alive.
  const int64_t slot = worker_.acquire_send_slot(this, nullptr, target, WorkKind::Read);
  if (slot < 0) {
    fail(-ENOBUFS, "no send slot for an RDMA READ");
    return false;
  }
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(target.data());
  sge.length = piece.length;
  sge.lkey = lkey;
  ibv_send_wr wr{};
  wr.wr_id = static_cast<uint64_t>(slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = piece.address;
  wr.wr.rdma.rkey = piece.rkey;
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
    worker_.cancel_send_slot(slot);
    fail(-rc, "ibv_post_send (RDMA READ) failed");
    return false;
  }
  ++sends_outstanding_;
  ++worker_.counters().read_work_requests;
  return true;
}

void RdmaConnection::on_read_complete(bool ok, ibv_wc_status status) {
  ReadInFlight r = std::move(reads_[reads_head_]);
  reads_[reads_head_] = {};
  reads_head_ = static_cast<uint8_t>((reads_head_ + 1) % QpInfo::kMaxReadDepth);
  --reads_count_;
  if (r.target_entry != nullptr) worker_.registration_cache().release(r.target_entry);
  if (!ok) {
    if (status == IBV_WC_REM_ACCESS_ERR || status == IBV_WC_REM_INV_REQ_ERR) {
      // The peer's HCA refused: the rkey, address or length is outside what it registered.
      BYPASS_LOG(Warn, "rdma", "qp 0x%x: RDMA READ of %u bytes at 0x%llx rkey 0x%x from %s: %s: its rendezvous "
                 "descriptor names memory it did not register for remote read", qp_num(), r.piece.length,
                 static_cast<unsigned long long>(r.piece.address), r.piece.rkey, peer_.to_string().c_str(),
                 ibv_wc_status_str(status));
      fail(-EPROTO, "rendezvous descriptor outside the peer's registered memory");
    } else if (status != IBV_WC_WR_FLUSH_ERR) {
      fail(-ECONNRESET, ibv_wc_status_str(status));
    }
    return after_send_room();
  }
  if (!owner_closed_ && state_ != ConnState::Failed) {
    InboundTransfer& t = *r.transfer;
    t.read += r.piece.length;
    t.ready.append(std::move(r.target));
    worker_.counters().rendezvous_read_bytes += r.piece.length;
    if (t.complete()) {
      ++releases_owed_;
      ++worker_.counters().rendezvous_read_transfers;
    }
    update_events();
  }
  after_send_room();  // the release, the next READs, a drain
}

void RdmaConnection::try_post_release() {
  // Releases go even after the peer's FIN: its close waits for them. Not to a peer that is gone.
  if (releases_owed_ == 0 || release_in_flight_ || state_ != ConnState::Established || side_eof_ || qp_ == nullptr)
    return;
  if (sends_outstanding_ + 1 >= worker_.tuning().qp_depth) return;  // the FIN's slot stays; a completion retries
  if (worker_.send_budget_left() == 0) {
    worker_.wait_for_send_room(this);
    return;
  }
  post_send(nullptr, nullptr, 0, {}, SendKind::Release);
}

void RdmaConnection::on_released(uint32_t n) {
  uint64_t bytes = 0;
  if (!outbound_.release(n, &worker_.registration_cache(), &bytes))
    return fail(-EPROTO, "peer released more rendezvous descriptors than it was sent");
  worker_.descriptors_released(n);
  worker_.counters().rendezvous_sent_transfers += n;
  worker_.counters().rendezvous_sent_bytes += bytes;
  after_send_room();  // a sender waiting for descriptor room, a drain waiting for the releases
}

void RdmaConnection::schedule_read_retry() {
  if (read_retry_timer_ != 0) return;
  std::weak_ptr<RdmaConnection> weak = weak_from_this();
  read_retry_timer_ = worker_.center().create_timer(std::chrono::milliseconds(1), [weak] {
    if (auto self = weak.lock()) {
      self->read_retry_timer_ = 0;
      self->pump_reads();
    }
  });
}

}  // namespace bypass::rdma
