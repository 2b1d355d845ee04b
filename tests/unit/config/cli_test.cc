// Command-line parsing and the precedence of sources: defaults < YAML < BYPASS_* < --set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "config/cli.h"

namespace bypass::config {
namespace {

// Sets an environment variable for the lifetime of the guard.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

CommonArgs parse(std::vector<std::string> words) {
  words.insert(words.begin(), "tool");
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  return parse_common_args(static_cast<int>(words.size()), argv.data());
}

std::string parse_error(std::vector<std::string> words) {
  try {
    parse(std::move(words));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

// A YAML file in the test's temporary directory, removed afterwards.
class TempYaml {
 public:
  TempYaml(const std::string& name, const std::string& text) : path_(::testing::TempDir() + name) {
    std::ofstream(path_) << text;
  }
  ~TempYaml() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(CommonArgs, ConsumesItsFlagsAndKeepsTheRestInOrder) {
  const CommonArgs args = parse({"-c", "a.yaml", "--port", "9", "--config", "b.yaml", "--config=c.yaml",
                                 "--set", "ms.type=dpdk", "--set=ms.workers=3", "--help-options", "x",
                                 "--", "--set", "-c"});
  EXPECT_EQ(args.config_files, (std::vector<std::string>{"a.yaml", "b.yaml", "c.yaml"}));
  EXPECT_EQ(args.assignments, (std::vector<std::string>{"ms.type=dpdk", "ms.workers=3"}));
  EXPECT_TRUE(args.help_options);
  EXPECT_EQ(args.rest, (std::vector<std::string>{"--port", "9", "x", "--set", "-c"}));
}

TEST(CommonArgs, ErrorsNameTheFlag) {
  EXPECT_EQ(parse_error({"-c"}), "-c: needs an argument");
  EXPECT_EQ(parse_error({"--config"}), "--config: needs an argument");
  EXPECT_EQ(parse_error({"--config="}), "--config: needs a file name");
  EXPECT_EQ(parse_error({"--set"}), "--set: needs an argument");
  EXPECT_EQ(parse_error({"--set", "ms.type"}), "--set: 'ms.type' is not key=value");
  EXPECT_EQ(parse_error({"--set==x"}), "--set: '=x' is not key=value");
  EXPECT_FALSE(parse({}).help_options);
  EXPECT_TRUE(parse({"--settings"}).assignments.empty());  // not --set
}

TEST(Precedence, FileThenEnvironmentThenSet) {
  TempYaml file("bypass_precedence.yaml", "ms:\n  workers: 3\n  type: dpdk\n  listen_backlog: 100\n");
  {
    const Config c = load_config(parse({"-c", file.path()}));
    EXPECT_EQ(c.get_int("ms.workers"), 3);
    EXPECT_EQ(c.get_int("ms.listen_backlog"), 100);
  }
  ScopedEnv workers("BYPASS_MS_WORKERS", "4");
  ScopedEnv backlog("BYPASS_MS_LISTEN_BACKLOG", "200");
  {
    const Config c = load_config(parse({"-c", file.path()}));
    EXPECT_EQ(c.get_int("ms.workers"), 4);
    EXPECT_EQ(c.origin("ms.workers"), "BYPASS_MS_WORKERS");
    EXPECT_EQ(c.get_string("ms.type"), "dpdk");  // untouched by the environment
  }
  const Config c = load_config(parse({"--set", "ms.workers=5", "-c", file.path()}));
  EXPECT_EQ(c.get_int("ms.workers"), 5);
  EXPECT_EQ(c.origin("ms.workers"), "--set");
  EXPECT_EQ(c.get_int("ms.listen_backlog"), 200);
  EXPECT_EQ(c.get_string("ms.type"), "dpdk");
}

TEST(Precedence, LaterSetWinsAndFilesApplyInOrder) {
  TempYaml one("bypass_one.yaml", "ms: {workers: 3}\n");
  TempYaml two("bypass_two.yaml", "ms: {workers: 6}\n");
  EXPECT_EQ(load_config(parse({"-c", one.path(), "-c", two.path()})).get_int("ms.workers"), 6);
  EXPECT_EQ(load_config(parse({"--set", "ms.workers=7", "--set", "ms.workers=8"})).get_int("ms.workers"), 8);
}

TEST(Environment, NamesAreDerivedFromOptionNames) {
  ScopedEnv ip("BYPASS_DPDK_HOST_IP", "10.9.8.7");
  ScopedEnv vdev("BYPASS_DPDK_VDEV", "net_ring0,net_null0");
  ScopedEnv delay("BYPASS_DPDK_FAULT_DELAY", "2ms");
  ScopedEnv log("BYPASS_LOG", "info");  // the logger's variable is not an option
  Config c;
  c.apply_environment();
  EXPECT_EQ(c.get_ipv4("dpdk.host_ip").to_string(), "10.9.8.7");
  EXPECT_EQ(c.get_list("dpdk.vdev"), (std::vector<std::string>{"net_ring0", "net_null0"}));
  EXPECT_EQ(c.get_duration("dpdk.fault_delay"), std::chrono::milliseconds(2));
}

TEST(Environment, ErrorsNameTheVariable) {
  ScopedEnv type("BYPASS_MS_TYPE", "dpkd");
  Config c;
  try {
    c.apply_environment();
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "BYPASS_MS_TYPE: ms.type: 'dpkd' is not one of posix, dpdk, rdma, rsocket");
  }
}

TEST(SetErrors, NameSetAndTheOption) {
  try {
    load_config(parse({"--set", "dpdk.mtu=65001"}));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--set: dpdk.mtu: '65001' is out of range (allowed 68..65000)");
  }
  try {
    load_config(parse({"--set=ms.tpye=dpdk"}));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--set: ms.tpye: unknown option; did you mean 'ms.type'?");
  }
}

TEST(StringList, FromYamlSequenceAndFromSet) {
  TempYaml file("bypass_list.yaml", "dpdk:\n  vdev:\n    - net_tap0,iface=bp0\n    - net_ring0\n");
  const Config from_file = load_config(parse({"-c", file.path()}));
  EXPECT_EQ(from_file.get_list("dpdk.vdev"),
            (std::vector<std::string>{"net_tap0,iface=bp0", "net_ring0"}));
  const Config from_set = load_config(parse({"-c", file.path(), "--set", "dpdk.vdev=net_null0, net_ring1"}));
  EXPECT_EQ(from_set.get_list("dpdk.vdev"), (std::vector<std::string>{"net_null0", "net_ring1"}));
  const Config emptied = load_config(parse({"-c", file.path(), "--set", "dpdk.vdev="}));
  EXPECT_TRUE(emptied.get_list("dpdk.vdev").empty());
}

}  // namespace
}  // namespace bypass::config
