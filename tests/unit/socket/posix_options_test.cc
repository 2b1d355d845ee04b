// posix only: SocketOptions reach the kernel socket (the fd is a real kernel fd there).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "tests/unit/socket/socket_test_harness.h"

namespace bypass::testing {
namespace {

int int_option(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof(value);
  EXPECT_EQ(getsockopt(fd, level, name, &value, &len), 0);
  return value;
}

TEST(PosixSocketOptionsTest, ConnectAppliesEveryOption) {
  auto conf = make_test_config({"ms.workers=1"});
  if (conf.get_string("ms.type") != "posix") GTEST_SKIP() << "kernel socket options: posix only";
  auto stack = NetworkStack::create(conf);
  stack->start();
  Worker& w = *stack->worker(0);
  SocketOptions opts;
  opts.nodelay = true;
  opts.rcvbuf_bytes = 96 * 1024;
  opts.sndbuf_bytes = 80 * 1024;
  opts.priority = 3;
  run_on(w, [&] {
    ServerSocket server;
    ASSERT_EQ(w.listen(SocketAddress::ipv4(INADDR_LOOPBACK, 0), ListenOptions{}, SocketOptions{}, &server), 0);
    ConnectedSocket sock;
    ASSERT_EQ(w.connect(server.local_address(), opts, &sock), 0);
    EXPECT_EQ(w.open_sockets.load(), 2);
    const int fd = sock.fd();
    EXPECT_NE(int_option(fd, IPPROTO_TCP, TCP_NODELAY), 0);
    EXPECT_EQ(int_option(fd, SOL_SOCKET, SO_PRIORITY), 3);
    // Linux doubles the requested buffer sizes for bookkeeping overhead (socket(7)).
    EXPECT_EQ(int_option(fd, SOL_SOCKET, SO_RCVBUF), 2 * 96 * 1024);
    EXPECT_EQ(int_option(fd, SOL_SOCKET, SO_SNDBUF), 2 * 80 * 1024);
    EXPECT_NE(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    sock.close();
    server.abort_accept();
    EXPECT_EQ(w.open_sockets.load(), 0);
  });
  stack->stop();
}

TEST(PosixSocketOptionsTest, ConfigMapsOntoSocketAndListenOptions) {
  auto conf = make_test_config({"ms.tcp_nodelay=false", "ms.tcp_rcvbuf=1M", "ms.tcp_sndbuf=512K",
                                "ms.connect_timeout=250ms", "ms.listen_backlog=77",
                                "posix.reuse_port=false"});
  const SocketOptions s = socket_options_from_config(conf);
  EXPECT_FALSE(s.nodelay);
  EXPECT_EQ(s.rcvbuf_bytes, 1 << 20);
  EXPECT_EQ(s.sndbuf_bytes, 512 << 10);
  EXPECT_EQ(s.connect_timeout, std::chrono::milliseconds(250));
  const ListenOptions l = listen_options_from_config(conf);
  EXPECT_EQ(l.backlog, 77);
  EXPECT_FALSE(l.reuse_port);
}

}  // namespace
}  // namespace bypass::testing
