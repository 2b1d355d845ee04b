// bypass-pmd flow ...: rte_flow rules as testpmd's `flow` command shows and edits them — list,
// isolate, validate, create, destroy, flush — on the ports the tool opened. Rules live as long as
// the process (a port closes with its rules removed), so create and destroy matter most in the
// interactive shell (-i); with --set dpdk.flow_isolate=true a port starts isolated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmd/flow_rule.h"
#include "pmd/pmd.h"

namespace bypass::tools {

struct FlowCommand {
  enum class Kind { List, Isolate, Validate, Create, Destroy, Flush };
  Kind kind = Kind::List;
  std::optional<uint16_t> port;  // list: all ports when absent
  bool isolate = false;          // isolate: on or off
  std::vector<uint32_t> rule_ids;
  pmd::FlowRule rule;            // validate, create
};

// Parses the words after "flow" (checked before the EAL starts); throws UsageError.
FlowCommand parse_flow_command(const std::vector<std::string>& args);
std::string flow_help();

// Runs it on `ports`; throws pmd::PmdError (one line) when the port refuses. Returns the exit status.
int run_flow_command(pmd::PortSet& ports, const FlowCommand& command, bool json);

}  // namespace bypass::tools
