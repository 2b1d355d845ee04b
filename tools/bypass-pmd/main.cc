// bypass-pmd: testpmd-style diagnostics over pmd/ — ports, stats, xstats, forwarding and
// generation, mempools — from the command line or an interactive shell (-i); and `stack ...`, the
// userspace TCP/IP stack on a port (ping, arp, neigh, echo/discard servers, bulk send); and
// `doctor`, the host checked against the configuration before anything starts.
//
//   bypass-pmd [-c FILE] [--set k=v]... [--vdev DEV]... [--json] COMMAND [ARGS]
//   bypass-pmd [-c FILE] [--set k=v]... [--vdev DEV]... -i
#include <editline/readline.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "config/cli.h"
#include "base/log.h"
#include "pmd/pmd.h"
#include "stack/dpdk/dpdk_stack.h"
#include "tools/bypass-pmd/commands.h"
#include "tools/bypass-pmd/doctor.h"

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_dump{false};  // SIGUSR1: a running stack command prints its ARP cache and connections

std::atomic<int> g_stop_signal{0};  // which signal raised g_stop (reported by the stack servers)

void on_signal(int signal) {
  g_stop_signal.store(signal);
  g_stop.store(true);
}
void on_dump_signal(int) { g_dump.store(true); }

void usage(FILE* out) {
  std::fprintf(out,
               "usage: bypass-pmd [-c FILE] [--set key=value]... [--vdev DEVICE]... [--json] COMMAND [ARGS]\n"
               "       bypass-pmd [-c FILE] [--set key=value]... [--vdev DEVICE]... -i\n"
               "  --vdev DEVICE   add a DPDK virtual device (appended to dpdk.vdev), e.g. net_tap0,iface=bp0\n"
               "  -i              interactive shell with history and tab completion\n"
               "  --help-options  list every configuration option\n\n%s",
               bypass::tools::Commands::help().c_str());
}

// Flow-sequence text for a StringList whose items contain commas ("net_memif0,role=server").
std::string flow_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    out += i ? ", \"" : "\"";
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "]";
}

char* complete_command(const char* text, int state) {
  static size_t index;
  if (state == 0) index = 0;
  const auto& names = bypass::tools::Commands::names();
  static const std::vector<std::string> extra = {"io", "mac", "rxonly", "txonly", "flowgen", "--json", "--watch",
                                                 "--filter", "--size", "--burst", "--duration", "--flows", "--linger"};
  const size_t len = std::strlen(text);
  while (index < names.size() + extra.size()) {
    const std::string& candidate = index < names.size() ? names[index] : extra[index - names.size()];
    ++index;
    if (candidate.compare(0, len, text) == 0) return strdup(candidate.c_str());
  }
  return nullptr;
}

char** completion(const char* text, int, int) {
  rl_attempted_completion_over = 1;
  return rl_completion_matches(text, complete_command);
}

int shell(bypass::tools::Commands& commands) {
  rl_attempted_completion_function = completion;
  const char* home = std::getenv("HOME");
  const std::string history = std::string(home ? home : "/tmp") + "/.bypass_pmd_history";
  read_history(history.c_str());
  int status = 0;
  while (true) {
    g_stop.store(false);
    char* line = readline("bypass-pmd> ");
    if (!line) break;  // EOF
    const std::string text = line;
    std::free(line);
    const auto words = bypass::tools::split_words(text);
    if (words.empty()) continue;
    add_history(text.c_str());
    if (words[0] == "quit" || words[0] == "exit") break;
    try {
      status = commands.run(words);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      status = 1;
    }
  }
  write_history(history.c_str());
  return status;
}

}  // namespace

// Where `stack` starts the command line, or argc. Its arguments belong to the stack command (ping's
// -c is a count there, not a config file), so the common parser must not see them.
int stack_command_start(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-c" || a == "--config" || a == "--set" || a == "--vdev") {
      ++i;  // skip the flag's value
    } else if (a == "--") {
      return argc;
    } else if (a == "stack") {
      return i;
    } else if (a.rfind("-", 0) != 0) {
      return argc;  // another command
    }
  }
  return argc;
}

int main(int argc, char** argv) {
  try {
    const int stack_at = stack_command_start(argc, argv);
    bypass::config::CommonArgs common = bypass::config::parse_common_args(stack_at, argv);
    for (int i = stack_at; i < argc; ++i) common.rest.emplace_back(argv[i]);
    if (common.help_options) {
      std::printf("%s", bypass::config::Registry::global().describe().c_str());
      return 0;
    }
    bool interactive = false, json = false;
    std::vector<std::string> vdevs, command;
    for (size_t i = 0; i < common.rest.size(); ++i) {
      const std::string& a = common.rest[i];
      if (!command.empty()) {
        command.push_back(a);
      } else if (a == "-h" || a == "--help") {
        usage(stdout);
        return 0;
      } else if (a == "-i" || a == "--interactive") {
        interactive = true;
      } else if (a == "--json") {
        json = true;
      } else if (a == "--vdev" || a.rfind("--vdev=", 0) == 0) {
        if (a == "--vdev" && i + 1 >= common.rest.size())
          throw bypass::tools::UsageError("--vdev: needs a device, e.g. net_ring0 or net_tap0,iface=NAME");
        vdevs.push_back(a == "--vdev" ? common.rest[++i] : a.substr(7));
      } else if (a.rfind("-", 0) == 0) {
        throw bypass::tools::UsageError("unknown option '" + a +
                                        "' (expected -c FILE, --set key=value, --vdev DEVICE, --json, -i, --help "
                                        "or --help-options before the command)");
      } else {
        command.push_back(a);
      }
    }
    if (command.empty() && !interactive) {
      usage(stderr);
      return 2;
    }
    if (!command.empty() && interactive)
      throw bypass::tools::UsageError("-i takes no command (type commands at the bypass-pmd> prompt)");
    if (json && interactive)
      throw bypass::tools::UsageError("--json with -i: give --json to each command inside the shell");
    if (json) command.push_back("--json");
    bypass::config::Config config = bypass::config::load_config(common);
    if (!vdevs.empty()) {
      std::vector<std::string> all = config.get_list("dpdk.vdev");
      all.insert(all.end(), vdevs.begin(), vdevs.end());
      config.set("dpdk.vdev", flow_list(all), "--vdev");
    }
    // Every mistake in the command line is reported here, before the EAL starts: a typo costs
    // no DPDK start-up, no log noise and no hugepages.
    std::optional<bypass::tools::ParsedCommand> parsed;
    if (!command.empty()) {
      parsed = bypass::tools::Commands::parse(command, config);
      if (parsed->name == "help") {
        usage(stdout);
        return 0;
      }
    }
    // doctor inspects the host the EAL would run on, so it never starts one.
    if (parsed && parsed->name == "doctor")
      return bypass::tools::doctor::run_command(config, parsed->doctor_root, parsed->json);
    if (parsed && parsed->name == "stack" && config.get_ipv4("dpdk.host_ip").host_order == 0)
      throw bypass::tools::UsageError("stack " + parsed->stack.name +
                                      ": dpdk.host_ip is not set (the stack's IPv4 address; e.g. -c "
                                      "config/examples/dpdk-tap.yaml or --set dpdk.host_ip=10.67.0.2)");
    if (parsed && parsed->name == "stack" && config.get_string("dpdk.host_ipv6").empty() &&
        (parsed->stack.target_ipv6 || parsed->stack.kind == bypass::tools::StackCommand::Kind::Neigh ||
         parsed->stack.peer.family() == AF_INET6))
      throw bypass::tools::UsageError("stack " + parsed->stack.name +
                                      ": dpdk.host_ipv6 is not set (the stack's IPv6 address; e.g. "
                                      "--set dpdk.host_ipv6=fd00:67::2)");
    if (parsed && parsed->name == "stack") {
      // dpdk.host_ipv6 and friends are checked now, not once the EAL has started.
      bypass::inet::InetSettings probe;
      bypass::apply_dpdk_ipv6_options(config, probe);
    }
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    if (parsed && parsed->name == "stack") {
      struct sigaction dump {};
      dump.sa_handler = on_dump_signal;
      sigaction(SIGUSR1, &dump, nullptr);
      const int status = bypass::tools::run_stack_command(parsed->stack, config, g_stop, g_dump, g_stop_signal);
      bypass::pmd::stop_eal();
      return status;
    }
    int status = 0;
    {
      bypass::pmd::PortSet ports(config, std::nullopt, "bypass-pmd");
      bypass::tools::Commands commands(ports, config, g_stop);
      status = interactive ? shell(commands) : commands.run(*parsed);
    }
    bypass::pmd::stop_eal();
    return status;
  } catch (const bypass::tools::UsageError& e) {
    bypass::pmd::stop_eal();  // ports are closed by now; release EAL memory so leak checkers stay quiet
    std::fprintf(stderr, "bypass-pmd: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    bypass::pmd::stop_eal();
    std::fprintf(stderr, "bypass-pmd: %s\n", e.what());
    return 1;
  }
}
