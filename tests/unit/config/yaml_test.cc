// The YAML loader: nesting, lists, and the exact FILE:LINE:COL: KEY: message of each error.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "config/config.h"

namespace bypass::config {
namespace {

std::string load_error(std::string_view yaml) {
  Config c;
  try {
    c.load_yaml_text(yaml, "job.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Yaml, NestedMapsNameOptionsByPath) {
  Config c;
  c.load_yaml_text(
      "ms:\n"
      "  type: dpdk\n"
      "  workers: 4\n"
      "  cpus: 0-1,3\n"
      "dpdk:\n"
      "  host_ip: 10.1.2.3\n"
      "  vdev: [net_tap0, \"net_memif0,role=server\"]\n"
      "  allow:\n"
      "    - 0000:03:00.0\n"
      "    - 0000:03:00.1\n"
      "  memory: 512M\n"
      "tcp: {rto_min: 50ms, congestion: newreno}\n",
      "job.yaml");
  EXPECT_EQ(c.get_string("ms.type"), "dpdk");
  EXPECT_EQ(c.get_int("ms.workers"), 4);
  EXPECT_EQ(c.get_cpus("ms.cpus"), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(c.get_ipv4("dpdk.host_ip").to_string(), "10.1.2.3");
  EXPECT_EQ(c.get_list("dpdk.vdev"), (std::vector<std::string>{"net_tap0", "net_memif0,role=server"}));
  EXPECT_EQ(c.get_list("dpdk.allow"), (std::vector<std::string>{"0000:03:00.0", "0000:03:00.1"}));
  EXPECT_EQ(c.get_size("dpdk.memory"), 512u << 20);
  EXPECT_EQ(c.get_duration("tcp.rto_min"), std::chrono::milliseconds(50));
  EXPECT_EQ(c.get_string("tcp.congestion"), "newreno");
  EXPECT_EQ(c.origin("ms.workers"), "job.yaml:3:12");
  EXPECT_EQ(c.origin("ms.type"), "job.yaml:2:9");
}

TEST(Yaml, DottedKeysEmptySectionsAndEmptyFiles) {
  Config c;
  c.load_yaml_text("ms.type: rdma\ndpdk:\n", "a.yaml");
  EXPECT_EQ(c.get_string("ms.type"), "rdma");
  c.load_yaml_text("", "empty.yaml");
  c.load_yaml_text("# only a comment\n", "comment.yaml");
  EXPECT_EQ(c.get_string("ms.type"), "rdma");
  c.load_yaml_text("dpdk: {hw_addr: }\n", "null.yaml");  // an empty value is an empty string
  EXPECT_EQ(c.get_string("dpdk.hw_addr"), "");
}

TEST(Yaml, LaterFilesOverrideEarlierOnes) {
  Config c;
  c.load_yaml_text("ms: {workers: 3, type: dpdk}\n", "one.yaml");
  c.load_yaml_text("ms: {workers: 5}\n", "two.yaml");
  EXPECT_EQ(c.get_int("ms.workers"), 5);
  EXPECT_EQ(c.get_string("ms.type"), "dpdk");
  EXPECT_EQ(c.origin("ms.workers"), "two.yaml:1:15");
}

TEST(YamlErrors, UnknownKeySuggestsTheNearestOption) {
  EXPECT_EQ(load_error("ms:\n  tpye: dpdk\n"),
            "job.yaml:2:3: ms.tpye: unknown option; did you mean 'ms.type'?");
  EXPECT_EQ(load_error("dpdk:\n  mtu: 1500\n  hostip: 1.2.3.4\n"),
            "job.yaml:3:3: dpdk.hostip: unknown option; did you mean 'dpdk.host_ip'?");
  // No near match: the error lists what the section allows.
  const std::string far = load_error("ms:\n  zzzzzzzzzz: 1\n");
  EXPECT_EQ(far.rfind("job.yaml:2:3: ms.zzzzzzzzzz: unknown option (options in 'ms': ", 0), 0u) << far;
  EXPECT_NE(far.find("ms.type"), std::string::npos) << far;
}

TEST(YamlErrors, UnknownSection) {
  EXPECT_EQ(load_error("ms: {type: posix}\ndpkd:\n  mtu: 1500\n"),
            "job.yaml:2:1: dpkd: unknown section; did you mean 'dpdk'? "
            "(sections: ms, posix, dpdk, tcp, rdma, rsocket, bench)");
  EXPECT_EQ(load_error("network:\n  x: 1\n"),
            "job.yaml:1:1: network: unknown section (sections: ms, posix, dpdk, tcp, rdma, rsocket, bench)");
}

TEST(YamlErrors, WrongShape) {
  EXPECT_EQ(load_error("ms:\n  type:\n    name: posix\n"),
            "job.yaml:3:5: ms.type: expected an enum value, got a map");
  EXPECT_EQ(load_error("dpdk:\n  mtu: [1500]\n"), "job.yaml:2:8: dpdk.mtu: expected an int value, got a list");
  EXPECT_EQ(load_error("dpdk: 5\n"),
            "job.yaml:1:7: dpdk: is a section: expected a map of its options, got a scalar");
  EXPECT_EQ(load_error("dpdk:\n  vdev: [a, [b]]\n"),
            "job.yaml:2:13: dpdk.vdev: list items must be scalars, got a list");
  EXPECT_EQ(load_error("- ms\n- dpdk\n"),
            "job.yaml:1:1: expected a map of sections (e.g. ms: {type: posix}), got a list");
  EXPECT_EQ(load_error("ms:\n  [a]: 1\n"), "job.yaml:2:3: ms: keys must be option names, got a list");
}

TEST(YamlErrors, BadValuesNameRangeOrAllowedValues) {
  EXPECT_EQ(load_error("ms:\n  type: dpkd\n"),
            "job.yaml:2:9: ms.type: 'dpkd' is not one of posix, dpdk, rdma, rsocket");
  EXPECT_EQ(load_error("dpdk:\n  mtu: 70000\n"),
            "job.yaml:2:8: dpdk.mtu: '70000' is out of range (allowed 68..65000)");
  EXPECT_EQ(load_error("ms:\n  workers: 0\n"),
            "job.yaml:2:12: ms.workers: '0' is out of range (allowed 1..64)");
  EXPECT_EQ(load_error("tcp:\n  rto_min: fast\n"),
            "job.yaml:2:12: tcp.rto_min: 'fast' is not a duration (use a number with ns, us, ms, s, m "
            "or h, e.g. 200ms, 1.5s, 1m30s)");
  EXPECT_EQ(load_error("dpdk:\n  host_ip: 10.0.0.256\n"),
            "job.yaml:2:12: dpdk.host_ip: '10.0.0.256' is not an IPv4 address (e.g. 192.168.1.10)");
}

TEST(YamlErrors, DuplicateKeys) {
  EXPECT_EQ(load_error("ms:\n  type: dpdk\nms.type: rdma\n"),
            "job.yaml:3:1: ms.type: set twice in this file (first at job.yaml:2:3)");
}

TEST(YamlErrors, MalformedYamlUsesTheParsersMark) {
  const std::string unclosed = load_error("ms:\n  type: [posix\n");
  EXPECT_EQ(unclosed.rfind("job.yaml:3:1: malformed YAML: ", 0), 0u) << unclosed;
  const std::string bad_indent = load_error("ms:\n  type: posix\n workers: 2\n");
  EXPECT_EQ(bad_indent.rfind("job.yaml:3:", 0), 0u) << bad_indent;
  EXPECT_NE(bad_indent.find("malformed YAML"), std::string::npos);
  const std::string quote = load_error("ms: {type: \"posix}\n");
  EXPECT_NE(quote.find("malformed YAML"), std::string::npos) << quote;
}

TEST(YamlErrors, ABadFileChangesNothing) {
  Config c;
  EXPECT_THROW(c.load_yaml_text("ms:\n  workers: 9\n  type: bogus\n", "bad.yaml"), ConfigError);
  EXPECT_EQ(c.get_int("ms.workers"), 2);
  EXPECT_EQ(c.origin("ms.workers"), "default");
}

TEST(YamlFiles, LoadsFromDiskAndNamesMissingFiles) {
  const std::string path = ::testing::TempDir() + "bypass_config_test.yaml";
  {
    std::ofstream out(path);
    out << "ms:\n  workers: 6\n  typo: 1\n";
  }
  Config c;
  try {
    c.load_yaml_file(path);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":3:3: ms.typo: unknown option; did you mean 'ms.type'?");
  }
  {
    std::ofstream out(path);
    out << "ms:\n  workers: 6\n";
  }
  c.load_yaml_file(path);
  EXPECT_EQ(c.get_int("ms.workers"), 6);
  std::remove(path.c_str());
  try {
    c.load_yaml_file(path);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot open: No such file or directory");
  }
}

}  // namespace
}  // namespace bypass::config

namespace bypass::config {
namespace {

// Whatever the bytes, the loader either accepts them or throws ConfigError: never another
// exception, a crash or a hang.
TEST(YamlRobustness, MutatedDocumentsOnlyEverThrowConfigError) {
  const std::string seed =
      "ms:\n  type: dpdk\n  workers: 2\n  cpus: 0-1\ndpdk:\n  vdev: [net_tap0, \"a,b\"]\n"
      "  host_ip: 10.0.0.1\n  memory: 256M\ntcp: {rto_min: 200ms, sack: true}\n";
  const char alphabet[] = ":-[]{}\"'#&*!|>,. \n\t0a%@`\\";
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;  // LCG: reproducible without <random> seeding
    return state >> 8;
  };
  for (int round = 0; round < 2000; ++round) {
    std::string text = seed;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = next() % text.size();
      const char c = alphabet[next() % (sizeof alphabet - 1)];
      switch (next() % 3) {
        case 0: text[pos] = c; break;
        case 1: text.insert(pos, 1, c); break;
        default: text.erase(pos, 1); break;
      }
    }
    Config c;
    try {
      c.load_yaml_text(text, "fuzz.yaml");
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("fuzz.yaml", 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "unexpected " << e.what() << " for:\n" << text;
    }
  }
}

TEST(YamlRobustness, DeepNestingIsAnErrorNotACrash) {
  EXPECT_THROW(Config().load_yaml_text(std::string(100000, '['), "deep.yaml"), ConfigError);
  EXPECT_THROW(Config().load_yaml_text("ms: " + std::string(100000, '{'), "deep.yaml"), ConfigError);
}

}  // namespace
}  // namespace bypass::config
