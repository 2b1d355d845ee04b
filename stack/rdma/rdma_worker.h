// RdmaWorker: one event loop with its own verbs resources, shared by all of its connections:
// a completion channel and one CQ, a shared receive queue (or per-QP receive queues when
// rdma.srq is false), and two registered chunk pools (receive and send), each one MR.
//
// Rendezvous (rendezvous.h) adds two memory users per worker: the stack's RegisteredMemory (shared
// by the workers and the application: READ targets and allocate_payload()) and a RegistrationCache
// of its own for application memory sent by descriptor.
//
// Completions are polled from the PollingDriver's poll hook on the worker thread; when the loop has
// been idle for rdma.busy_poll, the CQ is armed and the loop sleeps in epoll on the completion
// channel's fd (registered as an ordinary kernel file event) instead of spinning. In the rdma_cm
// connect mode the worker also owns an rdma_cm event channel, whose fd is one more file event:
// connection set-up never blocks the loop.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "stack/network_stack.h"
#include "stack/rdma/chunk_pool.h"
#include "stack/rdma/cm_listener.h"
#include "stack/rdma/rdma_connection.h"
#include "stack/rdma/rdma_counters.h"
#include "stack/rdma/rdma_device.h"
#include "stack/rdma/registered_memory.h"
#include "stack/rdma/registration_cache.h"

namespace bypass::rdma {

// Snapshot of a worker's resources (for leak checks: they must return to the idle values).
struct RdmaWorkerStats {
  uint64_t qps_created = 0;
  uint64_t qps_destroyed = 0;
  size_t live_connections = 0;   // including ones still draining
  size_t tx_chunks_in_use = 0;
  size_t rx_chunks_posted = 0;   // on the SRQ or per-QP receive queues
  size_t rx_chunks_held = 0;     // handed up to the owner and not yet released
  size_t rx_chunks_total = 0;
  size_t tx_chunks_total = 0;
  size_t sends_outstanding = 0;
  uint64_t send_eagain = 0;      // sends refused for lack of chunks, send slots or credits (backpressure)
  uint32_t rx_window = 0;        // receive window each connection advertises (messages)
  int memory_regions = 0;        // the chunk pools' (the cache's and RegisteredMemory's apart)
  size_t descriptors_unreleased = 0;  // rendezvous descriptors sent, not yet released by the peer
  size_t reads_in_flight = 0;         // RDMA READs posted, not yet completed
  size_t cache_entries = 0;           // RegistrationCache
  size_t cache_pinned_entries = 0;
  size_t cache_bytes = 0;
  uint64_t cache_hits = 0, cache_misses = 0, cache_evictions = 0;
  uint8_t read_depth = 0;             // the READ depth this worker offers its peers
};

struct RdmaTuning {
  size_t chunk_size = 32768;
  size_t chunk_count = 1024;
  uint32_t rx_window = 32;         // rdma.rx_window, capped at a quarter of chunk_count (flow_credits.h)
  bool hugepages = false;
  bool use_srq = true;
  uint32_t qp_depth = 64;          // send WRs per QP (and receive WRs per QP without SRQ)
  std::chrono::nanoseconds busy_poll{20000};
  std::chrono::milliseconds drain_timeout{5000};
  int inject_failures = 0;         // ms.inject_socket_failures
  uint8_t ack_timeout_exponent = 14;  // verbs local ACK timeout: 4.096 us * 2^n (67 ms)
  uint8_t retry_count = 7;            // transport retries before the QP fails
  bool use_cm = false;                // rdma.connect_mode: rdma_cm (else the TCP side channel)
  size_t rendezvous_threshold = 65536;  // rdma.rendezvous_threshold (0: no rendezvous)
  uint32_t rendezvous_reads = 8;        // rdma.rendezvous_reads
  size_t rendezvous_read_size = RegisteredMemory::kLargestBlock;  // rdma.rendezvous_read_size
  size_t registration_cache = size_t{256} << 20;  // rdma.registration_cache (bytes per worker)
  static RdmaTuning from(const config::Config& conf);
};

// The verbs encoding of a local ACK timeout: the smallest n in 1..31 with 4.096 us * 2^n >= `timeout`.
uint8_t verbs_ack_timeout_exponent(std::chrono::nanoseconds timeout);

class RdmaWorker final : public Worker {
 public:
  // `cm_listeners`: the stack's shared rdma_cm listening ports (rdma_cm mode only, else null).
  // `payload_memory`: the stack's RegisteredMemory, registered in the device's PD.
  RdmaWorker(unsigned id, std::shared_ptr<RdmaDevice> device, const RdmaTuning& tuning,
             std::shared_ptr<CmListenRegistry> cm_listeners, std::shared_ptr<RegisteredMemory> payload_memory);
  ~RdmaWorker() override;

  int listen(const SocketAddress& addr, const ListenOptions& lopts, const SocketOptions& sopts,
             ServerSocket* out) override;
  int connect(const SocketAddress& addr, const SocketOptions& opts, ConnectedSocket* out) override;
  void on_thread_start() override;
  void on_thread_stop() override;

  RdmaWorkerStats stats() const;  // any thread (approximate off the owner thread)
  // Counters (all monotonic) and gauges of this worker; its own thread only.
  NetworkStack::WorkerReport report() const;
  uint64_t next_socket_seed() { return (uint64_t{id()} << 32) + ++socket_serial_; }

  // ---- for RdmaConnection (owner thread only) ----
  RdmaDevice& device() { return *device_; }
  const RdmaTuning& tuning() const { return tuning_; }
  PollingDriver& poller() { return *poller_; }
  const CmChannel& cm_channel() const { return cm_channel_; }
  ibv_qp* create_qp();
  void register_qp(RdmaConnection* conn, uint32_t qp_num);
  // The connection is closed by its owner and drained: destroy the QP and forget it.
  void retire(RdmaConnection* conn);
  std::shared_ptr<RdmaConnection> adopt(std::shared_ptr<RdmaConnection> conn);
  ChunkPool& tx_pool() { return *tx_pool_; }
  RegisteredMemory& payload_memory() { return *payload_memory_; }
  RegistrationCache& registration_cache() { return *cache_; }
  RdmaCounters& counters() { return counters_; }
  // RDMA READs one connection may have in flight, and serve, at most: the device's limits,
  // rdma.rendezvous_reads and the wire format's maximum. A connection uses the smaller of its two ends'.
  uint8_t read_depth() const { return read_depth_; }
  // Rendezvous descriptors sent and not yet released, for stop()'s linger.
  void descriptors_posted(size_t n) { descriptors_unreleased_ += n; }
  void descriptors_released(size_t n) { descriptors_unreleased_ -= n; }
  // The lkey for memory inside the registered pools or RegisteredMemory, or 0 when p..p+len is
  // not registered there.
  uint32_t lkey_for(const void* p, size_t len) const;
  // A send slot for a work request (wr_id), or -1 when the worker's send budget is spent. `kind`
  // is reported back with the completion.
  int64_t acquire_send_slot(RdmaConnection* conn, char* tx_chunk, BufferSegment held,
                            RdmaConnection::WorkKind kind = RdmaConnection::WorkKind::Data);
  void cancel_send_slot(int64_t slot);  // the post failed: release the slot and its chunk
  // The connection's send() hit backpressure: tell it (writable) when send room comes back.
  void wait_for_send_room(RdmaConnection* conn);
  uint64_t send_budget_left() const { return free_send_slots_.size(); }
  // Sends posted and not yet completed, and descriptors the peers have not released (owner
  // thread; stats() has a snapshot for other threads): what stop() lingers for.
  size_t sends_outstanding() const { return send_slots_.size() - free_send_slots_.size() + descriptors_unreleased_; }
  void post_receives_for(RdmaConnection* conn);  // per-QP receive mode: top the QP up
  void count_send_eagain() { ++counters_.send_eagain; }
  // Runs one completion poll now (used before acting on a side-channel EOF, so data and FIN that
  // already arrived are seen first). Returns completions handled.
  int poll_completions();

 private:
  struct SendSlot {
    RdmaConnection* conn = nullptr;
    char* tx_chunk = nullptr;   // from tx_pool_, or null
    BufferSegment held;         // zero-copy: registered memory kept alive until completion (a READ's target)
    RdmaConnection::WorkKind kind = RdmaConnection::WorkKind::Data;
  };

  int poll_hook();
  void handle_completion(const ibv_wc& wc);
  void replenish_receives();
  bool post_receive(ibv_qp* qp, char* chunk);  // qp null: the SRQ
  void release_rx_chunk(char* chunk);
  void reap_retired();
  void handle_cm_events();
  void handle_receive(const ibv_wc& wc);
  // Drops cache entries whose memory the application let go of, now and then (registration_cache.h).
  void schedule_cache_sweep();
  // The *_snapshot_ values stats() reads from other threads.
  void publish_snapshots();

  std::shared_ptr<RdmaDevice> device_;
  RdmaTuning tuning_;
  PollingDriver* poller_;
  ibv_comp_channel* channel_ = nullptr;
  CmChannel cm_channel_;
  std::shared_ptr<CmListenRegistry> cm_listeners_;
  ibv_cq* cq_ = nullptr;
  int cq_size_ = 0;
  ibv_srq* srq_ = nullptr;
  uint32_t srq_depth_ = 0;
  std::shared_ptr<ChunkPool> rx_pool_;
  std::shared_ptr<ChunkPool> tx_pool_;
  ibv_mr* rx_mr_ = nullptr;
  ibv_mr* tx_mr_ = nullptr;
  size_t rx_posted_ = 0;
  bool cq_armed_ = false;
  unsigned cq_events_unacked_ = 0;
  std::vector<SendSlot> send_slots_;
  std::vector<uint32_t> free_send_slots_;
  std::unordered_map<uint32_t, RdmaConnection*> by_qp_num_;
  std::unordered_map<RdmaConnection*, std::shared_ptr<RdmaConnection>> connections_;
  std::vector<RdmaConnection*> retired_;
  std::vector<RdmaConnection*> blocked_senders_;
  std::vector<RdmaConnection*> need_receives_;  // per-QP mode: QPs short of posted receives
  std::atomic<uint64_t> qps_created_{0};
  std::atomic<uint64_t> qps_destroyed_{0};
  std::atomic<size_t> live_{0};
  std::atomic<size_t> rx_posted_snapshot_{0};
  std::atomic<size_t> tx_in_use_snapshot_{0};
  std::atomic<size_t> rx_free_snapshot_{0};
  std::atomic<size_t> sends_snapshot_{0};
  std::atomic<size_t> reads_snapshot_{0};
  std::atomic<size_t> descriptors_snapshot_{0};
  // The cache's stats for other threads (stats()).
  std::atomic<size_t> cache_entries_snapshot_{0}, cache_pinned_snapshot_{0}, cache_bytes_snapshot_{0};
  std::atomic<uint64_t> cache_hits_snapshot_{0}, cache_misses_snapshot_{0}, cache_evictions_snapshot_{0};
  size_t reads_outstanding_ = 0;  // READ work requests posted, not completed
  uint64_t socket_serial_ = 0;
  std::shared_ptr<RegisteredMemory> payload_memory_;
  std::unique_ptr<RegistrationCache> cache_;
  RdmaCounters counters_;
  uint8_t read_depth_ = 0;
  size_t descriptors_unreleased_ = 0;
  uint64_t sweep_timer_ = 0;
};

}  // namespace bypass::rdma
