// Job-file validation: every bad job is one ConfigError naming the option and where its value
// came from, raised before anything starts; good jobs expand into the expected cases and sides.
#include "tools/bypass-bench/bench_job.h"
#include "tools/bypass-bench/job_options.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

namespace bypass::bench {
namespace {

config::Config load(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  config::Config conf;
  conf.load_yaml_text(yaml, "job.yaml");
  for (const std::string& s : sets) conf.set_assignment(s);
  return conf;
}

// A valid two-transport job; the bad cases below each break one thing of it.
const char* kGoodJob = R"(
bench:
  transports: [posix, dpdk]
  iodepth: [1, 128]
  message_size: [64, 4K]
  server:
    cpus: "1"
    dpdk: [dpdk.host_ip=10.96.0.1, 'dpdk.vdev=["net_memif0,role=server,socket=/run/x.sock"]']
  client:
    cpus: "0"
    dpdk: [dpdk.host_ip=10.96.0.2]
)";

TEST(BenchJob, GoodJobExpandsIntoCasesAndSides) {
  const config::Config conf = load(kGoodJob);
  const BenchJob job = BenchJob::from_config(conf);
  EXPECT_NO_THROW(check_two_process_job(conf, job));
  EXPECT_EQ(job.transports, (std::vector<std::string>{"posix", "dpdk"}));
  const std::vector<BenchCase> cases = job.cases_for("dpdk");
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0].name(), "dpdk 64 d1");
  EXPECT_EQ(cases[3].name(), "dpdk 4KiB d128");
  const config::Config server = side_config(conf, Side::Server, "dpdk");
  EXPECT_EQ(server.get_string("ms.type"), "dpdk");
  EXPECT_EQ(server.get_ipv4("dpdk.host_ip").to_string(), "10.96.0.1");
  EXPECT_EQ(server.get_list("dpdk.vdev"), (std::vector<std::string>{"net_memif0,role=server,socket=/run/x.sock"}));
  EXPECT_EQ(server.get_cpus("ms.cpus"), (std::vector<int>{1}));
  const config::Config client = side_config(conf, Side::Client, "posix");
  EXPECT_EQ(client.get_string("ms.type"), "posix");
  EXPECT_EQ(client.get_cpus("ms.cpus"), (std::vector<int>{0}));
}

// An IPv6 server address gives each dpdk side an IPv6 address of its own on one prefix (the
// userspace stack speaks IPv6 with dpdk.host_ipv6 only); a side's overlay may name its own.
TEST(BenchJob, IPv6ServerAddressGivesEachDpdkSideAnIPv6Address) {
  const auto ipv6_of = [](const std::vector<std::string>& sets, Side side) {
    const config::Config conf = load(kGoodJob, sets);
    const BenchJob job = BenchJob::from_config(conf);
    check_two_process_job(conf, job);
    return side_config(conf, side, "dpdk").get_string("dpdk.host_ipv6");
  };
  // ::1 and :: name no host: a ULA prefix, each side's IPv4 address (10.96.0.1 / .2) as its last 32 bits.
  EXPECT_EQ(ipv6_of({"bench.server_address=[::1]:0"}, Side::Server), "fd00:bb::a60:1");
  EXPECT_EQ(ipv6_of({"bench.server_address=[::1]:0"}, Side::Client), "fd00:bb::a60:2");
  EXPECT_EQ(ipv6_of({"bench.server_address=[::]:6800"}, Side::Client), "fd00:bb::a60:2");
  // A host's address: the server's own, the client's on its prefix.
  EXPECT_EQ(ipv6_of({"bench.server_address=[fd00:96::1]:0"}, Side::Server), "fd00:96::1");
  EXPECT_EQ(ipv6_of({"bench.server_address=[fd00:96::1]:0"}, Side::Client), "fd00:96::a60:2");
  // The per-side overlay wins.
  EXPECT_EQ(ipv6_of({"bench.server_address=[fd00:96::1]:0",
                     "bench.client.dpdk=[dpdk.host_ip=10.96.0.2, dpdk.host_ipv6=fd00:96::7]"},
                    Side::Client),
            "fd00:96::7");
  EXPECT_EQ(ipv6_of({"bench.server_address=[fd00:96::1]:0",
                     "bench.server.dpdk=[dpdk.host_ip=10.96.0.1, dpdk.host_ipv6=fd00:96::1]"},
                    Side::Server),
            "fd00:96::1");
  // IPv4 server address: IPv6 stays off; other transports are untouched.
  EXPECT_EQ(ipv6_of({"bench.server_address=10.96.0.1:0"}, Side::Client), "");
  EXPECT_EQ(side_config(load(kGoodJob, {"bench.server_address=[::1]:0"}), Side::Client, "posix")
                .get_string("dpdk.host_ipv6"),
            "");
}

TEST(BenchJob, DefaultsRunOneCaseOnMsType) {
  const config::Config conf = load("ms: {type: posix}");
  const BenchJob job = BenchJob::from_config(conf);
  EXPECT_EQ(job.single_transport(conf, "server"), "posix");
  EXPECT_EQ(job.cases_for("posix").size(), 1u);
  EXPECT_EQ(job.mode, BenchMode::RequestReply);
}

struct BadJob {
  const char* what;
  std::string yaml;
  std::vector<std::string> sets;
  std::string expected;  // substring of the one error message
};

void PrintTo(const BadJob& bad, std::ostream* out) { *out << bad.what; }

class BadJobs : public ::testing::TestWithParam<BadJob> {};

TEST_P(BadJobs, AreOneClearError) {
  const BadJob& bad = GetParam();
  try {
    const config::Config conf = load(bad.yaml, bad.sets);
    const BenchJob job = BenchJob::from_config(conf);
    check_two_process_job(conf, job);
    if (job.transports.size() > 1) job.single_transport(conf, "server");
    FAIL() << bad.what << ": no error";
  } catch (const config::ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(bad.expected), std::string::npos) << bad.what << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadJobs,
    ::testing::Values(
        BadJob{"unknown key", "bench: {iodepht: 4}", {}, "job.yaml:1:9: bench.iodepht: unknown option; did you mean 'bench.iodepth'?"},
        BadJob{"unknown side key", "bench: {server: {cpu: '1'}}", {}, "bench.server.cpu: unknown option"},
        BadJob{"bad mode", "bench: {mode: pingpong}", {}, "bench.mode: 'pingpong' is not one of reqrep, stream"},
        BadJob{"iodepth 0", "bench: {iodepth: [1, 0]}", {}, "job.yaml:1:18: bench.iodepth: '0' is outside 1..65536"},
        BadJob{"iodepth not a number", "bench: {iodepth: deep}", {}, "bench.iodepth:"},
        BadJob{"size 0", "bench: {message_size: 0}", {}, "bench.message_size: '0' is outside 1..1G"},
        BadJob{"size garbage", "bench: {message_size: [4K, huge]}", {}, "bench.message_size:"},
        BadJob{"unknown transport", "bench: {transports: [posix, dpkd]}", {}, "'dpkd' is not one of posix, dpdk, rdma"},
        BadJob{"transport twice", "bench: {transports: [posix, posix]}", {}, "'posix' is listed twice"},
        BadJob{"count and duration", "bench: {count: 1000, duration: 5s}", {}, "bench.count and bench.duration (job.yaml:1:32) are both set"},
        BadJob{"count and --set duration", "bench: {count: 1000}", {"bench.duration=5s"}, "are both set"},
        BadJob{"think time with stream", "bench: {mode: stream, think_time: 10us}", {}, "bench.think_time: think time needs bench.mode reqrep"},
        BadJob{"reply size garbage", "bench: {reply_size: huge}", {}, "bench.reply_size: 'huge' is neither echo nor a size"},
        BadJob{"reply size too big", "bench: {reply_size: 2G}", {}, "bench.reply_size: '2G' is outside 0..1G"},
        BadJob{"reply size with stream", "bench: {mode: stream, reply_size: 0}", {}, "bench.reply_size: a reply size needs bench.mode reqrep"},
        BadJob{"shared messenger, many connections", "bench: {connections: 4}", {}, "bench.connections: 4 connections need bench.messengers per-thread"},
        BadJob{"bad server address", "bench: {server_address: 'localhost:1'}", {}, "bench.server_address: 'localhost:1' is not IPv4:port or [IPv6]:port"},
        BadJob{"IPv6 server address not the server's own", kGoodJob,
               {"bench.server_address=[fd00:96::1]:0", "bench.server.dpdk=[dpdk.host_ip=10.96.0.1, dpdk.host_ipv6=fd00:96::5]"},
               "bench.server_address: '[fd00:96::1]:0' is not the server's dpdk.host_ipv6 fd00:96::5 (--set: bench.server.dpdk): "
               "a dpdk server listens on its own address"},
        BadJob{"IPv6 prefix too long to derive a side's address", kGoodJob,
               {"bench.server_address=[fd00:96::1]:0", "dpdk.ipv6_prefix_length=112"},
               "bench.client.dpdk: no dpdk.host_ipv6 for the IPv6 bench.server_address '[fd00:96::1]:0', and "
               "dpdk.ipv6_prefix_length 112 leaves no room to derive one from dpdk.host_ip; set dpdk.host_ipv6 here"},
        BadJob{"IPv6 multicast server address on dpdk", kGoodJob, {"bench.server_address=[ff02::1]:0"},
               "bench.server.dpdk: dpdk.host_ipv6: 'ff02::1' is not a unicast address"},
        BadJob{"same IPv6 address both sides", kGoodJob,
               {"bench.server_address=[::1]:0", "dpdk.host_ipv6=fd00:96::9"},
               "bench.client.dpdk: server and client both use dpdk.host_ipv6 fd00:96::9"},
        BadJob{"overlay not key=value", "bench: {server: {posix: [nodelay]}}", {}, "bench.server.posix: item 'nodelay' is not key=value"},
        BadJob{"overlay sets the transport", "bench: {client: {posix: [ms.type=dpdk]}}", {}, "ms.type cannot differ between sides"},
        BadJob{"overlay sets a bench option", "bench: {client: {posix: [bench.iodepth=4]}}", {}, "bench.iodepth cannot differ between sides"},
        BadJob{"overlay unknown option", "bench: {server: {posix: [ms.wokers=2]}}", {}, "ms.wokers: unknown option"},
        BadJob{"overlay bad value", "bench: {server: {posix: [ms.workers=lots]}}", {}, "bench.server.posix: ms.workers:"},
        BadJob{"dpdk in one process (same address both sides)", "bench: {transports: [dpdk]}", {}, "server and client both use dpdk.host_ip 0.0.0.0: a dpdk run is two processes"},
        BadJob{"overlapping CPUs", "bench: {server: {cpus: '0-1'}, client: {cpus: '1'}}", {}, "bench.client.cpus: CPU 1 is also in bench.server.cpus"},
        BadJob{"CPU that does not exist", "bench: {server: {cpus: '1000'}}", {}, "bench.server.cpus: CPU 1000 is not available"},
        BadJob{"one process, two transports", "bench: {transports: [posix, rdma]}", {}, "server runs one transport but 2 are listed"}),
    [](const ::testing::TestParamInfo<BadJob>& info) {
      std::string name;
      for (const char c : std::string(info.param.what)) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

TEST(BenchJob, SizeAndDepthListsParse) {
  EXPECT_EQ(message_sizes_from_config(load("bench: {message_size: [64, 1M]}")), (std::vector<uint64_t>{64, 1 << 20}));
  EXPECT_EQ(iodepths_from_config(load("bench: {iodepth: 16}")), (std::vector<int>{16}));
}

// `echo` runs one case in one process.
TEST(BenchJob, EchoRejectsSweepsAndDpdk) {
  auto echo_error = [](const std::string& yaml) {
    try {
      EchoJobOptions::from_config(load(yaml));
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(echo_error("bench: {iodepth: [1, 128]}").find("bench.iodepth: echo runs one queue depth, 2 are listed"),
            std::string::npos);
  EXPECT_NE(echo_error("bench: {message_size: [1, 2]}").find("echo runs one size"), std::string::npos);
  EXPECT_NE(echo_error("ms: {type: dpdk}").find("job.yaml:1:12: ms.type: echo runs server and client in one process"),
            std::string::npos);
  EXPECT_EQ(echo_error("bench: {iodepth: 8}"), "no error");
}

}  // namespace
}  // namespace bypass::bench
