// Heap allocations on the data path of the socket interface: after a warm-up, 10,000 request/reply
// round trips of 4 KiB (a ping-pong client and an echo server, both on the stack named by
// BYPASS_MS_TYPE, in this process) must make no heap allocation at all.
//
// Counted: every malloc/calloc/realloc/memalign family call in the process (operator new goes
// through malloc; it is replaced here too so it cannot bypass the count), on any thread, between
// the client's round trip kWarmUp and round trip kWarmUp + kMeasured. Under AddressSanitizer,
// whose allocator owns malloc, the sanitizer's own malloc hook counts instead.
// Allowed per connection: nothing inside the window. Everything a connection needs once (its
// socket, handler, event registrations, receive buffers, the pools' first blocks) is made during
// the warm-up, which is why it exists. On failure the test prints the first allocations' stacks.
#include <execinfo.h>
#include <malloc.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "tests/unit/socket/socket_test_handlers.h"
#include "tests/unit/socket/socket_test_harness.h"

#if defined(__SANITIZE_ADDRESS__)
// From the sanitizer runtime (sanitizer/allocator_interface.h, not always installed).
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                                         void (*free_hook)(const volatile void*));
#define BYPASS_COUNT_WITH_SANITIZER_HOOKS 1
#endif

namespace {

std::atomic<bool> counting{false};
std::atomic<uint64_t> allocations{0};
constexpr int kStacksKept = 6;
constexpr int kStackDepth = 24;
void* stacks[kStacksKept][kStackDepth];
int stack_depths[kStacksKept];
std::atomic<int> stacks_taken{0};
thread_local bool in_hook = false;

void note_allocation() {
  if (!counting.load(std::memory_order_relaxed) || in_hook) return;
  in_hook = true;
  const uint64_t n = allocations.fetch_add(1, std::memory_order_relaxed);
  if (n < kStacksKept) {
    const int slot = stacks_taken.fetch_add(1, std::memory_order_relaxed);
    if (slot < kStacksKept) stack_depths[slot] = backtrace(stacks[slot], kStackDepth);
  }
  in_hook = false;
}

void print_stacks() {
  const int n = std::min(stacks_taken.load(), kStacksKept);
  for (int i = 0; i < n; ++i) {
    std::fprintf(stderr, "--- allocation %d on the data path:\n", i + 1);
    std::fflush(stderr);
    backtrace_symbols_fd(stacks[i], stack_depths[i], STDERR_FILENO);
  }
}

}  // namespace

#if defined(BYPASS_COUNT_WITH_SANITIZER_HOOKS)
namespace {
void sanitizer_malloc_hook(const volatile void*, size_t) { note_allocation(); }
void sanitizer_free_hook(const volatile void*) {}
[[maybe_unused]] const int hooks_installed = __sanitizer_install_malloc_and_free_hooks(&sanitizer_malloc_hook, &sanitizer_free_hook);
}  // namespace
#else
// glibc's allocator under its internal names: these definitions interpose malloc for the whole
// process (DPDK's shared libraries included).
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t size) {
  note_allocation();
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  note_allocation();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  note_allocation();
  return __libc_realloc(p, size);
}
void* memalign(size_t alignment, size_t size) {
  note_allocation();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  note_allocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  note_allocation();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }
}

void* operator new(size_t size) {
  if (void* p = malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept { return malloc(size ? size : 1); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return malloc(size ? size : 1); }
void* operator new(size_t size, std::align_val_t al) {
  void* p = nullptr;
  if (posix_memalign(&p, std::max(static_cast<size_t>(al), sizeof(void*)), size ? size : 1) != 0) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t size, std::align_val_t al) { return operator new(size, al); }
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { free(p); }
#endif

namespace bypass::testing {
namespace {

constexpr size_t kMessage = 4096;
constexpr int kWarmUp = 2000;
constexpr int kMeasured = 10'000;

// Sends one 4 KiB request, waits until the whole echo is back (checking its bytes), repeats;
// counts heap allocations between round trip kWarmUp and kWarmUp + kMeasured.
class PingPongClient final : public StreamHandler {
 public:
  PingPongClient(HandlerPool& pool, Worker& worker, SocketAddress peer, uint64_t* measured, Completion* done)
      : StreamHandler(pool, worker, ConnectedSocket()), peer_(peer), measured_(measured), done_(done) {}

  void start() override {
    for (size_t i = 0; i < kMessage; ++i) expected_[i] = static_cast<char>(i * 131 + 7);
    request_ = BufferSegment::copy_of(expected_, kMessage);
    const int r = worker_.connect(peer_, SocketOptions{}, &socket_);
    if (r < 0) return fail("connect", r);
    set_interest(kEventWritable);
  }

 private:
  void on_writable() override {
    if (connecting_) {
      const int c = socket_.is_connected();
      if (c == 0) return;
      if (c < 0) return fail("connect", c);
      connecting_ = false;
      set_interest(kEventReadable);
      send_request();
      return;
    }
    flush();
  }

  void on_readable() override {
    for (;;) {
      const ssize_t r = socket_.zero_copy_read(reply_, kMessage - reply_.length());
      if (r == -EAGAIN) return;
      if (r <= 0) return fail("read", r == 0 ? -ECONNRESET : static_cast<int>(r));
      if (reply_.length() < kMessage) continue;
      if (!reply_.contents_equal(std::string_view(expected_, kMessage))) return fail("reply content", -EBADMSG);
      reply_.clear();
      ++round_trips_;
      if (round_trips_ == kWarmUp) {
        allocations.store(0);
        counting.store(true);
      }
      if (round_trips_ == kWarmUp + kMeasured) {
        counting.store(false);
        *measured_ = allocations.load();
        done_->signal();
        finish();
        return;
      }
      send_request();
    }
  }

  void send_request() {
    out_.append(request_);  // a view: the request's bytes are never copied
    flush();
  }

  void flush() {
    const ssize_t r = socket_.send(out_, false);
    if (r < 0 && r != -EAGAIN) return fail("send", static_cast<int>(r));
    set_interest(out_.empty() ? kEventReadable : kEventReadable | kEventWritable);
  }

  void fail(const char* what, int error) {
    std::fprintf(stderr, "ping-pong client: %s failed after %d round trips: %s\n", what, round_trips_,
                 socket_error_name(error));
    counting.store(false);
    *measured_ = UINT64_MAX;
    done_->signal();
    finish();
  }

  SocketAddress peer_;
  uint64_t* measured_;
  Completion* done_;
  char expected_[kMessage];
  BufferSegment request_;
  BufferList out_;
  BufferList reply_;
  bool connecting_ = true;
  int round_trips_ = 0;
};

TEST(DataPathAllocations, TenThousandRoundTripsAfterWarmUpAllocateNothing) {
  void* warm[4];
  backtrace(warm, 4);  // the first backtrace() loads libgcc: not inside the window
  // The counter must see an allocation, or a zero below would prove nothing.
  static void* volatile sink;
  counting.store(true);
  sink = std::malloc(16);
  counting.store(false);
  std::free(sink);
  ASSERT_EQ(allocations.exchange(0), 1u) << "the allocation hook does not count";
  stacks_taken.store(0);
  auto stack = NetworkStack::create(make_test_config({"ms.workers=2"}));
  stack->start();
  auto pool = std::make_unique<HandlerPool>(*stack);
  auto listener = std::make_unique<TestListener>(
      *stack, [&pool](Worker& w, ConnectedSocket s) { pool->spawn<EchoServer>(w, std::move(s)); });
  ASSERT_EQ(listener->listen(test_listen_address(), ListenOptions{}, SocketOptions{}), 0);
  uint64_t measured = 0;
  Completion done;
  Worker* client_worker = stack->worker(stack->num_workers() - 1);
  run_on(*client_worker, [&] { pool->spawn<PingPongClient>(*client_worker, listener->connect_address(), &measured, &done); });
  const bool finished = done.wait_for(1, std::chrono::seconds(120));
  tear_down_transport(listener, pool, stack);
  ASSERT_TRUE(finished) << "the round trips did not finish within 120 s";
  ASSERT_NE(measured, UINT64_MAX) << "the ping-pong client failed (see above)";
  if (measured != 0) print_stacks();
  EXPECT_EQ(measured, 0u) << kMeasured << " round trips of " << kMessage << " bytes on " << stack->type()
                          << " made " << measured << " heap allocations after a warm-up of " << kWarmUp;
}

}  // namespace
}  // namespace bypass::testing

int main(int argc, char** argv) {
  return bypass::testing::run_transport_suite(argc, argv, [] {
    auto probe = bypass::NetworkStack::create(bypass::testing::make_test_config({"ms.workers=2"}));
  });
}
