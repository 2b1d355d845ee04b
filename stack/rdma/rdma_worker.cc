#include "stack/rdma/rdma_worker.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "base/log.h"
#include "stack/rdma/rdma_connection.h"
#include "stack/rdma/rdma_socket.h"

namespace bypass::rdma {

namespace {

constexpr uint64_t kRecvTag = uint64_t{1} << 63;
constexpr int kPollBatch = 32;

std::runtime_error verbs_error(const std::string& what, int err) {
  return std::runtime_error("ms.type=rdma: " + what + ": " + strerror(err));
}

std::unique_ptr<EventDriver> polling_driver_for(const RdmaTuning& tuning) {
  // rdma.busy_poll 0 means "sleep as soon as idle"; the driver reads 0 as "never sleep".
  return make_polling_driver(std::max(tuning.busy_poll, std::chrono::nanoseconds(1)));
}

}  // namespace

RdmaTuning RdmaTuning::from(const config::Config& conf) {
  RdmaTuning t;
  t.chunk_size = conf.get_size("rdma.chunk_size");
  t.chunk_count = static_cast<size_t>(conf.get_int("rdma.chunk_count"));
  // A quarter of the pool at most: a few stalled connections can then hold only part of it.
  t.rx_window = static_cast<uint32_t>(std::min<int64_t>(
      conf.get_int("rdma.rx_window"), std::max<int64_t>(2, static_cast<int64_t>(t.chunk_count / 4))));
  t.hugepages = conf.get_bool("rdma.hugepages");
  t.use_srq = conf.get_bool("rdma.srq");
  t.qp_depth = static_cast<uint32_t>(conf.get_int("rdma.qp_depth"));
  t.busy_poll = conf.get_duration("rdma.busy_poll");
  t.drain_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      conf.get_duration("rdma.drain_timeout"));
  t.inject_failures = static_cast<int>(conf.get_int("ms.inject_socket_failures"));
  t.ack_timeout_exponent = verbs_ack_timeout_exponent(conf.get_duration("rdma.ack_timeout"));
  t.retry_count = static_cast<uint8_t>(conf.get_int("rdma.retry_count"));
  t.use_cm = conf.get_string("rdma.connect_mode") == "rdma_cm";
  t.rendezvous_threshold = conf.get_size("rdma.rendezvous_threshold");
  t.rendezvous_reads = static_cast<uint32_t>(conf.get_int("rdma.rendezvous_reads"));
  t.rendezvous_read_size = conf.get_size("rdma.rendezvous_read_size");
  t.registration_cache = conf.get_size("rdma.registration_cache");
  return t;
}

uint8_t verbs_ack_timeout_exponent(std::chrono::nanoseconds timeout) {
  // IBTA: 0 means "infinite"; 1..31 encode 4.096 us * 2^n. Never choose infinite: a dead peer
  // must surface as an error.
  uint8_t n = 1;
  while (n < 31 && std::chrono::nanoseconds(int64_t{4096} << n) < timeout) ++n;
  return n;
}

RdmaWorker::RdmaWorker(unsigned id, std::shared_ptr<RdmaDevice> device, const RdmaTuning& tuning,
                       std::shared_ptr<CmListenRegistry> cm_listeners, std::shared_ptr<RegisteredMemory> payload_memory)
    : Worker(id, polling_driver_for(tuning)),
      device_(std::move(device)),
      tuning_(tuning),
      cm_listeners_(std::move(cm_listeners)),
      payload_memory_(std::move(payload_memory)) {
  if (tuning_.use_cm) cm_channel_ = make_cm_channel();
  poller_ = static_cast<PollingDriver*>(&center().driver());
  const std::string tag = "rdma worker " + std::to_string(id);
  const ibv_device_attr& attr = device_->attributes();
  rx_pool_ = ChunkPool::create_lendable(tag + " rx", tuning_.chunk_size, tuning_.chunk_count, tuning_.hugepages);
  tx_pool_ = std::make_shared<ChunkPool>(tag + " tx", tuning_.chunk_size, tuning_.chunk_count, tuning_.hugepages);
  // Registered once, for the life of the worker: no registration on the data path.
  rx_mr_ = ibv_reg_mr(device_->pd(), rx_pool_->base(), rx_pool_->region_bytes(), IBV_ACCESS_LOCAL_WRITE);
  if (rx_mr_ == nullptr) throw verbs_error("cannot register " + std::to_string(rx_pool_->region_bytes()) +
                                           " bytes of receive buffers (ulimit -l?)", errno);
  tx_mr_ = ibv_reg_mr(device_->pd(), tx_pool_->base(), tx_pool_->region_bytes(), IBV_ACCESS_LOCAL_WRITE);
  if (tx_mr_ == nullptr) throw verbs_error("cannot register send buffers (ulimit -l?)", errno);

  // Sends are bounded by the slots (chunk copies plus as many zero-copy sends); receives by the
  // receive chunks. The CQ holds them all, so it can never overflow.
  const size_t slots = tuning_.chunk_count * 2;
  send_slots_.resize(slots);
  for (size_t i = slots; i-- > 0;) free_send_slots_.push_back(static_cast<uint32_t>(i));
  cq_size_ = static_cast<int>(std::min<size_t>(slots + tuning_.chunk_count + 16, attr.max_cqe));
  channel_ = ibv_create_comp_channel(device_->context());
  if (channel_ == nullptr) throw verbs_error("cannot create a completion channel", errno);
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
  cq_ = ibv_create_cq(device_->context(), cq_size_, nullptr, channel_, 0);
  if (cq_ == nullptr) throw verbs_error("cannot create a CQ of " + std::to_string(cq_size_), errno);
  if (tuning_.use_srq) {
    srq_depth_ = static_cast<uint32_t>(std::min<size_t>(tuning_.chunk_count, attr.max_srq_wr));
    ibv_srq_init_attr sattr{};
    sattr.attr.max_wr = srq_depth_;
    sattr.attr.max_sge = 1;
    srq_ = ibv_create_srq(device_->pd(), &sattr);
    if (srq_ == nullptr) throw verbs_error("cannot create a shared receive queue", errno);
    replenish_receives();
  }
  poller_->set_poll_hook([this] { return poll_hook(); });
  // A READ in flight occupies the initiator's and the responder's resources (IBTA 9.4.4): the
  // device's limits on both sides, rdma.rendezvous_reads, and what the handshake can carry.
  read_depth_ = static_cast<uint8_t>(std::min<int64_t>(
      {attr.max_qp_rd_atom, attr.max_qp_init_rd_atom, tuning_.rendezvous_reads, QpInfo::kMaxReadDepth}));
  ibv_pd* pd = device_->pd();
  cache_ = std::make_unique<RegistrationCache>(
      tuning_.registration_cache,
      [pd](char* data, size_t len, RegistrationCache::Keys* out) {
        ibv_mr* mr = ibv_reg_mr(pd, data, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
        if (mr == nullptr) {
          BYPASS_LOG(Warn, "rdma", "registering %zu bytes for rendezvous failed: %s (ulimit -l?)", len, strerror(errno));
          return false;
        }
        *out = {mr->lkey, mr->rkey, mr};
        return true;
      },
      [](const RegistrationCache::Keys& keys) {
        if (int rc = ibv_dereg_mr(static_cast<ibv_mr*>(keys.handle)); rc != 0)
          BYPASS_LOG(Error, "rdma", "ibv_dereg_mr failed: %s", strerror(rc));
      });
}

RdmaWorker::~RdmaWorker() {
  // Threads are joined: whatever is still open is torn down without waiting for the peer.
  for (auto& [conn, owner] : connections_) conn->destroy_qp();
  connections_.clear();
  by_qp_num_.clear();
  for (SendSlot& s : send_slots_) {
    if (s.tx_chunk) tx_pool_->put(s.tx_chunk);
    s = {};
  }
  cache_.reset();  // deregisters: before the PD goes
  if (srq_) ibv_destroy_srq(srq_);
  if (rx_mr_) ibv_dereg_mr(rx_mr_);
  if (tx_mr_) ibv_dereg_mr(tx_mr_);
  if (cq_) {
    if (cq_events_unacked_) ibv_ack_cq_events(cq_, cq_events_unacked_);
    ibv_destroy_cq(cq_);
  }
  if (channel_) ibv_destroy_comp_channel(channel_);
}

void RdmaWorker::on_thread_start() {
  center().create_file_event(channel_->fd, kEventReadable, [this](int, int) {
    // The CQ fired while we slept: consume the event; the next idle iteration re-arms.
    void* ctx = nullptr;
    ibv_cq* cq = nullptr;
    while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) {
      if (++cq_events_unacked_ >= 64) {
        ibv_ack_cq_events(cq_, cq_events_unacked_);
        cq_events_unacked_ = 0;
      }
    }
    cq_armed_ = false;
  });
  if (cm_channel_) center().create_file_event(cm_channel_->fd, kEventReadable, [this](int, int) { handle_cm_events(); });
  schedule_cache_sweep();
}

void RdmaWorker::schedule_cache_sweep() {
  sweep_timer_ = center().create_timer(std::chrono::seconds(1), [this] {
    if (cache_->sweep() > 0) publish_snapshots();
    schedule_cache_sweep();
  });
}

void RdmaWorker::on_thread_stop() {
  if (sweep_timer_ != 0) center().cancel_timer(sweep_timer_);
  sweep_timer_ = 0;
  center().delete_file_event(channel_->fd, kEventReadable);
  if (cm_channel_) center().delete_file_event(cm_channel_->fd, kEventReadable);
}

void RdmaWorker::handle_cm_events() {
  for (int i = 0; i < 64; ++i) {  // bounded: a burst of connects cannot starve the loop
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(cm_channel_.get(), &event) != 0) {
      if (errno != EAGAIN && errno != EINTR)
        BYPASS_LOG(Warn, "rdma", "rdma_get_cm_event on worker %u: %s", id(), strerror(errno));
      return;
    }
    // Copied and acknowledged before acting on it (see CmEvent). A connect request is the
    // listening id's; its child id inherited the listener's context.
    const auto* data = static_cast<const uint8_t*>(event->param.conn.private_data);
    CmEvent copy{event->event, event->status, event->id,
                 std::vector<uint8_t>(data, data + (data ? event->param.conn.private_data_len : 0))};
    rdma_cm_id* target_id = event->event == RDMA_CM_EVENT_CONNECT_REQUEST ? event->listen_id : event->id;
    auto* target = static_cast<CmEventTarget*>(target_id->context);
    rdma_ack_cm_event(event);
    if (target != nullptr) target->on_cm_event(copy);
  }
}

RdmaWorkerStats RdmaWorker::stats() const {
  RdmaWorkerStats s;
  s.qps_created = qps_created_.load();
  s.qps_destroyed = qps_destroyed_.load();
  s.live_connections = live_.load();
  s.tx_chunks_total = tx_pool_->chunk_count();
  s.rx_chunks_total = rx_pool_->chunk_count();
  s.tx_chunks_in_use = tx_in_use_snapshot_.load();
  s.rx_chunks_posted = rx_posted_snapshot_.load();
  s.rx_chunks_held = rx_pool_->chunk_count() - rx_free_snapshot_.load() - s.rx_chunks_posted;
  s.sends_outstanding = sends_snapshot_.load();
  s.send_eagain = counters_.send_eagain;
  s.rx_window = tuning_.rx_window;
  s.memory_regions = (rx_mr_ ? 1 : 0) + (tx_mr_ ? 1 : 0);
  s.descriptors_unreleased = descriptors_snapshot_.load(std::memory_order_relaxed);
  s.reads_in_flight = reads_snapshot_.load(std::memory_order_relaxed);
  s.cache_entries = cache_entries_snapshot_.load(std::memory_order_relaxed);
  s.cache_pinned_entries = cache_pinned_snapshot_.load(std::memory_order_relaxed);
  s.cache_bytes = cache_bytes_snapshot_.load(std::memory_order_relaxed);
  s.cache_hits = cache_hits_snapshot_.load(std::memory_order_relaxed);
  s.cache_misses = cache_misses_snapshot_.load(std::memory_order_relaxed);
  s.cache_evictions = cache_evictions_snapshot_.load(std::memory_order_relaxed);
  s.read_depth = read_depth_;
  return s;
}

NetworkStack::WorkerReport RdmaWorker::report() const {
  NetworkStack::WorkerReport r;
  counters_.for_each([&r](const char* name, uint64_t value) { r.counters.emplace_back(name, value); });
  const RegistrationCache::Stats& cache = cache_->stats();
  r.counters.insert(r.counters.end(), {{"registration_cache_hits", cache.hits},
                                       {"registration_cache_misses", cache.misses},
                                       {"registration_cache_evictions", cache.evictions},
                                       {"registration_cache_swept", cache.swept},
                                       {"registration_cache_refused", cache.refused}});
  r.gauges = {{"registration_cache_bytes_pinned", cache.bytes_registered},
              {"registration_cache_entries", cache.entries},
              {"rendezvous_descriptors_unreleased", descriptors_unreleased_}};
  return r;
}

// ---------------------------------------------------------------- sockets

int RdmaWorker::listen(const SocketAddress& addr, const ListenOptions& lopts, const SocketOptions& sopts,
                       ServerSocket* out) {
  if (cm_channel_) {
    auto server = std::make_unique<RdmaServerSocket>(*this, sopts);
    std::shared_ptr<CmListenPort> port;
    if (int rc = cm_listeners_->join(*this, addr, lopts.backlog, server.get(), &port); rc < 0) return rc;
    server->set_cm_port(std::move(port));
    if (int rc = server->init(); rc < 0) return rc;
    *out = ServerSocket(std::move(server));
    return 0;
  }
  const int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (lopts.reuse_port) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (::bind(fd, addr.sockaddr_ptr(), addr.sockaddr_len()) != 0 || ::listen(fd, lopts.backlog) != 0) {
    const int err = errno;
    ::close(fd);
    return -err;
  }
  auto server = std::make_unique<RdmaServerSocket>(*this, fd, sopts);
  if (int rc = server->init(); rc < 0) return rc;
  *out = ServerSocket(std::move(server));
  return 0;
}

int RdmaWorker::connect(const SocketAddress& addr, const SocketOptions& opts, ConnectedSocket* out) {
  if (cm_channel_) {
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(cm_channel_.get(), &id, nullptr, RDMA_PS_TCP) != 0) return -errno;
    auto conn = adopt(std::make_shared<RdmaConnection>(*this, id, true, nullptr));
    conn->set_peer_address(addr);
    if (int rc = conn->start(opts.connect_timeout); rc < 0) {
      conn->close();
      return rc;
    }
    *out = ConnectedSocket(std::make_unique<RdmaConnectedSocket>(*this, std::move(conn)));
    return 0;
  }
  const int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (::connect(fd, addr.sockaddr_ptr(), addr.sockaddr_len()) != 0 && errno != EINPROGRESS) {
    const int err = errno;
    ::close(fd);
    return -err;
  }
  auto conn = adopt(std::make_shared<RdmaConnection>(*this, fd, true, nullptr));
  if (int rc = conn->start(opts.connect_timeout); rc < 0) {
    conn->close();
    return rc;
  }
  *out = ConnectedSocket(std::make_unique<RdmaConnectedSocket>(*this, std::move(conn)));
  return 0;
}

std::shared_ptr<RdmaConnection> RdmaWorker::adopt(std::shared_ptr<RdmaConnection> conn) {
  connections_.emplace(conn.get(), conn);
  live_.store(connections_.size(), std::memory_order_relaxed);
  return conn;
}

// ---------------------------------------------------------------- queue pairs

ibv_qp* RdmaWorker::create_qp() {
  ibv_qp_init_attr init{};
  init.send_cq = cq_;
  init.recv_cq = cq_;
  init.srq = srq_;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 1;
  init.cap.max_send_wr = tuning_.qp_depth;
  init.cap.max_recv_wr = srq_ ? 0 : tuning_.qp_depth;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(device_->pd(), &init);
  if (qp == nullptr) {
    BYPASS_LOG(Warn, "rdma", "ibv_create_qp failed: %s", strerror(errno));
    return nullptr;
  }
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = device_->port();
  // Remote read: the peer pulls our rendezvous descriptors' memory (rendezvous.h); only memory
  // registered for remote read (RegisteredMemory, the registration cache) can be reached.
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
  if (int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
    BYPASS_LOG(Warn, "rdma", "QP -> INIT failed: %s", strerror(rc));
    ibv_destroy_qp(qp);
    return nullptr;
  }
  qps_created_.fetch_add(1, std::memory_order_relaxed);
  return qp;
}

void RdmaWorker::register_qp(RdmaConnection* conn, uint32_t qp_num) { by_qp_num_[qp_num] = conn; }

void RdmaWorker::retire(RdmaConnection* conn) { retired_.push_back(conn); }

void RdmaWorker::reap_retired() {
  if (retired_.empty()) return;
  std::vector<RdmaConnection*> batch;
  batch.swap(retired_);
  for (RdmaConnection* conn : batch) {
    if (conn->qp() != nullptr) {
      by_qp_num_.erase(conn->qp_num());
      conn->destroy_qp();
      qps_destroyed_.fetch_add(1, std::memory_order_relaxed);
    }
    std::erase(blocked_senders_, conn);
    std::erase(need_receives_, conn);
    connections_.erase(conn);  // the last owner: closes the side channel, frees the event id
  }
  live_.store(connections_.size(), std::memory_order_relaxed);
}

// ---------------------------------------------------------------- buffers and send slots

uint32_t RdmaWorker::lkey_for(const void* p, size_t len) const {
  if (tx_pool_->contains(p, len)) return tx_mr_->lkey;
  if (rx_pool_->contains(p, len)) return rx_mr_->lkey;
  if (payload_memory_->contains(p, len)) return payload_memory_->lkey();
  return 0;
}

int64_t RdmaWorker::acquire_send_slot(RdmaConnection* conn, char* tx_chunk, BufferSegment held,
                                      RdmaConnection::WorkKind kind) {
  if (free_send_slots_.empty()) return -1;
  const uint32_t index = free_send_slots_.back();
  free_send_slots_.pop_back();
  send_slots_[index] = SendSlot{conn, tx_chunk, std::move(held), kind};
  if (kind == RdmaConnection::WorkKind::Read) ++reads_outstanding_;
  return index;
}

void RdmaWorker::cancel_send_slot(int64_t slot) {
  SendSlot& s = send_slots_[static_cast<size_t>(slot)];
  if (s.kind == RdmaConnection::WorkKind::Read) --reads_outstanding_;
  if (s.tx_chunk) tx_pool_->put(s.tx_chunk);
  s = {};
  free_send_slots_.push_back(static_cast<uint32_t>(slot));
}

void RdmaWorker::wait_for_send_room(RdmaConnection* conn) {
  if (std::find(blocked_senders_.begin(), blocked_senders_.end(), conn) == blocked_senders_.end())
    blocked_senders_.push_back(conn);
}

bool RdmaWorker::post_receive(ibv_qp* qp, char* chunk) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(chunk);
  sge.length = static_cast<uint32_t>(rx_pool_->chunk_size());
  sge.lkey = rx_mr_->lkey;
  ibv_recv_wr wr{};
  wr.wr_id = kRecvTag | rx_pool_->index_of(chunk);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  const int rc = qp ? ibv_post_recv(qp, &wr, &bad) : ibv_post_srq_recv(srq_, &wr, &bad);
  if (rc != 0) {
    BYPASS_LOG(Warn, "rdma", "posting a receive failed: %s", strerror(rc));
    rx_pool_->put(chunk);
    return false;
  }
  ++rx_posted_;
  ++counters_.receive_work_requests;
  return true;
}

void RdmaWorker::release_rx_chunk(char* chunk) { rx_pool_->put(chunk); }

void RdmaWorker::replenish_receives() {
  if (srq_) {
    while (rx_posted_ < srq_depth_) {
      char* chunk = rx_pool_->get();
      if (chunk == nullptr || !post_receive(nullptr, chunk)) break;
    }
    return;
  }
  for (size_t i = 0; i < need_receives_.size();) {
    RdmaConnection* conn = need_receives_[i];
    // Never onto a QP in the error state (the peer disconnected, say): soft-RoCE (kernel 6.1)
    // does not flush receives posted after the QP entered it, so they would never come back and
    // the connection would never drain.
    while (conn->qp() && conn->qp()->state != IBV_QPS_ERR && conn->receives_posted() < tuning_.qp_depth &&
           conn->state() != ConnState::Failed && !conn->owner_closed()) {
      char* chunk = rx_pool_->get();
      if (chunk == nullptr) return;  // the rest waits for chunks to come back
      if (!post_receive(conn->qp(), chunk)) break;
      conn->count_receive_posted();
    }
    need_receives_[i] = need_receives_.back();
    need_receives_.pop_back();
  }
}

void RdmaWorker::post_receives_for(RdmaConnection* conn) {
  need_receives_.push_back(conn);
  replenish_receives();
}

// ---------------------------------------------------------------- completions

void RdmaWorker::handle_completion(const ibv_wc& wc) {
  ++counters_.completions;
  if (wc.wr_id & kRecvTag) return handle_receive(wc);
  const bool ok = wc.status == IBV_WC_SUCCESS;
  SendSlot& slot = send_slots_[wc.wr_id];
  RdmaConnection* conn = slot.conn;
  const RdmaConnection::WorkKind kind = slot.kind;
  if (kind == RdmaConnection::WorkKind::Read) --reads_outstanding_;
  if (slot.tx_chunk) tx_pool_->put(slot.tx_chunk);
  // A READ's target goes to the connection through its own list; the slot's view of it is dropped
  // here, after the HCA is done with it.
  slot = {};
  free_send_slots_.push_back(static_cast<uint32_t>(wc.wr_id));
  if (conn) conn->on_send_complete(ok, wc.status, kind);
  if (!blocked_senders_.empty()) {
    std::vector<RdmaConnection*> waiting;
    waiting.swap(blocked_senders_);
    for (RdmaConnection* c : waiting) c->on_send_complete_room();
  }
}

void RdmaWorker::handle_receive(const ibv_wc& wc) {
  const bool ok = wc.status == IBV_WC_SUCCESS;
  --rx_posted_;
  char* chunk = rx_pool_->chunk_at(wc.wr_id & ~kRecvTag);
  auto it = by_qp_num_.find(wc.qp_num);
  RdmaConnection* conn = it == by_qp_num_.end() ? nullptr : it->second;
  if (conn && !srq_) {
    conn->on_receive_flushed();
    if (!conn->owner_closed() &&
        std::find(need_receives_.begin(), need_receives_.end(), conn) == need_receives_.end())
      need_receives_.push_back(conn);
  }
  if (!ok || conn == nullptr || conn->owner_closed()) {
    release_rx_chunk(chunk);
    if (conn && !conn->owner_closed() && wc.status != IBV_WC_WR_FLUSH_ERR)
      BYPASS_LOG(Debug, "rdma", "receive on qp 0x%x failed: %s", wc.qp_num, ibv_wc_status_str(wc.status));
    return;
  }
  // Immediate data (flow_credits.h): the FIN, a release of our descriptors, or credits returned
  // (with or without data, which may be a rendezvous descriptor).
  const bool with_imm = (wc.wc_flags & IBV_WC_WITH_IMM) != 0;
  const uint32_t imm = with_imm ? ntohl(wc.imm_data) : 0;
  const bool fin = with_imm && imm == kFinImmediate;
  if (with_imm && !fin && !is_credit_immediate(imm)) {
    release_rx_chunk(chunk);
    if (is_release_immediate(imm) && wc.byte_len == 0) return conn->on_released(releases_of(imm));
    BYPASS_LOG(Warn, "rdma", "qp 0x%x: unknown immediate data 0x%08x (%u bytes)", wc.qp_num, imm, wc.byte_len);
    return conn->fail_protocol("unknown immediate data");
  }
  if (is_credit_immediate(imm)) conn->on_credits(credits_of(imm));
  if (is_descriptor_immediate(imm)) {
    // Parsed at once: the chunk goes straight back to the receive queue.
    conn->on_descriptor(reinterpret_cast<const uint8_t*>(chunk), wc.byte_len);
    release_rx_chunk(chunk);
    return;
  }
  if (wc.byte_len == 0) {
    release_rx_chunk(chunk);
    conn->on_receive({}, fin);
    return;
  }
  // Zero-copy: the chunk itself goes up; it returns to the pool (and then the receive queue)
  // when the last view on it is dropped, on whatever thread that happens.
  conn->on_receive(rx_pool_->lend(chunk, wc.byte_len), fin);
}

int RdmaWorker::poll_completions() {
  ibv_wc wcs[kPollBatch];
  int total = 0;
  for (int round = 0; round < 8; ++round) {
    const int n = ibv_poll_cq(cq_, kPollBatch, wcs);
    if (n <= 0) {
      if (n < 0) BYPASS_LOG(Error, "rdma", "ibv_poll_cq failed on worker %u", id());
      break;
    }
    for (int i = 0; i < n; ++i) handle_completion(wcs[i]);
    total += n;
    if (n < kPollBatch) break;
  }
  return total;
}

int RdmaWorker::poll_hook() {
  int work = 0;
  if (rx_pool_->collect_returned() > 0) ++work;
  work += poll_completions();
  if (srq_ ? rx_posted_ < srq_depth_ : !need_receives_.empty()) replenish_receives();
  if (!retired_.empty()) {
    reap_retired();
    ++work;
  }
  bool arming = false;
  if (work == 0 && !cq_armed_) {
    // About to go idle: ask for a completion event so the loop can sleep on the channel, then
    // poll once more so a completion that raced with arming is not left waiting.
    ibv_req_notify_cq(cq_, 0);
    cq_armed_ = true;
    arming = true;
    work += poll_completions();
  }
  // Nothing changed while idle: the snapshots stay as they were when the loop went idle.
  if (work > 0 || arming) publish_snapshots();
  return work;
}

void RdmaWorker::publish_snapshots() {
  rx_posted_snapshot_.store(rx_posted_, std::memory_order_relaxed);
  rx_free_snapshot_.store(rx_pool_->free_count(), std::memory_order_relaxed);
  tx_in_use_snapshot_.store(tx_pool_->in_use(), std::memory_order_relaxed);
  sends_snapshot_.store(send_slots_.size() - free_send_slots_.size(), std::memory_order_relaxed);
  reads_snapshot_.store(reads_outstanding_, std::memory_order_relaxed);
  descriptors_snapshot_.store(descriptors_unreleased_, std::memory_order_relaxed);
  const RegistrationCache::Stats& cache = cache_->stats();
  cache_entries_snapshot_.store(cache.entries, std::memory_order_relaxed);
  cache_pinned_snapshot_.store(cache.pinned_entries, std::memory_order_relaxed);
  cache_bytes_snapshot_.store(cache.bytes_registered, std::memory_order_relaxed);
  cache_hits_snapshot_.store(cache.hits, std::memory_order_relaxed);
  cache_misses_snapshot_.store(cache.misses, std::memory_order_relaxed);
  cache_evictions_snapshot_.store(cache.evictions, std::memory_order_relaxed);
}

}  // namespace bypass::rdma
