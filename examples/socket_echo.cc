// An echo over Bypass's socket interface (NetworkStack / Worker / ConnectedSocket), without the
// messenger: one worker listens and echoes, another (or the same, with one worker) connects,
// sends BYTES and checks they come back unchanged. Everything runs in callbacks on the workers'
// event loops; main() only sets up, waits and tears down. The transport is ms.type: posix, or dpdk
// (e.g. a looped net_ring: the stack talks to itself).
//
//   socket_echo [--set KEY=VALUE]... IP:PORT [BYTES]      e.g. 127.0.0.1:0 1M
#include <bypass/config/config.h>
#include <bypass/stack/network_stack.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>

#include "example_args.h"

namespace {

using namespace bypass;

// One end of the echo: a connected socket plus the bytes still to send; lives on one worker.
struct Peer {
  Worker* worker = nullptr;
  ConnectedSocket socket;
  BufferList pending;  // accepted by us, not yet by the transport
  bool want_writable = false;

  // Sends what is pending; waits for writability when the transport takes less than all of it.
  void flush() {
    while (pending.length() > 0) {
      const ssize_t n = socket.send(pending, false);
      if (n == -EAGAIN || n == 0) break;
      if (n < 0) return;  // the reader sees the error too
    }
    const bool more = pending.length() > 0;
    if (more && !want_writable) worker->center().create_file_event(socket.fd(), kEventWritable, [this](int, int) { flush(); });
    if (!more && want_writable) worker->center().delete_file_event(socket.fd(), kEventWritable);
    want_writable = more;
  }
  void close() {
    if (!socket) return;
    worker->center().delete_file_event(socket.fd(), kEventReadable | kEventWritable);
    socket.close();
  }
};

std::string pattern(size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 131 + (i >> 10));
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  config::Config conf;
  const std::vector<std::string> args = example::load_options(argc, argv, conf);
  SocketAddress addr;
  if (args.empty() || args.size() > 2 || !SocketAddress::parse(args[0], &addr)) {
    std::fprintf(stderr, "usage: %s [--set KEY=VALUE]... IP:PORT [BYTES]\n", argv[0]);
    return 2;
  }
  size_t total = 1 << 20;
  try {
    if (args.size() > 1) total = config::parse_size(args[1]);
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  }
  const std::string sent = pattern(total);

  std::shared_ptr<NetworkStack> stack;
  try {
    stack = NetworkStack::create(conf);
    stack->start();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  Peer server, client;
  server.worker = stack->worker(0);
  client.worker = stack->worker(stack->num_workers() - 1);
  ServerSocket listener;
  std::string received;
  std::promise<std::string> outcome;  // "" when the echo came back whole, else what went wrong
  bool decided = false;               // client worker only
  auto finish = [&](std::string error) {
    if (!decided) outcome.set_value(std::move(error));
    decided = true;
  };

  // The listener: only worker 0 accepts (reuse_port off), and echoes what it reads.
  int rc = 0;
  server.worker->center().submit_and_wait([&] {
    ListenOptions lopts;
    lopts.reuse_port = false;
    rc = server.worker->listen(addr, lopts, SocketOptions{}, &listener);
    if (rc < 0) return;
    addr = listener.local_address();
    server.worker->center().create_file_event(listener.fd(), kEventReadable, [&](int, int) {
      SocketAddress from;
      if (server.socket || listener.accept(&server.socket, SocketOptions{}, &from, server.worker) < 0) return;
      server.worker->center().create_file_event(server.socket.fd(), kEventReadable, [&](int, int) {
        BufferList in;
        const ssize_t n = server.socket.zero_copy_read(in, 64 * 1024);
        if (n > 0) server.pending.append(std::move(in)), server.flush();  // the same segments go back out
        else if (n != -EAGAIN) server.close();
      });
    });
  });
  if (rc < 0) {
    std::fprintf(stderr, "%s: cannot listen on %s: %s\n", argv[0], args[0].c_str(), socket_error_name(rc));
    return 1;
  }
  std::printf("listening on %s (%s, %u workers)\n", addr.to_string().c_str(), stack->type().c_str(), stack->num_workers());

  // The client: connect, send everything once connected, compare what returns.
  const auto start = std::chrono::steady_clock::now();
  client.worker->center().submit_and_wait([&] {
    if (const int err = client.worker->connect(addr, SocketOptions{}, &client.socket); err < 0) {
      finish(std::string("connect: ") + socket_error_name(err));
      return;
    }
    client.want_writable = true;
    client.worker->center().create_file_event(client.socket.fd(), kEventWritable, [&](int, int) {
      if (client.pending.length() == 0 && received.empty()) {  // first writable: connected or failed
        const int state = client.socket.is_connected();
        if (state == 0) return;
        if (state < 0) return finish(std::string("connect: ") + socket_error_name(state));
        client.pending.append_copy(sent);
      }
      client.flush();
    });
    client.worker->center().create_file_event(client.socket.fd(), kEventReadable, [&](int, int) {
      char buf[65536];
      const ssize_t n = client.socket.read(buf, sizeof buf);
      if (n == -EAGAIN || decided) return;
      if (n <= 0) return finish("the connection ended after " + std::to_string(received.size()) + " bytes");
      received.append(buf, static_cast<size_t>(n));
      if (received.size() >= total) finish(received == sent ? "" : "the echo differs from what was sent");
    });
  });

  std::future<std::string> result = outcome.get_future();
  const bool finished = result.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  const std::string error = finished ? result.get() : "no complete echo within 30 s";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  client.worker->center().submit_and_wait([&] { client.close(); });
  server.worker->center().submit_and_wait([&] {
    server.close();
    server.worker->center().delete_file_event(listener.fd(), kEventReadable);
    listener.abort_accept();
  });
  stack->stop();
  if (!error.empty()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.c_str());
    return 1;
  }
  std::printf("echoed %zu bytes in %.3f s\n", total, seconds);
  return 0;
}
