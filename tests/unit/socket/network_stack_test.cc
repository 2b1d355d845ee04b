// Transport-independent pieces: SocketAddress, error names, stack lifecycle and CPU pinning.
#include <gtest/gtest.h>

#include <cerrno>
#include <set>

#include "stack/transport_registry.h"
#include "tests/unit/socket/socket_test_harness.h"

namespace bypass::testing {
namespace {

TEST(SocketAddressTest, ParsesIpv4AndBracketedIpv6) {
  SocketAddress a;
  ASSERT_TRUE(SocketAddress::parse("1.2.3.4:5", &a));
  EXPECT_TRUE(a.is_ipv4());
  EXPECT_EQ(a.ipv4_host_order(), 0x01020304u);
  EXPECT_EQ(a.port(), 5);
  EXPECT_EQ(a.to_string(), "1.2.3.4:5");
  EXPECT_EQ(a, SocketAddress::ipv4(0x01020304, 5));

  SocketAddress b;
  ASSERT_TRUE(SocketAddress::parse("[::1]:65535", &b));
  EXPECT_EQ(b.family(), AF_INET6);
  EXPECT_EQ(b.port(), 65535);
  EXPECT_EQ(b.to_string(), "[::1]:65535");
  EXPECT_EQ(b.sockaddr_len(), sizeof(sockaddr_in6));
  EXPECT_FALSE(a == b);

  const SocketAddress c = SocketAddress::from_sockaddr(b.sockaddr_ptr(), b.sockaddr_len());
  EXPECT_EQ(c, b);
  b.set_port(7);
  EXPECT_EQ(b.port(), 7);
}

TEST(SocketAddressTest, RejectsMalformedText) {
  const SocketAddress original = SocketAddress::ipv4(0x7f000001, 1);
  for (const char* bad : {"", "1.2.3.4", "1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:-1", "1.2.3:5",
                          "localhost:5", "::1:5", "[::1]5", "[::1]:", "[1.2.3.4]:5", "1.2.3.4:5x",
                          "[::1:5", " 1.2.3.4:5"}) {
    SocketAddress out = original;
    EXPECT_FALSE(SocketAddress::parse(bad, &out)) << "'" << bad << "'";
    EXPECT_EQ(out, original) << "'" << bad << "' modified the output";
  }
}

TEST(SocketErrorNameTest, NamesErrnoValues) {
  EXPECT_STREQ(socket_error_name(-ECONNREFUSED), "ECONNREFUSED");
  EXPECT_STREQ(socket_error_name(-ETIMEDOUT), "ETIMEDOUT");
  EXPECT_STREQ(socket_error_name(0), "OK");
}

TEST(NetworkStackTest, UnknownCpuIsAClearError) {
  auto conf = make_test_config({"ms.workers=1", "ms.cpus=1000"});
  auto stack = NetworkStack::create(conf);
  try {
    stack->start();
    FAIL() << "start() accepted CPU 1000";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ms.cpus: CPU 1000"), std::string::npos) << e.what();
  }
}

TEST(NetworkStackTest, PinnedWorkersRunAndStopIsIdempotent) {
  auto conf = make_test_config({"ms.workers=3", "ms.cpus=0"});
  auto stack = NetworkStack::create(conf);
  EXPECT_EQ(stack->num_workers(), 3u);
  stack->start();
  for (unsigned i = 0; i < stack->num_workers(); ++i) {
    Worker& w = *stack->worker(i);
    int cpu = -1;
    bool on_thread = false;
    run_on(w, [&] {
      cpu = sched_getcpu();
      on_thread = w.center().in_thread();
    });
    EXPECT_EQ(cpu, 0) << "worker " << i;
    EXPECT_TRUE(on_thread);
  }
  stack->stop();
  stack->stop();
}

TEST(NetworkStackTest, LeastLoadedWorkerFollowsOpenSockets) {
  auto conf = make_test_config({"ms.workers=2"});
  auto stack = NetworkStack::create(conf);
  stack->worker(0)->open_sockets = 5;
  stack->worker(1)->open_sockets = 2;
  EXPECT_EQ(stack->least_loaded_worker(), stack->worker(1));
  stack->worker(1)->open_sockets = 9;
  EXPECT_EQ(stack->least_loaded_worker(), stack->worker(0));
  stack->worker(0)->open_sockets = 0;
  stack->worker(1)->open_sockets = 0;
}

TEST(NetworkStackTest, LeastLoadedWorkerTakesTiesInTurn) {
  // Sockets are counted once their worker opened them, so a burst of picks sees equal counts:
  // they must still spread over the workers.
  auto conf = make_test_config({"ms.workers=2"});
  auto stack = NetworkStack::create(conf);
  std::set<Worker*> picked;
  for (int i = 0; i < 2; ++i) picked.insert(stack->least_loaded_worker());
  EXPECT_EQ(picked.size(), 2u);
}

TEST(NetworkStackTest, UnknownTransportIsRejected) {
  auto conf = make_test_config();
  try {
    NetworkStack::create(conf, "carrier-pigeon");
    FAIL() << "an unknown transport was accepted";
  } catch (const std::runtime_error& e) {
    // The error names the bad value and every transport the build registered.
    EXPECT_STREQ(e.what(), "ms.type: unknown transport 'carrier-pigeon' (this build has posix, dpdk, rdma or rsocket)");
  }
}

TEST(NetworkStackTest, TransportRegistryFindsWhatWasRegistered) {
  TransportRegistry registry;
  EXPECT_EQ(registry.describe_names(), "none (this build has no transport)");
  EXPECT_EQ(registry.find("posix"), nullptr);
  register_compiled_transports(registry);
  EXPECT_NE(registry.find("posix"), nullptr);
  EXPECT_NE(registry.find("rsocket"), nullptr);
  EXPECT_EQ(registry.find("pos"), nullptr);
  EXPECT_THROW(registry.add("posix", registry.find("posix")), std::logic_error);
}

}  // namespace
}  // namespace bypass::testing
