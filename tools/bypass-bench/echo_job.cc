#include "tools/bypass-bench/echo_job.h"

#include <arpa/inet.h>
#include <sys/resource.h>

#include <cstring>
#include <iomanip>
#include <stdexcept>
#include <thread>

#include "base/json.h"
#include "base/log.h"
#include "tools/bypass-bench/process_snapshot.h"
#include "tools/bypass-bench/results_table.h"

namespace bypass::bench {

namespace {

double micros(uint64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1000.0; }

}  // namespace

EchoJob::EchoJob(const config::Config& conf, EchoJobOptions options)
    : conf_(conf), options_(std::move(options)), socket_options_(socket_options_from_config(conf)) {}

EchoJob::~EchoJob() { teardown(); }

void EchoJob::start_server() {
  const ListenOptions lopts = listen_options_from_config(conf_);
  listeners_.resize(server_stack_->num_workers());
  const unsigned count = server_stack_->listen_per_worker() ? server_stack_->num_workers() : 1;
  SocketAddress addr = options_.listen_address;
  for (unsigned i = 0; i < count; ++i) {
    Worker& w = *server_stack_->worker(i);
    int rc = 0;
    w.center().submit_and_wait([&] {
      rc = w.listen(addr, lopts, socket_options_, &listeners_[i]);
      if (rc != 0) return;
      w.center().create_file_event(listeners_[i].fd(), kEventReadable,
                                   [this, &w](int, int) { accept_ready(w); });
      if (i == 0) addr = listeners_[0].local_address();  // port 0: the others share this port
    });
    if (rc != 0) {
      throw std::runtime_error("listen on " + addr.to_string() + ": " + socket_error_name(rc));
    }
  }
  server_address_ = addr;
  // A wildcard listener is reached on loopback of its family.
  if (addr.is_ipv4() && addr.ipv4_host_order() == INADDR_ANY) {
    server_address_ = SocketAddress::ipv4(INADDR_LOOPBACK, addr.port());
  } else if (addr.family() == AF_INET6 &&
             IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(addr.sockaddr_ptr())->sin6_addr)) {
    SocketAddress::parse("[::1]:" + std::to_string(addr.port()), &server_address_);
  }
}

void EchoJob::accept_ready(Worker& w) {
  ServerSocket& listener = listeners_[w.id()];
  for (int i = 0; i < 64 && listener; ++i) {
    Worker* target = server_stack_->listen_per_worker() ? &w : server_stack_->least_loaded_worker();
    ConnectedSocket socket;
    const int rc = listener.accept(&socket, socket_options_, nullptr, target);
    if (rc == -EAGAIN) return;
    if (rc < 0) {
      BYPASS_LOG(Warn, "bench", "accept: %s", socket_error_name(rc));
      return;
    }
    auto install = [this, target](ConnectedSocket s) {
      server_connections_->add(*target, std::make_unique<EchoServerConnection>(*target, std::move(s)));
    };
    if (target == &w) {
      install(std::move(socket));
    } else {
      auto moved = std::make_shared<ConnectedSocket>(std::move(socket));
      target->center().dispatch_external([install, moved] { install(std::move(*moved)); });
    }
  }
}

void EchoJob::connect_clients() {
  clients_.resize(client_stack_->num_workers());
  for (int i = 0; i < options_.connections; ++i) {
    Worker& w = *client_stack_->worker(static_cast<unsigned>(i) % client_stack_->num_workers());
    w.center().submit_and_wait([&] {
      auto connection = std::make_unique<PingPongConnection>(w, shared_);
      PingPongConnection* raw = connection.get();
      client_connections_->add(w, std::move(connection));
      clients_[w.id()].push_back(raw);
      raw->connect(server_address_, socket_options_);
    });
  }
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(socket_options_.connect_timeout) +
                    std::chrono::seconds(2);
  int first_error = 0;
  const int connected = shared_.wait_connected(options_.connections, wait, &first_error);
  if (connected < options_.connections) {
    throw std::runtime_error("connect to " + server_address_.to_string() + ": " +
                             std::to_string(connected) + " of " + std::to_string(options_.connections) +
                             " connections established" +
                             (first_error ? std::string(" (") + socket_error_name(first_error) + ")" : ""));
  }
}

uint64_t EchoJob::messages_so_far() const {
  uint64_t total = 0;
  for (const auto& s : shared_.stats) total += s->messages.load(std::memory_order_relaxed);
  return total;
}

EchoResults EchoJob::run(std::ostream& progress) {
  server_stack_ = NetworkStack::create(conf_);
  client_stack_ = NetworkStack::create(conf_);
  server_connections_ = std::make_unique<ConnectionSet>(*server_stack_);
  client_connections_ = std::make_unique<ConnectionSet>(*client_stack_);
  // Every connection's worker sends views of it at once: counted across threads.
  shared_.payload = BufferSegment::allocate(options_.message_size, BufferSharing::across_threads);
  for (size_t i = 0; i < options_.message_size; ++i) shared_.payload.data()[i] = static_cast<char>(i * 131 + 7);
  shared_.depth = options_.depth;
  for (unsigned i = 0; i < client_stack_->num_workers(); ++i) {
    shared_.stats.push_back(std::make_unique<ClientWorkerStats>());
  }
  server_stack_->start();
  client_stack_->start();
  running_ = true;
  start_server();
  connect_clients();

  EchoResults results;
  results.options = options_;
  results.transport = client_stack_->type();
  results.workers_per_side = client_stack_->num_workers();
  results.server_address = server_address_.to_string();

  const std::vector<double> client_cpu0 = worker_cpu_seconds(*client_stack_);
  const std::vector<double> server_cpu0 = worker_cpu_seconds(*server_stack_);
  const double process_cpu0 = rusage_seconds(RUSAGE_SELF);
  shared_.measuring.store(true);
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 0; i < client_stack_->num_workers(); ++i) {
    client_stack_->worker(i)->center().dispatch_external([this, i] {
      for (PingPongConnection* c : clients_[i]) c->go();
    });
  }

  const auto end = start + options_.duration;
  auto tick = start;
  uint64_t last_messages = 0;
  while (true) {
    const auto previous_tick = tick;
    tick = std::min(tick + std::chrono::seconds(1), end);
    std::this_thread::sleep_until(tick);
    const uint64_t now_messages = messages_so_far();
    const double elapsed = std::chrono::duration<double>(tick - start).count();
    const double interval = std::chrono::duration<double>(tick - previous_tick).count();
    const double rate = interval > 0 ? static_cast<double>(now_messages - last_messages) / interval : 0;
    progress << "[" << std::fixed << std::setprecision(1) << std::setw(6) << elapsed << "s] "
             << std::setprecision(0) << std::setw(10) << rate << " msg/s  " << std::setprecision(1)
             << std::setw(9) << rate * static_cast<double>(options_.message_size) / 1e6 << " MB/s\n"
             << std::flush;
    last_messages = now_messages;
    if (tick >= end) break;
  }
  shared_.measuring.store(false);
  results.messages = messages_so_far();
  results.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  shared_.issuing.store(false);
  results.process_cpu_seconds = rusage_seconds(RUSAGE_SELF) - process_cpu0;
  results.client_worker_cpu = worker_cpu_seconds(*client_stack_);
  results.server_worker_cpu = worker_cpu_seconds(*server_stack_);
  for (size_t i = 0; i < client_cpu0.size(); ++i) results.client_worker_cpu[i] -= client_cpu0[i];
  for (size_t i = 0; i < server_cpu0.size(); ++i) results.server_worker_cpu[i] -= server_cpu0[i];
  for (unsigned i = 0; i < client_stack_->num_workers(); ++i) {
    client_stack_->worker(i)->center().submit_and_wait([&, i] {
      results.latency.merge(shared_.stats[i]->latency);
      results.errors += shared_.stats[i]->errors.load();
    });
  }
  teardown();
  return results;
}

void EchoJob::teardown() {
  // Connections and listeners are destroyed on their workers' threads, which needs the loops
  // running; when start-up failed half way there are none yet.
  if (running_) {
    client_connections_->clear();
    server_connections_->clear();
  }
  for (unsigned i = 0; running_ && i < listeners_.size(); ++i) {
    if (!listeners_[i]) continue;
    server_stack_->worker(i)->center().submit_and_wait([&, i] {
      server_stack_->worker(i)->center().delete_file_event(listeners_[i].fd(), kEventReadable);
      listeners_[i].abort_accept();
    });
  }
  clients_.clear();
  running_ = false;
  if (client_stack_) client_stack_->stop();
  if (server_stack_) server_stack_->stop();
}

void print_echo_results(const EchoResults& r, std::ostream& out) {
  out << "\necho on " << r.transport << " (" << r.workers_per_side << " workers per side), server "
      << r.server_address << ", " << r.options.connections << " connections x depth "
      << r.options.depth << ", " << r.options.message_size << "-byte messages, "
      << format_fixed(r.seconds, 2) << " s\n";
  ResultsTable table({"size", "conns", "depth", "msg/s", "MB/s", "p50 us", "p90 us", "p99 us",
                      "p99.9 us", "max us", "CPU s", "errors"});
  table.add_row({config::format_size(r.options.message_size), std::to_string(r.options.connections),
                 std::to_string(r.options.depth), format_fixed(r.messages_per_second(), 0),
                 format_fixed(r.megabytes_per_second(), 1), format_fixed(micros(r.latency.percentile(50)), 1),
                 format_fixed(micros(r.latency.percentile(90)), 1),
                 format_fixed(micros(r.latency.percentile(99)), 1),
                 format_fixed(micros(r.latency.percentile(99.9)), 1), format_fixed(micros(r.latency.max()), 1),
                 format_fixed(r.process_cpu_seconds, 2), std::to_string(r.errors)});
  table.print(out);
  ResultsTable cpu({"worker", "client CPU s", "server CPU s"});
  for (size_t i = 0; i < std::max(r.client_worker_cpu.size(), r.server_worker_cpu.size()); ++i) {
    cpu.add_row({std::to_string(i),
                 i < r.client_worker_cpu.size() ? format_fixed(r.client_worker_cpu[i], 2) : "",
                 i < r.server_worker_cpu.size() ? format_fixed(r.server_worker_cpu[i], 2) : ""});
  }
  out << '\n';
  cpu.print(out);
}

std::string echo_results_json(const EchoResults& r, const config::Config& conf) {
  auto list = [](Json& j, const std::vector<double>& values) {
    j.begin_array();
    for (double v : values) j.value(round_to(v, 3));
    j.end_array();
  };
  Json j;
  j.begin_object()
      .field("job", "echo")
      .field("transport", r.transport)
      .field("workers_per_side", r.workers_per_side)
      .field("server_address", r.server_address)
      .field("message_size", uint64_t{r.options.message_size})
      .field("connections", r.options.connections)
      .field("depth", r.options.depth)
      .field("seconds", round_to(r.seconds, 3))
      .field("messages", uint64_t{r.messages})
      .field("errors", uint64_t{r.errors})
      .field("messages_per_sec", round_to(r.messages_per_second(), 3))
      .field("mb_per_sec", round_to(r.megabytes_per_second(), 3));
  j.key("latency_us")
      .begin_object()
      .field("p50", round_to(micros(r.latency.percentile(50)), 3))
      .field("p90", round_to(micros(r.latency.percentile(90)), 3))
      .field("p99", round_to(micros(r.latency.percentile(99)), 3))
      .field("p99_9", round_to(micros(r.latency.percentile(99.9)), 3))
      .field("max", round_to(micros(r.latency.max()), 3))
      .field("min", round_to(micros(r.latency.min()), 3))
      .field("mean", round_to(r.latency.mean() / 1000.0, 3))
      .end_object();
  j.field("process_cpu_seconds", round_to(r.process_cpu_seconds, 3)).key("client_worker_cpu_seconds");
  list(j, r.client_worker_cpu);
  j.key("server_worker_cpu_seconds");
  list(j, r.server_worker_cpu);
  j.key("config").raw(conf.to_json());
  return j.end_object().str() + "\n";
}

}  // namespace bypass::bench
