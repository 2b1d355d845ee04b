// Registry checks, per-type values through Config, describe(), to_json() and the example files.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "config/config.h"

namespace bypass::config {
namespace {

using std::chrono::nanoseconds;

// A small registry with one option of every type.
Registry every_type_registry() {
  Registry r;
  r.add({.name = "t.flag", .type = OptionType::Bool, .default_value = "false", .help = "a bool"});
  r.add({.name = "t.count", .type = OptionType::Int, .default_value = "3", .help = "an int",
         .min = 1, .max = 10});
  r.add({.name = "t.buffer", .type = OptionType::Size, .default_value = "4K", .help = "a size",
         .min = 1024, .max = int64_t{1} << 20});
  r.add({.name = "t.timeout", .type = OptionType::Duration, .default_value = "1s",
         .help = "a duration", .min = 1'000'000, .max = 60'000'000'000});
  r.add({.name = "t.label", .type = OptionType::String, .default_value = "x", .help = "a string"});
  r.add({.name = "t.mode", .type = OptionType::Enum, .default_value = "fast", .help = "an enum",
         .enum_values = {"fast", "safe"}});
  r.add({.name = "t.addr", .type = OptionType::IPv4, .default_value = "10.0.0.1", .help = "ipv4"});
  r.add({.name = "t.cpus", .type = OptionType::CpuList, .default_value = "", .help = "cpus"});
  r.add({.name = "t.items", .type = OptionType::StringList, .default_value = "a,b", .help = "list"});
  return r;
}

std::string set_error(Config& config, const char* key, const char* value) {
  try {
    config.set(key, value);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Registry, RejectsBadRegistrations) {
  Registry r;
  r.add({.name = "a.b", .type = OptionType::Int, .default_value = "1", .help = "h"});
  EXPECT_THROW(r.add({.name = "a.b", .type = OptionType::Int, .default_value = "1", .help = "h"}),
               ConfigError);  // duplicate
  EXPECT_THROW(r.add({.name = "a.c", .type = OptionType::Int, .default_value = "x", .help = "h"}),
               ConfigError);  // default does not parse
  EXPECT_THROW(r.add({.name = "a.d", .type = OptionType::Int, .default_value = "0", .help = "h",
                      .min = 1, .max = 5}),
               ConfigError);  // default out of range
  EXPECT_THROW(r.add({.name = "a.e", .type = OptionType::Enum, .default_value = "z", .help = "h",
                      .enum_values = {"x", "y"}}),
               ConfigError);  // default not an allowed value
  EXPECT_THROW(r.add({.name = "a", .type = OptionType::Int, .default_value = "1", .help = "h"}),
               ConfigError);  // "a" is a section
  EXPECT_THROW(r.add({.name = "a.b.c", .type = OptionType::Int, .default_value = "1", .help = "h"}),
               ConfigError);  // under option a.b
  EXPECT_THROW(r.add({.name = "a_b", .type = OptionType::Int, .default_value = "1", .help = "h"}),
               ConfigError);  // BYPASS_A_B is taken by a.b
  EXPECT_THROW(r.add({.name = "A.x", .type = OptionType::Int, .default_value = "1", .help = "h"}),
               ConfigError);
  EXPECT_THROW(r.add({.name = "a.f", .type = OptionType::Int, .default_value = "1", .help = ""}),
               ConfigError);
  EXPECT_EQ(r.options().size(), 1u);
}

TEST(Registry, SectionsAndSuggestions) {
  const Registry& r = Registry::global();
  for (const char* section : {"ms", "posix", "dpdk", "tcp", "rdma", "bench"})
    EXPECT_TRUE(r.is_section(section)) << section;
  EXPECT_FALSE(r.is_section("dpd"));
  EXPECT_FALSE(r.is_section("ms.type"));
  EXPECT_EQ(r.suggest("ms.tpye"), "ms.type");
  EXPECT_EQ(r.suggest("dpdk.hostip"), "dpdk.host_ip");
  EXPECT_EQ(r.suggest("tcp.host_ip"), "dpdk.host_ip");  // right key, wrong section
  EXPECT_EQ(r.suggest("completely.unrelated"), std::nullopt);
}

TEST(Registry, GlobalTableHasEverySectionsOptions) {
  const Registry& r = Registry::global();
  for (const char* name :
       {"ms.type", "ms.workers", "ms.cpus", "ms.connect_timeout", "ms.listen_backlog", "ms.tcp_nodelay",
        "ms.tcp_rcvbuf", "ms.tcp_sndbuf", "ms.inject_socket_failures", "posix.reuse_port",
        "dpdk.host_ip", "dpdk.vdev", "dpdk.allow", "dpdk.mtu", "dpdk.fault_drop", "dpdk.fault_delay",
        "tcp.rto_min", "tcp.msl", "tcp.congestion", "tcp.window_scale", "tcp.ip_reassembly_max",
        "rdma.device", "rdma.roce_version", "rdma.connect_mode", "bench.duration",
        "bench.message_size", "bench.connections", "bench.iodepth"})
    EXPECT_NE(r.find(name), nullptr) << name;
  const Config defaults;
  EXPECT_EQ(defaults.get_string("ms.type"), "posix");
  EXPECT_EQ(defaults.get_int("ms.workers"), 2);
  EXPECT_EQ(defaults.get_duration("tcp.rto_min"), std::chrono::milliseconds(200));
  EXPECT_EQ(defaults.get_size("dpdk.memory"), 256u << 20);
  EXPECT_EQ(defaults.get_ipv4("dpdk.netmask").host_order, 0xffffff00u);
  EXPECT_TRUE(defaults.get_cpus("ms.cpus").empty());
  EXPECT_TRUE(defaults.get_list("dpdk.vdev").empty());
  EXPECT_EQ(defaults.origin("ms.type"), "default");
}

TEST(ConfigValues, EveryTypeAcceptsGoodValues) {
  const Registry r = every_type_registry();
  Config c(r);
  EXPECT_FALSE(c.get_bool("t.flag"));
  EXPECT_EQ(c.get_list("t.items"), (std::vector<std::string>{"a", "b"}));
  c.set("t.flag", "yes");
  c.set("t.count", "10");
  c.set("t.buffer", "1M");
  c.set("t.timeout", "1.5s");
  c.set("t.label", " spaced ");
  c.set("t.mode", "safe");
  c.set("t.addr", "192.168.0.7");
  c.set("t.cpus", "0-2,5");
  c.set("t.items", "x, y ,z");
  EXPECT_TRUE(c.get_bool("t.flag"));
  EXPECT_EQ(c.get_int("t.count"), 10);
  EXPECT_EQ(c.get_size("t.buffer"), 1u << 20);
  EXPECT_EQ(c.get_duration("t.timeout"), nanoseconds{1'500'000'000});
  EXPECT_EQ(c.get_string("t.label"), " spaced ");  // strings are taken verbatim
  EXPECT_EQ(c.get_string("t.mode"), "safe");
  EXPECT_EQ(c.get_ipv4("t.addr").to_string(), "192.168.0.7");
  EXPECT_EQ(c.get_cpus("t.cpus"), (std::vector<int>{0, 1, 2, 5}));
  EXPECT_EQ(c.get_list("t.items"), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(c.to_string("t.cpus"), "0-2,5");
  EXPECT_EQ(c.to_string("t.timeout"), "1500ms");
  EXPECT_EQ(c.to_string("t.buffer"), "1M");
  EXPECT_EQ(c.origin("t.count"), "--set");
}

TEST(ConfigValues, EveryTypeRejectsBadValuesWithOriginAndRange) {
  const Registry r = every_type_registry();
  Config c(r);
  EXPECT_EQ(set_error(c, "t.flag", "maybe"),
            "--set: t.flag: 'maybe' is not a boolean (use true/false, yes/no, on/off, 1/0)");
  EXPECT_EQ(set_error(c, "t.count", "11"), "--set: t.count: '11' is out of range (allowed 1..10)");
  EXPECT_EQ(set_error(c, "t.count", "ten"), "--set: t.count: 'ten' is not an integer");
  EXPECT_EQ(set_error(c, "t.buffer", "512"), "--set: t.buffer: '512' is out of range (allowed 1K..1M)");
  EXPECT_EQ(set_error(c, "t.timeout", "2m"),
            "--set: t.timeout: '2m' is out of range (allowed 1ms..1m)");
  EXPECT_EQ(set_error(c, "t.mode", "FAST"), "--set: t.mode: 'FAST' is not one of fast, safe");
  EXPECT_NE(set_error(c, "t.addr", "1.2.3"), "(no error)");
  EXPECT_NE(set_error(c, "t.cpus", "3-1"), "(no error)");
  EXPECT_EQ(set_error(c, "t.items", "a,,b"), "--set: t.items: 'a,,b' has an empty list item");
  EXPECT_EQ(set_error(c, "t.cont", "1"), "--set: t.cont: unknown option; did you mean 't.count'?");
  EXPECT_EQ(set_error(c, "t", "1"), "--set: t: is a section, not an option");
  // No near match: the options of that section are what is allowed.
  EXPECT_EQ(set_error(c, "t.zzzzzzzzzzzz", "1"),
            "--set: t.zzzzzzzzzzzz: unknown option (options in 't': t.flag, t.count, t.buffer, "
            "t.timeout, t.label, t.mode, t.addr, t.cpus, t.items)");
  EXPECT_EQ(set_error(c, "nosuchsection.zzzzzzzzzzzz", "1"),
            "--set: nosuchsection.zzzzzzzzzzzz: unknown option (see --help-options for every option)");
  // Failed assignments leave the previous values in place.
  EXPECT_EQ(c.get_int("t.count"), 3);
  EXPECT_EQ(c.origin("t.count"), "default");
}

TEST(ConfigValues, ReadingWithTheWrongTypeThrows) {
  const Config c;
  EXPECT_THROW(c.get_int("ms.type"), ConfigError);
  EXPECT_THROW(c.get_bool("no.such"), ConfigError);
  EXPECT_EQ(c.get_string("ms.type"), "posix");  // enums read as strings
}

TEST(ConfigValues, CopiesAreIndependent) {
  Config a;
  const Config b = a;
  a.set("ms.workers", "7");
  EXPECT_EQ(a.get_int("ms.workers"), 7);
  EXPECT_EQ(b.get_int("ms.workers"), 2);
}

TEST(ConfigValues, ListsWithCommasRoundTripThroughFlowSyntax) {
  Config c;
  c.set("dpdk.vdev", R"(["net_tap0,iface=bp0", net_ring0])");
  EXPECT_EQ(c.get_list("dpdk.vdev"), (std::vector<std::string>{"net_tap0,iface=bp0", "net_ring0"}));
  const std::string text = c.to_string("dpdk.vdev");
  Config d;
  d.set("dpdk.vdev", text);
  EXPECT_EQ(d.get_list("dpdk.vdev"), c.get_list("dpdk.vdev"));
  EXPECT_THROW(c.set("dpdk.vdev", "[a, [b]]"), ConfigError);
  EXPECT_THROW(c.set("dpdk.vdev", "[a"), ConfigError);
}

TEST(ConfigJson, FlatObjectWithTypedAndEscapedValues) {
  const Registry r = every_type_registry();
  Config c(r);
  c.set("t.label", "say \"hi\"\\\n");
  c.set("t.items", R"(["a,b", c])");
  EXPECT_EQ(c.to_json(),
            "{\"t.flag\": false, \"t.count\": 3, \"t.buffer\": 4096, \"t.timeout\": \"1s\", "
            "\"t.label\": \"say \\\"hi\\\"\\\\\\n\", \"t.mode\": \"fast\", \"t.addr\": \"10.0.0.1\", "
            "\"t.cpus\": \"\", \"t.items\": [\"a,b\", \"c\"]}");
}

TEST(Describe, OneBlockPerOptionWithTypeDefaultAndHelp) {
  const std::string text = Registry::global().describe();
  EXPECT_NE(text.find("ms.type\n    type:    enum: posix, dpdk, rdma\n    default: posix\n"
                      "    env:     BYPASS_MS_TYPE\n"),
            std::string::npos);
  EXPECT_NE(text.find("dpdk.mtu\n    type:    int, 68..65000\n    default: 1500\n"), std::string::npos);
  size_t blocks = 0;
  for (size_t pos = text.find("\n\n"); pos != std::string::npos; pos = text.find("\n\n", pos + 2))
    ++blocks;
  EXPECT_EQ(blocks, Registry::global().options().size());
}

TEST(Examples, EveryExampleLoads) {
  DIR* dir = opendir(BYPASS_CONFIG_EXAMPLES_DIR);
  ASSERT_NE(dir, nullptr) << BYPASS_CONFIG_EXAMPLES_DIR;
  std::vector<std::string> files;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".yaml") == 0) files.push_back(name);
  }
  closedir(dir);
  std::sort(files.begin(), files.end());
  for (const char* expected : {"posix-echo.yaml", "dpdk-tap.yaml", "dpdk-memif-server.yaml",
                               "dpdk-memif-client.yaml", "rdma.yaml"})
    EXPECT_NE(std::find(files.begin(), files.end(), expected), files.end()) << expected;
  for (const std::string& file : files) {
    Config c;
    EXPECT_NO_THROW(c.load_yaml_file(std::string(BYPASS_CONFIG_EXAMPLES_DIR) + "/" + file)) << file;
  }
  Config tap;
  tap.load_yaml_file(std::string(BYPASS_CONFIG_EXAMPLES_DIR) + "/dpdk-tap.yaml");
  EXPECT_EQ(tap.get_string("ms.type"), "dpdk");
  EXPECT_EQ(tap.get_list("dpdk.vdev"), (std::vector<std::string>{"net_tap0,iface=bptap0"}));
}

// rdma.gid_index: an int that also takes "auto" (the default), read with get_int_or_auto.
TEST(ConfigValues, IntWithAutoTakesTheWordAutoAndNumbers) {
  Config c;
  EXPECT_EQ(c.get_int_or_auto("rdma.gid_index"), std::nullopt);
  EXPECT_EQ(c.to_string("rdma.gid_index"), "auto");
  EXPECT_NE(c.to_json().find("\"rdma.gid_index\": \"auto\""), std::string::npos);
  EXPECT_THROW(c.get_int("rdma.gid_index"), ConfigError);  // a plain read would misread auto
  c.set("rdma.gid_index", "3");
  EXPECT_EQ(c.get_int_or_auto("rdma.gid_index"), 3);
  EXPECT_EQ(c.get_int("rdma.gid_index"), 3);
  EXPECT_NE(c.to_json().find("\"rdma.gid_index\": 3"), std::string::npos);
  c.set("rdma.gid_index", " auto ");
  EXPECT_EQ(c.get_int_or_auto("rdma.gid_index"), std::nullopt);
  EXPECT_EQ(set_error(c, "rdma.gid_index", "first"), "--set: rdma.gid_index: 'first' is not an integer or auto");
  EXPECT_NE(set_error(c, "rdma.gid_index", "256").find("out of range (allowed 0..255)"), std::string::npos);
  EXPECT_EQ(set_error(c, "ms.workers", "auto"), "--set: ms.workers: 'auto' is not an integer");  // only where allowed
  EXPECT_NE(Registry::global().describe().find("int or auto, 0..255"), std::string::npos);
  Registry r;
  EXPECT_THROW(r.add({.name = "t.s", .type = OptionType::String, .default_value = "", .help = "h", .allows_auto = true}),
               ConfigError);
}

}  // namespace
}  // namespace bypass::config
