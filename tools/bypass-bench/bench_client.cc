#include "tools/bypass-bench/bench_client.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>

#include "msgr/messenger.h"
#include "stack/network_stack.h"
#include "tools/bypass-bench/bench_job.h"
#include "tools/bypass-bench/case_result.h"
#include "tools/bypass-bench/dpdk_link.h"
#include "tools/bypass-bench/load_generator.h"
#include "tools/bypass-bench/progress_line.h"
#include "tools/bypass-bench/subcommand_flags.h"

namespace bypass::bench {

namespace {

constexpr auto kStatsTimeout = std::chrono::seconds(10);
constexpr auto kDrainTimeout = std::chrono::seconds(10);
// A count-limited case gives up when nothing completes for this long.
constexpr auto kStallTimeout = std::chrono::seconds(10);
// `run` hands over the server's address once the server is up (DPDK start-up included).
constexpr auto kServerAddressTimeout = std::chrono::seconds(90);
// ... and releases the client once the server has stopped.
constexpr auto kReleaseTimeout = std::chrono::seconds(60);

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double micros(uint64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1000.0; }

// The client's messengers on one stack, connected to the server.
class ClientSession {
 public:
  ClientSession(const config::Config& side, const BenchJob& job, LoadGenerator& generator)
      : side_(side), job_(job), generator_(generator) {
    stack_ = NetworkStack::create(side);
    const int messenger_count = job.messenger_per_thread ? job.connections : 1;
    for (int i = 0; i < messenger_count; ++i) {
      auto messenger = msgr::Messenger::create(side, msgr::EntityName{msgr::EntityType::Client, static_cast<int64_t>(i + 1)}, stack_);
      messenger->set_default_policy(msgr::Policy::lossless_client());
      messenger->add_dispatcher(&generator);
      if (messenger->start() != 0) throw std::runtime_error("client: a messenger did not start");
      view_.push_back(messenger.get());
      messengers_.push_back(std::move(messenger));
    }
  }

  // Opens bench.connections sessions to `server` ("IP:PORT", already checked) and waits until
  // each is established.
  void connect(const std::string& server) {
    msgr::EntityAddr addr;
    msgr::EntityAddr::parse("v2:" + server, &addr);
    msgr::EntityAddrVec addrs;
    addrs.addrs.push_back(addr);
    std::vector<msgr::ConnectionRef> connections;
    for (int i = 0; i < job_.connections; ++i) {
      connections.push_back(messengers_[static_cast<size_t>(i) % messengers_.size()]->connect_to(msgr::EntityType::Osd, addrs));
      generator_.add_connection(connections.back());
    }
    const auto timeout = side_.get_duration("ms.connect_timeout") + std::chrono::seconds(1);
    const auto deadline = Clock::now() + timeout;
    for (const auto& connection : connections) {
      while (!connection->is_connected()) {
        if (Clock::now() > deadline || generator_.errors() > 0)
          throw std::runtime_error("client: cannot reach the server at " + server + " (" + side_.get_string("ms.type") +
                                   (generator_.errors() ? ": " + generator_.first_error()
                                                        : ", no session within " + config::format_duration(timeout)) +
                                   ")");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  }

  ~ClientSession() { stop(); }

  // Closes the sessions and stops the workers; the stack (and a DPDK port) stays open until
  // this object goes. Idempotent.
  void stop() {
    for (auto& messenger : messengers_) messenger->shutdown();
    for (auto& messenger : messengers_) messenger->wait();
    messengers_.clear();
    view_.clear();
    if (stack_) stack_->stop();
  }

  ProcessSnapshot snapshot() { return ProcessSnapshot::take(*stack_, view_); }

 private:
  const config::Config& side_;
  const BenchJob& job_;
  LoadGenerator& generator_;
  std::shared_ptr<NetworkStack> stack_;
  std::vector<std::unique_ptr<msgr::Messenger>> messengers_;
  std::vector<const msgr::Messenger*> view_;
};

// One "IP:PORT" line from stdin (see ClientFlags::address_from_stdin).
std::string read_server_address(std::chrono::seconds timeout) {
  std::string line;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    pollfd pfd{STDIN_FILENO, POLLIN, 0};
    const int ready = poll(&pfd, 1, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char c = 0;
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n <= 0) break;
    if (c == '\n') break;
    line += c;
    if (line.size() > 200) break;
  }
  SocketAddress parsed;
  if (!SocketAddress::parse(line, &parsed) || parsed.port() == 0)
    throw std::runtime_error("client: --server-address-from stdin: expected one line IPv4:PORT or [IPv6]:PORT within " +
                             config::format_duration(timeout) + ", got '" + line + "'");
  return line;
}

void wait_for_stdin_eof(std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    pollfd pfd{STDIN_FILENO, POLLIN, 0};
    const int ready = poll(&pfd, 1, 100);
    if (ready < 0 && errno != EINTR) return;
    if (ready <= 0) continue;
    char sink[64];
    if (::read(STDIN_FILENO, sink, sizeof(sink)) <= 0) return;
  }
}

CaseResult run_case(const BenchJob& job, const BenchCase& bench_case, LoadGenerator& generator,
                    ClientSession& session, ProgressLine& progress) {
  CaseResult result;
  result.bench_case = bench_case;
  result.mode = job.mode;
  result.connections = job.connections;
  result.messenger_per_thread = job.messenger_per_thread;
  result.warmup_seconds = std::chrono::duration<double>(job.warmup).count();
  const uint64_t errors_before = generator.errors();

  generator.start_case(bench_case.message_size, bench_case.iodepth);
  std::this_thread::sleep_for(job.warmup);
  const ProcessSnapshot server_before = ProcessSnapshot::parse(generator.request_server_stats(kStatsTimeout));
  const ProcessSnapshot client_before = session.snapshot();

  generator.begin_measuring(job.count);
  const Clock::time_point start = Clock::now();
  const double planned = job.count > 0 ? 0.0 : std::chrono::duration<double>(job.duration).count();
  Clock::time_point sample_start = start;
  Clock::time_point end;
  Clock::time_point last_progress = start;
  for (int second = 1;; ++second) {
    const Clock::time_point tick = start + std::chrono::seconds(second);
    const Clock::time_point stop = job.count > 0 ? tick : std::min(tick, start + job.duration);
    bool done = false;
    while (Clock::now() < stop) {
      if (job.count > 0 && generator.count_reached(&end)) {
        done = true;
        break;
      }
      std::this_thread::sleep_for(job.count > 0 ? std::chrono::milliseconds(5) : std::min<Clock::duration>(stop - Clock::now(), std::chrono::milliseconds(100)));
    }
    if (!done && job.count == 0 && Clock::now() >= start + job.duration) {
      done = true;
      end = Clock::now();
    }
    const Clock::time_point sample_end = done ? end : Clock::now();
    if (done) generator.stop_measuring();  // completions after `end` are not this case's
    Interval interval = generator.collect();
    const double dt = seconds_between(sample_start, sample_end);
    result.messages += interval.messages;
    result.bytes += interval.bytes;
    result.latency_ns.merge(interval.latency_ns);
    if (interval.messages > 0) last_progress = sample_end;
    if (dt > 0.05) {
      result.samples.push_back(ResultSample{seconds_between(start, sample_end), static_cast<double>(interval.messages) / dt,
                                static_cast<double>(interval.bytes) / dt / 1e6, micros(interval.latency_ns.percentile(50)),
                                micros(interval.latency_ns.percentile(99))});
      progress.update(bench_case.name(), seconds_between(start, sample_end), planned, result.samples.back().messages_per_second,
                      result.samples.back().megabytes_per_second, micros(result.latency_ns.percentile(50)),
                      micros(result.latency_ns.percentile(99)));
    }
    sample_start = sample_end;
    if (done) break;
    if (sample_end - last_progress > kStallTimeout) {
      progress.finish();
      throw std::runtime_error(bench_case.name() + ": no message completed for " + config::format_duration(kStallTimeout) +
                               (generator.errors() ? " (" + generator.first_error() + ")" : ""));
    }
  }
  progress.finish();
  result.seconds = seconds_between(start, end);
  if (!generator.finish_case(kDrainTimeout))
    throw std::runtime_error(bench_case.name() + ": messages still in flight " + config::format_duration(kDrainTimeout) +
                             " after the case ended" + (generator.errors() ? " (" + generator.first_error() + ")" : ""));
  result.client = session.snapshot().since(client_before);
  result.server = ProcessSnapshot::parse(generator.request_server_stats(kStatsTimeout)).since(server_before);
  result.errors = generator.errors() - errors_before;
  return result;
}

}  // namespace

ClientFlags parse_client_flags(const std::vector<std::string>& args) {
  ClientFlags flags;
  const auto known = [](const std::string& flag) {
    return flag == "--result-file" || flag == "--server-address-from";
  };
  for (const auto& [flag, value] : split_valued_flags(args, "client", known, "bypass-bench client --help")) {
    if (flag == "--result-file") {
      flags.result_file = value;
    } else if (value == "stdin") {
      flags.address_from_stdin = true;
    } else {
      throw config::ConfigError("client: --server-address-from: '" + value + "' is not 'stdin'");
    }
  }
  return flags;
}

int run_bench_client(const config::Config& conf, const std::string& job_name, const ClientFlags& flags,
                     std::ostream& out) {
  const std::string started = iso8601_utc_now();
  const BenchJob job = BenchJob::from_config(conf);
  const std::string transport = job.single_transport(conf, "client");
  if (job.server_address.empty() && !flags.address_from_stdin)
    throw config::ConfigError(conf.origin("bench.server_address") +
                              ": bench.server_address: the client needs the server's IP:port (the server prints it as "
                              "'ready IP:PORT'; `bypass-bench run` fills it in)");
  const config::Config side = side_config(conf, Side::Client, transport);
  // Opened before the run so a bad path fails in a second, not after the whole benchmark.
  std::ofstream json;
  if (!job.output_path.empty()) {
    json.open(job.output_path);
    if (!json) throw config::ConfigError("bench.output: cannot write '" + job.output_path + "': " + std::strerror(errno));
  }

  LoadGenerator generator(job.mode, job.think_time);
  ClientSession session(side, job, generator);
  session.connect(flags.address_from_stdin ? read_server_address(kServerAddressTimeout) : job.server_address);
  std::vector<CaseResult> results;
  {
    ProgressLine progress(job.progress, out);
    for (const BenchCase& bench_case : job.cases_for(transport))
      results.push_back(run_case(job, bench_case, generator, session, progress));
  }
  session.stop();  // no polling from here on: the peer may close its port (see below)
  std::vector<ResultCase> cases;
  uint64_t errors = 0;
  const LinkDescription link = describe_link(side);
  for (const CaseResult& result : results) {
    cases.push_back(result.to_result_case());
    cases.back().link = link.name;
    cases.back().link_copies_per_round_trip = link.copies_per_round_trip;
    errors += result.errors;
  }
  if (flags.result_file.empty()) print_case_table(cases, out);
  const std::string document = result_file_json(make_result_file(job_name, started, conf, std::move(cases)));
  if (json.is_open()) {
    json << document;
    json.close();
    if (!json) throw std::runtime_error("bench.output: writing '" + job.output_path + "' failed");
  }
  if (!flags.result_file.empty()) {
    const std::string staging = flags.result_file + ".partial";
    std::ofstream copy(staging);
    copy << document;
    copy.close();
    if (!copy || std::rename(staging.c_str(), flags.result_file.c_str()) != 0)
      throw std::runtime_error("--result-file: writing '" + flags.result_file + "' failed: " + std::strerror(errno));
  }
  // Under `run` the port stays open until the server has gone: DPDK 22.11's memif unmaps its
  // rings when the peer disconnects, which a process still polling them may not survive, so
  // `run` stops the server first and then closes our stdin.
  if (flags.address_from_stdin) wait_for_stdin_eof(kReleaseTimeout);
  return errors == 0 ? 0 : 1;
}

const char* bench_client_usage() {
  return "usage: bypass-bench [-c JOB.yaml] [--set key=value]... client\n"
         "\n"
         "Runs the job's cases for one transport against a running `bypass-bench server`\n"
         "(bench.server_address = the IP:PORT it printed): for each message size and queue depth,\n"
         "bench.warmup of traffic, then bench.duration (or bench.count messages) measured, with\n"
         "progress each second; then a table, and JSON to bench.output when set. The client side's\n"
         "settings are bench.client.<transport> and bench.client.cpus.\n"
         "  --server-address-from stdin   read the server's IP:PORT from stdin once the stack is up\n"
         "  --result-file FILE            also write the result file there, then wait for stdin EOF (run)\n";
}

}  // namespace bypass::bench
