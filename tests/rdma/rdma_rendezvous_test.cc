// Rendezvous on real verbs (tests/rdma, inside tools/rxe-vm): payload runs around the threshold and
// one of 64 MiB arrive byte-exact and in order among small sends, with no copy on either side; a
// registration cache far smaller than the traffic evicts and every byte still arrives; a peer
// killed mid-transfer (either end) is a reset that leaves no READ, pinned registration or
// registered memory behind; a forged descriptor (bad rkey, address or length outside the peer's
// registration, malformed) is a connection error that delivers nothing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "stack/rdma/rdma_socket.h"
#include "tests/rdma/rdma_test_support.h"

namespace bypass::testing {
namespace {

// A payload segment of its own storage (so the registration cache can hold it) carrying the
// pattern at stream offset `offset`.
BufferSegment pattern_segment(size_t offset, size_t len) {
  BufferSegment s = BufferSegment::allocate(len, BufferSharing::across_threads);
  for (size_t i = 0; i < len; ++i) s.data()[i] = pattern_byte(offset + i);
  return s;
}

// Sends what add() gives it, in order, as fast as the transport accepts; after the last piece it
// shuts down and finishes. Runs on its worker; add() is called there (run_on).
class ListSource final : public StreamHandler {
 public:
  ListSource(HandlerPool& pool, Worker& worker, ConnectedSocket socket, std::atomic<int>* result, Completion* done)
      : StreamHandler(pool, worker, std::move(socket)), result_(result), done_(done) {}
  void start() override { set_interest(kEventWritable); }
  void add(BufferList more, bool last) {
    pending_.append(std::move(more));
    last_ = last;
    if (connected_) flush();
  }

 private:
  void on_writable() override {
    if (!connected_) {
      const int rc = socket_.is_connected();
      if (rc == 0) return;
      if (rc < 0) return end(rc);
      connected_ = true;
    }
    flush();
  }
  void flush() {
    while (!pending_.empty()) {
      const ssize_t n = socket_.send(pending_, false);
      if (n == -EAGAIN) return set_interest(kEventWritable);
      if (n < 0) return end(static_cast<int>(n));
    }
    if (last_) {
      socket_.shutdown();
      return end(0);
    }
    set_interest(kEventNone);
  }
  void end(int rc) {
    result_->store(rc);
    done_->signal();
    finish();
  }

  BufferList pending_;
  bool last_ = false;
  bool connected_ = false;
  std::atomic<int>* result_;
  Completion* done_;
};

uint64_t counter(NetworkStack& stack, const std::string& name) {
  for (const auto& [n, v] : stack.transport_counters())
    if (n == name) return v;
  ADD_FAILURE() << "no transport counter " << name;
  return 0;
}

// The emulated guest answers a 1 MiB READ (a thousand packets) more slowly than the default ACK
// timeout (67 ms): the reader would retry the READ from its start, over and over (rxe's
// completer_retry_err), and 64 MiB would take minutes. 1 s was not enough with four guests on two
// host cores (64 MiB unfinished after 300 s); the loopback link loses nothing, so a longer timeout
// costs nothing. A real NIC answers in microseconds.
constexpr const char* kGuestAckTimeout = "rdma.ack_timeout=4s";

class RdmaRendezvous : public RdmaTransport {
 protected:
  void start(std::vector<std::string> overrides) {
    overrides.push_back(kGuestAckTimeout);
    RdmaTransport::start(std::move(overrides));
  }
  // Waits (bounded) until `done` says so; false on timeout.
  template <typename Pred>
  static bool eventually(Pred done, std::chrono::seconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }
  // Connects a ListSource from worker 0 to `addr`.
  ListSource* connect_source(const SocketAddress& addr, std::atomic<int>* result, Completion* done) {
    ListSource* source = nullptr;
    run_on(*stack_->worker(0), [&] {
      ConnectedSocket s;
      ASSERT_EQ(stack_->worker(0)->connect(addr, SocketOptions{}, &s), 0);
      source = pool_->spawn<ListSource>(*stack_->worker(0), std::move(s), result, done);
    });
    return source;
  }
};

TEST_F(RdmaRendezvous, SizesAroundTheThresholdAnd64MiBArriveByteExactInOrderWithoutCopies) {
  start({"ms.workers=1"});
  const size_t threshold = conf_.get_size("rdma.rendezvous_threshold");
  ASSERT_GT(threshold, 1u);
  // Small sends between and around the large runs; the last two large ones are adjacent (one
  // descriptor of two regions).
  const size_t sizes[] = {100, threshold - 1, 7, threshold, 1, threshold + 1, 3000, size_t{64} << 20, 33, threshold,
                          threshold};
  BufferList stream;
  size_t total = 0, copied = 0, by_read = 0;
  for (size_t len : sizes) {
    stream.append(pattern_segment(total, len));
    total += len;
    (len >= threshold ? by_read : copied) += len;
  }
  // Then two from allocate_payload() below the threshold: a short one is copied in with its
  // neighbours (its own SEND would cost more), one of half a chunk or more is sent in place.
  const size_t in_place = conf_.get_size("rdma.chunk_size") / 2;
  for (size_t len : {size_t{200}, in_place}) {
    BufferList registered = stack_->allocate_payload(len, BufferSharing::across_threads);
    ASSERT_EQ(registered.segments().size(), 1u);
    for (size_t i = 0; i < len; ++i) registered.segments().front().data()[i] = pattern_byte(total + i);
    ASSERT_TRUE(rdma().registered_memory().contains(registered.segments().front().data(), len));
    stream.append(std::move(registered));
    total += len;
  }
  copied += 200;
  std::atomic<size_t> received{0};
  std::atomic<int> sink_result{0}, source_result{-1};
  Completion sink_done, source_done;
  StopFirst stop_first{this};
  const SocketAddress addr = listen([&](Worker& w, ConnectedSocket s) {
    pool_->spawn<PatternSink>(w, std::move(s), 0ms, &received, &sink_result, &sink_done, /*zero_copy=*/true);
  });
  ListSource* source = connect_source(addr, &source_result, &source_done);
  run_on(*stack_->worker(0), [&] { source->add(std::move(stream), true); });
  ASSERT_TRUE(sink_done.wait_for(1, 300s)) << received.load() << " of " << total << " bytes";
  EXPECT_EQ(sink_result.load(), 1) << "sink ended with " << socket_error_name(sink_result.load());
  EXPECT_EQ(received.load(), total);
  ASSERT_TRUE(source_done.wait_for(1, 10s));
  EXPECT_EQ(source_result.load(), 0) << socket_error_name(source_result.load());
  // Only the runs below the threshold were copied (into send chunks); the receiver copied nothing.
  EXPECT_EQ(counter(*stack_, "tx_copied_bytes"), copied);
  EXPECT_EQ(counter(*stack_, "zero_copy_sent_bytes"), in_place);
  EXPECT_EQ(counter(*stack_, "rx_copied_bytes"), 0u);
  EXPECT_EQ(counter(*stack_, "rendezvous_read_bytes"), by_read);
  EXPECT_EQ(counter(*stack_, "rendezvous_descriptors_sent"), 4u);
  EXPECT_EQ(counter(*stack_, "rendezvous_read_transfers"), 4u);
  pool_->clear();
  ASSERT_TRUE(wait_idle(30s));
  const auto s = rdma().worker_stats(0);
  EXPECT_EQ(s.descriptors_unreleased, 0u);
  EXPECT_EQ(s.reads_in_flight, 0u);
  EXPECT_EQ(s.cache_pinned_entries, 0u);
  EXPECT_TRUE(eventually([&] { return rdma().registered_memory().bytes_in_use() == 0; }, 10s))
      << rdma().registered_memory().bytes_in_use() << " bytes of READ targets never came back";
}

TEST_F(RdmaRendezvous, RegistrationCacheFarSmallerThanTheTrafficEvictsAndEveryByteArrives) {
  // Room for three 128 KiB registrations; the sender keeps six buffers alive and sends them one at
  // a time (each read and released before the next), buffer 0 every other time: 0 stays cached
  // (hits), the others push each other out (evictions).
  constexpr size_t kBuffer = 128 << 10;
  start({"ms.workers=1", "rdma.registration_cache=384K", "rdma.rendezvous_threshold=64K"});
  std::vector<BufferSegment> buffers;
  const int order[] = {0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 1, 0, 2};
  std::atomic<size_t> received{0};
  std::atomic<int> sink_result{0}, source_result{-1};
  Completion sink_done, source_done;
  StopFirst stop_first{this};
  const SocketAddress addr = listen([&](Worker& w, ConnectedSocket s) {
    pool_->spawn<PatternSink>(w, std::move(s), 0ms, &received, &sink_result, &sink_done);
  });
  ListSource* source = connect_source(addr, &source_result, &source_done);
  // The pattern runs through the whole stream, so each buffer is sent at the offset it was made for:
  // buffer i carries the stream bytes of its slot in `order` only the first time; later sends of it
  // are checked against a copy made for that slot.
  size_t offset = 0;
  for (size_t step = 0; step < std::size(order); ++step) {
    const size_t b = static_cast<size_t>(order[step]);
    if (buffers.size() <= b) buffers.resize(b + 1);
    if (buffers[b].empty()) buffers[b] = pattern_segment(offset, kBuffer);
    // The buffer holds pattern bytes of its first offset: rewrite them for this one (the same
    // storage, so the same registration).
    for (size_t i = 0; i < kBuffer; ++i) buffers[b].data()[i] = pattern_byte(offset + i);
    BufferList piece;
    piece.append(buffers[b]);
    offset += kBuffer;
    const bool last = step + 1 == std::size(order);
    run_on(*stack_->worker(0), [&] { source->add(std::move(piece), last); });
    ASSERT_TRUE(eventually([&] { return received.load() == offset && rdma().worker_stats(0).descriptors_unreleased == 0; },
                           60s)) << "step " << step << ": " << received.load() << " of " << offset << " bytes";
  }
  ASSERT_TRUE(sink_done.wait_for(1, 30s));
  EXPECT_EQ(sink_result.load(), 1) << "sink ended with " << socket_error_name(sink_result.load());
  const auto s = rdma().worker_stats(0);
  EXPECT_GT(s.cache_hits, 0u);
  EXPECT_GT(s.cache_evictions, 0u);
  EXPECT_LE(s.cache_bytes, 384u << 10);
  EXPECT_EQ(counter(*stack_, "rendezvous_read_transfers"), std::size(order)) << "every send went by READ";
  EXPECT_EQ(counter(*stack_, "tx_copied_bytes"), 0u);
  // Once the application lets go of its buffers the cache lets go of their registrations.
  buffers.clear();
  pool_->clear();
  EXPECT_TRUE(eventually([&] { return rdma().worker_stats(0).cache_entries == 0; }, 10s))
      << rdma().worker_stats(0).cache_entries << " registrations outlived their memory's last user";
}

// ---------------------------------------------------------------- peers killed mid-transfer

constexpr size_t kKilledTransfer = size_t{32} << 20;

TEST_F(RdmaRendezvous, ReceiverKilledMidReadLeavesNothingPinnedOrHeld) {
  start({"ms.workers=1"});
  BufferSegment payload = pattern_segment(0, kKilledTransfer);
  std::atomic<int> source_result{-1};
  Completion source_done;
  StopFirst stop_first{this};
  const SocketAddress addr = listen([&](Worker& w, ConnectedSocket s) {
    ListSource* source = pool_->spawn<ListSource>(w, std::move(s), &source_result, &source_done);
    BufferList data;
    data.append(payload);
    source->add(std::move(data), true);
  });
  const pid_t child = spawn_self({"--rdma-stalled-reader", addr.to_string()});
  ASSERT_GE(child, 0);
  // The reader's READ memory ran out after its first piece: the descriptor is sent, pinned, unreleased.
  const bool stuck = eventually([&] {
    const auto s = rdma().worker_stats(0);
    return s.descriptors_unreleased == 1 && s.cache_pinned_entries == 1;
  }, 60s);
  const long held_while_stuck = payload.use_count();
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(stuck) << "the descriptor was never outstanding (child status " << status << ")";
  EXPECT_EQ(held_while_stuck, 3) << "ours, the cache's and the unreleased descriptor's";
  // The sender closed after sending; its close waited for the release, then saw the reader die.
  ASSERT_TRUE(wait_idle(60s));
  const auto s = rdma().worker_stats(0);
  EXPECT_EQ(s.descriptors_unreleased, 0u);
  EXPECT_EQ(s.cache_pinned_entries, 0u);
  EXPECT_EQ(payload.use_count(), 2) << "the dead peer's descriptor still holds the payload";
  payload = BufferSegment();
  EXPECT_TRUE(eventually([&] { return rdma().worker_stats(0).cache_entries == 0; }, 10s));
}

TEST_F(RdmaRendezvous, SenderKilledMidTransferIsAResetAndReturnsTheReadMemory) {
  start({"ms.workers=1"});
  std::atomic<size_t> received{0};
  std::atomic<int> result{0};
  Completion done;
  StopFirst stop_first{this};
  const SocketAddress addr = listen([&](Worker& w, ConnectedSocket s) {
    pool_->spawn<PatternSink>(w, std::move(s), 0ms, &received, &result, &done, /*zero_copy=*/true);
  });
  const pid_t child = spawn_self({"--rdma-dying-sender", addr.to_string()});
  ASSERT_GE(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
  ASSERT_TRUE(done.wait_for(1, 60s)) << "the reader never noticed the dead sender";
  EXPECT_EQ(result.load(), -ECONNRESET) << socket_error_name(result.load());
  EXPECT_LT(received.load(), kKilledTransfer) << "the transfer finished before the sender died";
  pool_->clear();
  ASSERT_TRUE(wait_idle(60s));
  const auto s = rdma().worker_stats(0);
  EXPECT_EQ(s.reads_in_flight, 0u);
  EXPECT_EQ(s.cache_pinned_entries, 0u);
  EXPECT_TRUE(eventually([&] { return rdma().registered_memory().bytes_in_use() == 0; }, 10s))
      << rdma().registered_memory().bytes_in_use() << " bytes of READ targets never came back";
}

// ---------------------------------------------------------------- forged descriptors

void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

std::vector<uint8_t> descriptor_bytes(uint64_t address, uint32_t rkey, uint32_t length, uint8_t count = 1) {
  std::vector<uint8_t> d(4 + 16, 0);
  d[0] = 1;
  d[1] = count;
  put_le(&d[4], address, 8);
  put_le(&d[12], rkey, 4);
  put_le(&d[16], length, 4);
  return d;
}

TEST_F(RdmaRendezvous, ForgedDescriptorsAreConnectionErrorsThatDeliverNothing) {
  start({"ms.workers=1"});
  rdma::RegisteredMemory& memory = rdma().registered_memory();
  const uint64_t base = reinterpret_cast<uintptr_t>(memory.base());
  const uint64_t end = base + memory.region_bytes();
  struct Case {
    const char* what;
    std::vector<uint8_t> bytes;
  };
  const Case cases[] = {
      {"an rkey nobody registered", descriptor_bytes(base, memory.rkey() ^ 0x00ff0000u, 4096)},
      {"an address below the registration", descriptor_bytes(base - 65536, memory.rkey(), 4096)},
      {"a length past its end", descriptor_bytes(end - 4096, memory.rkey(), 8192)},
      {"no regions", descriptor_bytes(base, memory.rkey(), 4096, 0)},
  };
  StopFirst stop_first{this};
  std::atomic<size_t> received{0};
  std::atomic<int> result{0};
  Completion done;
  std::atomic<int> accepted{0};
  const SocketAddress addr = listen([&](Worker& w, ConnectedSocket s) {
    pool_->spawn<PatternSink>(w, std::move(s), 0ms, &received, &result, &done, /*zero_copy=*/true);
    accepted.fetch_add(1);
  });
  Worker& w = *stack_->worker(0);
  int finished = 0;
  for (const Case& c : cases) {
    ConnectedSocket forger;
    run_on(w, [&] { ASSERT_EQ(w.connect(addr, SocketOptions{}, &forger), 0); });
    ASSERT_TRUE(eventually([&] {
      int rc = 0;
      run_on(w, [&] { rc = forger.is_connected(); });
      return rc != 0;
    }, 60s)) << c.what;
    // Accepted first: a connection that fails before the listener hands it out is dropped there
    // (RdmaServerSocket::connection_failed), with no sink to see the error.
    ASSERT_TRUE(eventually([&] { return accepted.load() == finished + 1; }, 60s)) << c.what << ": never accepted";
    int injected = -1;
    run_on(w, [&] {
      auto* impl = static_cast<rdma::RdmaConnectedSocket*>(forger.impl());
      injected = impl->connection()->inject_descriptor(c.bytes.data(), c.bytes.size());
    });
    ASSERT_EQ(injected, 0) << c.what;
    ASSERT_TRUE(done.wait_for(++finished, 60s)) << c.what << ": the receiver did not fail";
    EXPECT_EQ(result.load(), -EPROTO) << c.what << ": " << socket_error_name(result.load());
    EXPECT_EQ(received.load(), 0u) << c.what;
    run_on(w, [&] { forger.close(); });
  }
  pool_->clear();
  EXPECT_TRUE(wait_idle(60s));
  EXPECT_TRUE(eventually([&] { return memory.bytes_in_use() == 0; }, 10s)) << "READ targets never came back";
}

// ---------------------------------------------------------------- the child processes

// --rdma-stalled-reader ADDR: connects and reads nothing, with 1 MiB of READ memory and no
// registration cache, so its READs of a larger descriptor stop after the first piece; the parent
// kills it.
int run_stalled_reader(const char* address) {
  SocketAddress addr;
  if (!SocketAddress::parse(address, &addr)) return 2;
  config::Config conf = make_test_config(
      {"ms.type=rdma", "ms.workers=1", "rdma.registered_memory=1M", "rdma.registration_cache=0", kGuestAckTimeout});
  auto stack = NetworkStack::create(conf);
  stack->start();
  ConnectedSocket sock;
  run_on(*stack->worker(0), [&] {
    if (stack->worker(0)->connect(addr, SocketOptions{}, &sock) != 0) _exit(3);
  });
  for (;;) pause();
}

// --rdma-dying-sender ADDR: sends kKilledTransfer pattern bytes as one descriptor and kills itself
// as soon as the descriptor is out.
int run_dying_sender(const char* address) {
  SocketAddress addr;
  if (!SocketAddress::parse(address, &addr)) return 2;
  config::Config conf = make_test_config({"ms.type=rdma", "ms.workers=1"});
  auto stack = NetworkStack::create(conf);
  stack->start();
  auto& rdma = static_cast<RdmaNetworkStack&>(*stack);
  HandlerPool pool(*stack);
  std::atomic<int> result{-1};
  Completion done;
  run_on(*stack->worker(0), [&] {
    ConnectedSocket s;
    if (stack->worker(0)->connect(addr, SocketOptions{}, &s) != 0) _exit(3);
    ListSource* source = pool.spawn<ListSource>(*stack->worker(0), std::move(s), &result, &done);
    BufferList data;
    data.append(pattern_segment(0, kKilledTransfer));
    source->add(std::move(data), false);
  });
  for (int i = 0; i < 6000 && rdma.worker_stats(0).descriptors_unreleased == 0; ++i) std::this_thread::sleep_for(10ms);
  raise(SIGKILL);
  return 4;
}

}  // namespace

int run_rendezvous_child(int argc, char** argv) {
  if (argc != 3) return -1;
  const std::string role = argv[1];
  if (role == "--rdma-stalled-reader") return run_stalled_reader(argv[2]);
  if (role == "--rdma-dying-sender") return run_dying_sender(argv[2]);
  return -1;
}

}  // namespace bypass::testing
