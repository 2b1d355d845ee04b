#include "tools/bypass-bench/ceph_mon_rate.h"

#include <time.h>

#include <condition_variable>
#include <mutex>
#include <ostream>
#include <unordered_map>

#include "msgr/mon_get_version.h"
#include "tools/bypass-bench/latency_histogram.h"
#include "base/json.h"
#include "tools/bypass-bench/results_table.h"

namespace bypass::bench {

namespace {

using Clock = std::chrono::steady_clock;

// The map every request asks for: any would do; the osdmap is the one clients poll most.
const char* const kWhat = "osdmap";

double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double to_seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Keeps requests in flight: each reply (fast-dispatched on the connection's worker) is timed and
// answered with the next request. The main thread flips the phases and takes the
// per-second samples, all under one lock, which a reply holds only for a few map operations.
class RequestPump : public msgr::Dispatcher {
 public:
  explicit RequestPump(uint64_t count_limit) : count_limit_(count_limit) {}

  bool ms_can_fast_dispatch(const msgr::Message& m) const override {
    return m.type() == msgr::kMsgMonGetVersionReply;
  }
  void ms_fast_dispatch(const msgr::MessageRef& m) override { ms_dispatch(m); }
  bool ms_dispatch(const msgr::MessageRef& m) override {
    auto reply = std::dynamic_pointer_cast<msgr::MonGetVersionReply>(m);
    if (!reply) return false;
    const Clock::time_point now = Clock::now();
    bool send_next = false;
    {
      std::lock_guard<std::mutex> guard(lock_);
      last_reply_ = now;
      ++replies_;
      const auto sent = in_flight_.find(reply->handle);
      if (sent == in_flight_.end()) {
        // Not a handle we sent (or one answered twice): the monitor got the protocol wrong.
        if (measuring_) ++errors_;
      } else {
        const uint64_t latency_ns =
            static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent->second).count());
        in_flight_.erase(sent);
        if (measuring_) {
          total_.record(latency_ns);
          interval_.record(latency_ns);
          ++measured_;
          if (count_limit_ != 0 && measured_ >= count_limit_) stop_locked();
        }
      }
      send_next = issuing_;
    }
    if (send_next) send_request();
    changed_.notify_all();
    return true;
  }
  bool ms_handle_refused(const msgr::ConnectionRef&) override {
    fail("connection refused");
    return true;
  }
  bool ms_handle_reset(const msgr::ConnectionRef&) override {
    fail("connection dropped");
    return true;
  }

  // Sends the first request on `connection`: the msgr2 handshake happens under it.
  void start(msgr::ConnectionRef connection) {
    {
      std::lock_guard<std::mutex> guard(lock_);
      connection_ = std::move(connection);
      last_reply_ = Clock::now();
    }
    send_request();
  }
  // Puts `n` more requests in flight (each reply is answered with a new request).
  void add_in_flight(uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) send_request();
  }
  // Every reply so far, measured or not.
  uint64_t replies() {
    std::lock_guard<std::mutex> guard(lock_);
    return replies_;
  }

  // Starts measuring: replies from now on count (the warm-up ends).
  void begin_measuring() {
    std::lock_guard<std::mutex> guard(lock_);
    measuring_ = true;
    total_.reset();
    interval_.reset();
  }
  // Stops issuing and measuring (a duration run's end, or a failure).
  void stop() {
    std::lock_guard<std::mutex> guard(lock_);
    stop_locked();
  }

  // Waits up to `for_at_most` for a change worth waking for: the count reached or a failure.
  void wait(Clock::duration for_at_most) {
    std::unique_lock<std::mutex> guard(lock_);
    changed_.wait_for(guard, for_at_most, [&] { return !failure_.empty() || (count_limit_ && !issuing_); });
  }

  struct Interval {
    uint64_t replies;
    double p50_us;
    double p99_us;
  };
  // The replies measured since the last call, and their median and p99; starts a new interval.
  Interval take_interval() {
    std::lock_guard<std::mutex> guard(lock_);
    Interval out{interval_.count(), static_cast<double>(interval_.percentile(50)) / 1e3,
                 static_cast<double>(interval_.percentile(99)) / 1e3};
    interval_.reset();
    return out;
  }

  std::string failure() {
    std::lock_guard<std::mutex> guard(lock_);
    return failure_;
  }
  bool finished() {
    std::lock_guard<std::mutex> guard(lock_);
    return !issuing_;
  }
  // True when requests are outstanding and none was answered for `timeout`.
  bool stalled(Clock::time_point now, Clock::duration timeout) {
    std::lock_guard<std::mutex> guard(lock_);
    return !in_flight_.empty() && now - last_reply_ > timeout;
  }
  // After stop(): the totals (safe: no reply records any more).
  const LatencyHistogram& total() const { return total_; }
  uint64_t measured() const { return measured_; }
  uint64_t errors() const { return errors_; }

 private:
  void stop_locked() {
    issuing_ = false;
    measuring_ = false;
  }
  void fail(const std::string& why) {
    std::lock_guard<std::mutex> guard(lock_);
    if (failure_.empty() && issuing_) failure_ = why;  // a drop after the run is the shutdown
    stop_locked();
    changed_.notify_all();
  }
  void send_request() {
    msgr::ConnectionRef connection;
    uint64_t handle;
    {
      std::lock_guard<std::mutex> guard(lock_);
      handle = next_handle_++;
      in_flight_[handle] = Clock::now();
      connection = connection_;
    }
    connection->send_message(std::make_shared<msgr::MonGetVersion>(handle, kWhat));
  }

  const uint64_t count_limit_;  // 0: a duration run
  std::mutex lock_;
  std::condition_variable changed_;
  msgr::ConnectionRef connection_;
  std::unordered_map<uint64_t, Clock::time_point> in_flight_;  // handle -> sent at
  uint64_t next_handle_ = 1;
  Clock::time_point last_reply_;
  bool issuing_ = true;
  bool measuring_ = false;
  LatencyHistogram total_;
  LatencyHistogram interval_;
  uint64_t replies_ = 0;
  uint64_t measured_ = 0;
  uint64_t errors_ = 0;
  std::string failure_;
};

// The bytes of one request's front segment (its whole payload), the case's message size.
uint64_t request_size() {
  msgr::MonGetVersion request(1, kWhat);
  request.encode_payload(0);
  return request.front().length();
}

void fill_latency(const LatencyHistogram& h, ResultLatency& out) {
  const auto us = [&](double p) { return static_cast<double>(h.percentile(p)) / 1e3; };
  out.p50 = us(50);
  out.p90 = us(90);
  out.p99 = us(99);
  out.p999 = us(99.9);
  out.max = static_cast<double>(h.max()) / 1e3;
  out.mean = h.mean() / 1e3;
  for (const auto& [ns, fraction] : h.cdf_points(200)) out.cdf.emplace_back(ns / 1e3, fraction);
}

}  // namespace

MonRateRun run_mon_rate(const config::Config& conf, const msgr::EntityAddr& mon, const MonRateOptions& options,
                        std::chrono::milliseconds timeout, std::ostream& progress) {
  MonRateRun run;
  const std::string where = "monitor " + mon.to_string();
  RequestPump pump(options.count);
  msgr::MonClient client = msgr::connect_mon_client(conf, mon, pump);
  if (!client.messenger) {
    run.error = client.error;
    return run;
  }
  const bool by_duration = options.count == 0;
  Clock::time_point measured_at{};
  Clock::time_point measure_until{};
  Clock::time_point interval_start{};
  double cpu_at_start = 0;
  bool measuring = false;
  auto begin_measuring = [&](Clock::time_point now) {
    pump.begin_measuring();
    measuring = true;
    measured_at = interval_start = now;
    measure_until = now + options.duration;
    cpu_at_start = process_cpu_seconds();
  };
  // One request first: it waits out the session's handshake, which is no part of the request
  // rate. Its reply brings the queue to `depth` and starts the warm-up.
  pump.start(client.connection);
  bool session_up = false;
  Clock::time_point measure_from{};
  ResultCase& result = run.result;
  auto take_sample = [&](Clock::time_point now) {
    const RequestPump::Interval interval = pump.take_interval();
    const double seconds = to_seconds(now - interval_start);
    interval_start = now;
    ResultSample sample;
    sample.t = to_seconds(now - measured_at);
    sample.messages_per_second = static_cast<double>(interval.replies) / seconds;
    sample.p50_us = interval.p50_us;
    sample.p99_us = interval.p99_us;
    result.samples.push_back(sample);
    progress << format_fixed(sample.t, 1) << " s  " << format_fixed(sample.messages_per_second, 1)
             << " requests/s  p50 " << format_fixed(sample.p50_us, 1) << " us  p99 " << format_fixed(sample.p99_us, 1)
             << " us\n"
             << std::flush;
  };

  // Bounded: a duration run ends at measure_until, a count run when the count is reached, and
  // either one as soon as the monitor stays silent for `timeout` or the session fails.
  while (true) {
    pump.wait(std::chrono::milliseconds(50));
    const Clock::time_point now = Clock::now();
    if (const std::string failure = pump.failure(); !failure.empty()) {
      run.error = where + ": " + failure;
      break;
    }
    if (pump.stalled(now, timeout)) {
      run.error = where + " did not answer within " + config::format_duration(timeout);
      break;
    }
    if (!session_up && pump.replies() > 0) {
      session_up = true;
      measure_from = now + options.warmup;
      pump.add_in_flight(options.depth - 1);
    }
    if (session_up && !measuring && now >= measure_from) begin_measuring(now);
    if (measuring && by_duration && now >= measure_until) pump.stop();
    // A failure also stops the pump: only a stop with no failure (checked again, as one may have
    // landed since the check above) is the end of the run.
    if (pump.finished() && pump.failure().empty()) {
      if (!measuring) {  // cannot happen (only the count or the clock stop it), but never spin
        run.error = where + ": the run stopped before its measurement began";
        break;
      }
      result.seconds = to_seconds(now - measured_at);
      result.client_cpu_seconds = process_cpu_seconds() - cpu_at_start;
      // The last partial second, unless it is too short to say anything.
      if (now - interval_start >= std::chrono::milliseconds(200)) take_sample(now);
      run.ok = true;
      break;
    }
    if (measuring && now - interval_start >= std::chrono::seconds(1)) take_sample(now);
  }
  pump.stop();
  const std::string counters = client.messenger->perf_dump_json();
  client.messenger->shutdown();
  client.messenger->wait();
  if (!run.ok) return run;
  if (pump.measured() == 0) {
    run.ok = false;
    run.error = where + " answered no request in the measured time";
    return run;
  }

  result.transport = conf.get_string("ms.type");
  result.mode = "reqrep";
  result.message_size = request_size();
  result.connections = 1;
  result.iodepth = options.depth;
  result.messengers = "shared";
  result.name = "ceph-mon " + result.transport + " d" + std::to_string(options.depth);
  result.warmup_seconds = to_seconds(options.warmup);
  result.messages = pump.measured();
  result.bytes = result.messages * result.message_size;
  result.messages_per_second = static_cast<double>(result.messages) / result.seconds;
  result.megabytes_per_second = static_cast<double>(result.bytes) / 1e6 / result.seconds;
  result.errors = pump.errors();
  fill_latency(pump.total(), result.latency_us);
  Json counters_json;
  counters_json.begin_object().key("client").begin_object().key("msgr").raw(counters);
  result.counters_json = counters_json.end_object().end_object().str();
  return run;
}

void print_mon_rate(const ResultCase& result, std::ostream& out) {
  ResultsTable table({"requests", "seconds", "requests/s", "p50 us", "p90 us", "p99 us", "p99.9 us", "max us",
                      "CPU us/request", "errors"});
  const double cpu_per_request =
      result.messages ? result.client_cpu_seconds * 1e6 / static_cast<double>(result.messages) : 0.0;
  table.add_row({std::to_string(result.messages), format_fixed(result.seconds, 2),
                 format_fixed(result.messages_per_second, 1), format_fixed(result.latency_us.p50, 1),
                 format_fixed(result.latency_us.p90, 1), format_fixed(result.latency_us.p99, 1),
                 format_fixed(result.latency_us.p999, 1), format_fixed(result.latency_us.max, 1),
                 format_fixed(cpu_per_request, 2), std::to_string(result.errors)});
  table.print(out);
}

}  // namespace bypass::bench
