#include "tools/bypass-bench/bench_result_file.h"

#include <gtest/gtest.h>

namespace bypass::bench {
namespace {

ResultFile sample_file() {
  ResultFile f;
  f.path = "in-memory";
  f.job = "jobs/\"quoted\" é.yaml";
  f.started = "2026-11-23T22:00:00Z";
  f.hostname = "host";
  f.cpus = 2;
  f.kernel = "6.1.0";
  f.config = {{"ms.type", "dpdk"}, {"dpdk.vdev", "[\"net_ring0\"]"}};
  ResultCase c;
  c.name = "dpdk 4KiB d2";
  c.transport = "dpdk";
  c.mode = "stream";
  c.message_size = 4096;
  c.connections = 2;
  c.iodepth = 2;
  c.messengers = "per-thread";
  c.link = "vhost-user";
  c.link_copies_per_round_trip = 2;
  c.warmup_seconds = 1;
  c.seconds = 10;
  c.messages = 123456;
  c.bytes = 123456ull * 4096;
  c.messages_per_second = 12345.6;
  c.megabytes_per_second = 50.567;
  c.errors = 1;
  c.latency_us = {73.5, 80.1, 107.8, 191.0, 812.0, 75.2, {{10.5, 0.001}, {73.5, 0.5}, {812.0, 1.0}}};
  c.samples = {{1, 12000, 49.1, 73, 100}, {2, 12600, 51.6, 74, 110}};
  c.client_cpu_seconds = 1.234567;
  c.client_worker_cpu_seconds = {0.9, 0.2};
  c.server_cpu_seconds = 1.1;
  c.server_worker_cpu_seconds = {0.8};
  c.counters_json = R"({"client":{"msgr":{"messages_sent":5}}})";
  f.cases = {c, c};
  f.cases[1].name = "no server cpu";
  f.cases[1].server_cpu_seconds.reset();
  f.cases[1].link = "net_tap";  // a job's own device: copies not known
  f.cases[1].link_copies_per_round_trip.reset();
  return f;
}

TEST(ResultFileTest, WhatIsWrittenReadsBackTheSame) {
  const ResultFile written = sample_file();
  const ResultFile read = parse_result_file(result_file_json(written), "round-trip");
  EXPECT_EQ(read.path, "round-trip");
  EXPECT_EQ(read.job, written.job);
  EXPECT_EQ(read.started, written.started);
  EXPECT_EQ(read.hostname, written.hostname);
  EXPECT_EQ(read.cpus, written.cpus);
  EXPECT_EQ(read.config, written.config);
  ASSERT_EQ(read.cases.size(), 2u);
  const ResultCase& a = written.cases[0];
  const ResultCase& b = read.cases[0];
  EXPECT_EQ(b.name, a.name);
  EXPECT_EQ(b.transport, a.transport);
  EXPECT_EQ(b.mode, a.mode);
  EXPECT_EQ(b.message_size, a.message_size);
  EXPECT_EQ(b.connections, a.connections);
  EXPECT_EQ(b.iodepth, a.iodepth);
  EXPECT_EQ(b.messengers, a.messengers);
  EXPECT_EQ(b.link, "vhost-user");
  EXPECT_EQ(b.link_copies_per_round_trip, std::optional<uint64_t>(2));
  EXPECT_EQ(read.cases[1].link, "net_tap");
  EXPECT_FALSE(read.cases[1].link_copies_per_round_trip.has_value());
  EXPECT_EQ(b.messages, a.messages);
  EXPECT_EQ(b.bytes, a.bytes);
  EXPECT_EQ(b.errors, a.errors);
  EXPECT_DOUBLE_EQ(b.messages_per_second, a.messages_per_second);
  EXPECT_DOUBLE_EQ(b.megabytes_per_second, a.megabytes_per_second);
  EXPECT_DOUBLE_EQ(b.latency_us.p999, a.latency_us.p999);
  EXPECT_EQ(b.latency_us.cdf, a.latency_us.cdf);
  ASSERT_EQ(b.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(b.samples[1].messages_per_second, 12600);
  EXPECT_DOUBLE_EQ(b.samples[1].p99_us, 110);
  EXPECT_DOUBLE_EQ(b.client_cpu_seconds, 1.234567);
  EXPECT_EQ(b.client_worker_cpu_seconds, a.client_worker_cpu_seconds);
  EXPECT_EQ(b.counters_json, a.counters_json);  // kept as written: `run` merges files through it
  ASSERT_TRUE(b.server_cpu_seconds.has_value());
  EXPECT_DOUBLE_EQ(*b.server_cpu_seconds, 1.1);
  EXPECT_FALSE(read.cases[1].server_cpu_seconds.has_value());
}

std::string load_error(const std::string& text) {
  try {
    parse_result_file(text, "f.json");
  } catch (const ResultFileError& e) {
    return e.what();
  }
  return "";
}

TEST(ResultFileTest, EveryProblemNamesFileAndField) {
  std::string good = result_file_json(sample_file());
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  EXPECT_EQ(load_error("[]"), "f.json: top level: is an array, expected an object");
  EXPECT_EQ(load_error("{}"), "f.json: schema: missing");
  EXPECT_EQ(load_error(replaced("\"transport\":\"dpdk\"", "\"transport\":\"tcp\"")),
            "f.json: cases[0].transport: 'tcp' is not one of posix, dpdk, rdma");
  EXPECT_EQ(load_error(replaced("\"iodepth\":2", "\"iodepth\":-2")),
            "f.json: cases[0].iodepth: '-2' is not a non-negative integer");
  EXPECT_EQ(load_error(replaced("\"seconds\":10.000", "\"seconds\":-1")),
            "f.json: cases[0].seconds: '-1' is not a finite number >= 0");
  EXPECT_EQ(load_error(replaced("[812.000,1.000000]", "[812.000,0.4]")),
            "f.json: cases[0].latency_us.cdf[2]: is below the point before it (a CDF never decreases)");
  EXPECT_EQ(load_error(replaced("[812.000,1.000000]", "[812.000,0.9]")),
            "f.json: cases[0].latency_us.cdf: ends at fraction 0.900000, expected 1");
  EXPECT_EQ(load_error(replaced("[812.000,1.000000]", "[812.000]")),
            "f.json: cases[0].latency_us.cdf[2]: has 1 items, expected [latency_us, fraction]");
  EXPECT_EQ(load_error(replaced("\"ms.type\":\"dpdk\"", "\"ms.type\":3")),
            "f.json: config.ms.type: is a number, expected a string");
  EXPECT_EQ(load_error(replaced("\"copies_per_round_trip\":2", "\"copies_per_round_trip\":\"two\"")),
            "f.json: cases[0].link.copies_per_round_trip: is a string, expected a non-negative integer");
  EXPECT_EQ(load_error(replaced("\"name\":\"vhost-user\"", "\"name\":\"\"")), "f.json: cases[0].link.name: is empty");
  EXPECT_EQ(load_error(replaced("\"samples\":[", "\"samples\":[true,")),
            "f.json: cases[0].samples[0]: is a boolean, expected an object");
}

}  // namespace
}  // namespace bypass::bench
