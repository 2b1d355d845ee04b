#include "tools/bypass-pmd/flow_commands.h"

#include <cstdio>

#include "tools/bypass-pmd/commands.h"
#include "tools/bypass-pmd/json.h"

namespace bypass::tools {

namespace {

uint16_t port_arg(const std::string& command, const std::vector<std::string>& args) {
  if (args.size() < 2) throw UsageError("flow " + command + ": needs a port id (e.g. flow " + command + " 0 ...)");
  return static_cast<uint16_t>(number_arg("flow " + command + " PORT", args[1], 0, 1023));
}

pmd::Port& find_port(pmd::PortSet& ports, uint16_t id) {
  for (auto& port : ports.ports())
    if (port->id() == id) return *port;
  throw pmd::PmdError("flow: no port " + std::to_string(id) + " (" + std::to_string(ports.ports().size()) +
                      " ports open; see `bypass-pmd ports`)");
}

std::string port_text(const pmd::Port& port) {
  return "port " + std::to_string(port.id()) + " (" + port.info().name + ")";
}

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

int list(pmd::PortSet& ports, const FlowCommand& command, bool json) {
  if (command.port) find_port(ports, *command.port);  // a port asked for by id must exist
  Json j;
  j.begin_object().key("ports").begin_array();
  for (auto& port : ports.ports()) {
    if (command.port && port->id() != *command.port) continue;
    const auto& entries = port->flows().entries();
    if (json) {
      j.begin_object().field("port", unsigned{port->id()}).field("name", port->info().name)
          .field("isolated", port->info().flow_isolated).key("rules").begin_array();
      for (const auto& e : entries)
        j.begin_object().field("id", e.id).field("group", e.rule.group).field("priority", e.rule.priority)
            .field("summary", e.rule.summary()).field("rule", e.rule.to_string()).end_object();
      j.end_array().end_object();
      continue;
    }
    say(port_text(*port) + ": " + (port->info().flow_isolated ? "isolated" : "not isolated") + ", " +
        std::to_string(entries.size()) + " flow rules");
    if (entries.empty()) continue;
    say("ID\tGroup\tPrio\tAttr\tRule");
    for (const auto& e : entries)
      say(std::to_string(e.id) + "\t" + std::to_string(e.rule.group) + "\t" + std::to_string(e.rule.priority) +
          "\ti--\t" + e.rule.summary() + "\t(" + e.rule.to_string() + ")");
  }
  if (json) say(j.end_array().end_object().str());
  return 0;
}

}  // namespace

std::string flow_help() {
  return "  flow list [PORT]                      rte_flow rules this process created, isolated mode\n"
         "  flow isolate PORT on|off              rte_flow isolated mode (only ruled traffic arrives)\n"
         "  flow validate|create PORT [group N] [priority N] ingress pattern ITEM / ... / end\n"
         "       actions queue index N | rss queues N... end | drop | passthru / end   (testpmd syntax;\n"
         "       items: eth dst|src|type, ipv4|ipv6 src|dst|proto, arp_eth_ipv4 spa|tpa, tcp|udp src|dst;\n"
         "       FIELD is VALUE, FIELD spec VALUE FIELD mask MASK, FIELD prefix BITS)\n"
         "  flow destroy PORT rule ID [rule ID]...   flow flush PORT\n";
}

FlowCommand parse_flow_command(const std::vector<std::string>& args) {
  FlowCommand c;
  if (args.empty()) throw UsageError("flow: needs a command: list, isolate, validate, create, destroy or flush");
  const std::string& name = args[0];
  if (name == "list") {
    c.kind = FlowCommand::Kind::List;
    if (args.size() > 2) throw UsageError("flow list: unexpected argument '" + args[2] + "'");
    if (args.size() == 2) c.port = port_arg(name, args);
  } else if (name == "isolate") {
    c.kind = FlowCommand::Kind::Isolate;
    c.port = port_arg(name, args);
    const std::string mode = args.size() > 2 ? args[2] : "";
    if (mode == "on" || mode == "true" || mode == "1") c.isolate = true;
    else if (mode == "off" || mode == "false" || mode == "0") c.isolate = false;
    else throw UsageError("flow isolate PORT: expected on or off, got '" + mode + "'");
    if (args.size() > 3) throw UsageError("flow isolate: unexpected argument '" + args[3] + "'");
  } else if (name == "validate" || name == "create") {
    c.kind = name == "create" ? FlowCommand::Kind::Create : FlowCommand::Kind::Validate;
    c.port = port_arg(name, args);
    try {
      c.rule = pmd::parse_flow_rule(std::vector<std::string>(args.begin() + 2, args.end()));
    } catch (const std::invalid_argument& e) {
      throw UsageError("flow " + name + ": " + e.what());
    }
  } else if (name == "destroy") {
    c.kind = FlowCommand::Kind::Destroy;
    c.port = port_arg(name, args);
    for (size_t i = 2; i < args.size(); ++i) {
      if (args[i] == "rule") continue;  // testpmd writes "destroy 0 rule 3 rule 4"
      c.rule_ids.push_back(static_cast<uint32_t>(number_arg("flow destroy rule", args[i], 0, UINT32_MAX)));
    }
    if (c.rule_ids.empty()) throw UsageError("flow destroy PORT: needs rule IDs (flow destroy 0 rule 3)");
  } else if (name == "flush") {
    c.kind = FlowCommand::Kind::Flush;
    c.port = port_arg(name, args);
    if (args.size() > 2) throw UsageError("flow flush: unexpected argument '" + args[2] + "'");
  } else {
    throw UsageError("flow: unknown command '" + name + "' (expected list, isolate, validate, create, destroy or flush)");
  }
  return c;
}

int run_flow_command(pmd::PortSet& ports, const FlowCommand& c, bool json) {
  if (c.kind == FlowCommand::Kind::List) return list(ports, c, json);
  pmd::Port& port = find_port(ports, *c.port);
  pmd::FlowTable& table = port.flows();
  const unsigned id = port.id();
  switch (c.kind) {
    case FlowCommand::Kind::List: break;
    case FlowCommand::Kind::Isolate:
      port.set_flow_isolated(c.isolate);
      say(json ? Json().begin_object().field("port", id).field("isolated", c.isolate).end_object().str()
               : "Ingress traffic on " + port_text(port) + (c.isolate ? " is now restricted to the defined flow rules"
                                                                      : " is no longer restricted to flow rules"));
      return 0;
    case FlowCommand::Kind::Validate:
    case FlowCommand::Kind::Create: {
      const bool create = c.kind == FlowCommand::Kind::Create;
      std::string error;
      std::optional<uint32_t> rule_id;
      if (create) rule_id = table.create(c.rule, error);
      else error = table.validate(c.rule);
      if (!error.empty())
        throw pmd::PmdError("flow " + std::string(create ? "create" : "validate") + ": " + port_text(port) +
                            " refuses the rule: " + error);
      if (json) {
        Json j;
        j.begin_object().field("port", id);
        if (create) j.field("created", *rule_id);
        else j.field("valid", true);
        say(j.field("rule", c.rule.to_string()).end_object().str());
      } else {
        say(create ? "Flow rule #" + std::to_string(*rule_id) + " created" : std::string("Flow rule validated"));
      }
      return 0;
    }
    case FlowCommand::Kind::Destroy:
      for (uint32_t rule : c.rule_ids) {
        std::string error;
        if (!table.destroy(rule, error)) throw pmd::PmdError("flow destroy: " + error);
        say(json ? Json().begin_object().field("port", id).field("destroyed", rule).end_object().str()
                 : "Flow rule #" + std::to_string(rule) + " destroyed");
      }
      return 0;
    case FlowCommand::Kind::Flush: {
      const size_t count = table.entries().size();
      table.destroy_all();
      say(json ? Json().begin_object().field("port", id).field("destroyed", uint64_t{count}).end_object().str()
               : std::to_string(count) + " flow rules destroyed on " + port_text(port));
      return 0;
    }
  }
  return 0;
}

}  // namespace bypass::tools
