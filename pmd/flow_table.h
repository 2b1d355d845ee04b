// The rte_flow rules of one port: validate, create, destroy and list them, and switch the port's
// isolated mode (rte_flow_isolate: only traffic a rule claims reaches the application, the rest
// stays with the kernel on a bifurcated driver such as mlx5, or with net_tap's remote netdev).
//
// rte_flow has no call that lists a port's rules, so the table keeps what it created (with testpmd's
// numbering: ids from 0, never reused) and destroys all of it when it goes: rules end with the
// process even on its error paths. Control path only: none of this runs per packet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmd/flow_rule.h"

struct rte_flow;

namespace bypass::pmd {

class FlowTable {
 public:
  struct Entry {
    uint32_t id;
    FlowRule rule;
    rte_flow* handle;
  };

  // `label` names the port in messages ("port 0 (net_tap0)"); `rss_key` is what RSS actions hash
  // with (the port's symmetric key, so both directions of a connection land alike).
  FlowTable(uint16_t port_id, std::string label, std::vector<uint8_t> rss_key);
  ~FlowTable();  // destroys every rule still in the table
  FlowTable(const FlowTable&) = delete;
  FlowTable& operator=(const FlowTable&) = delete;

  // Empty when the port would accept the rule, else why not in one line (the driver's words and
  // what it points at: "item not supported (pattern item 2, arp_eth_ipv4)").
  std::string validate(const FlowRule& rule) const;
  // Validates and creates; the new rule's id, or nullopt with `error` set as validate() does.
  std::optional<uint32_t> create(const FlowRule& rule, std::string& error);
  // False with `error` set when there is no such rule or the driver refuses to remove it (the
  // entry is dropped either way: the driver no longer knows the handle).
  bool destroy(uint32_t id, std::string& error);
  void destroy_all();
  const std::vector<Entry>& entries() const { return entries_; }
  const std::string& label() const { return label_; }

 private:
  uint16_t port_id_;
  std::string label_;
  std::vector<uint8_t> rss_key_;
  std::vector<Entry> entries_;
  uint32_t next_id_ = 0;
};

// rte_flow_isolate(port, on): empty when done, else why not in one line.
std::string set_flow_isolation(uint16_t port_id, bool on);

}  // namespace bypass::pmd
