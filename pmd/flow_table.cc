#include "pmd/flow_table.h"

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "base/log.h"

namespace bypass::pmd {

namespace {

rte_be32_t be32(uint32_t host_order) { return rte_cpu_to_be_32(host_order); }

// A FlowRule as the rte_flow arrays a driver reads. The items and actions point into the object
// itself, so it is built in place and never copied.
class RteRule {
 public:
  RteRule(const FlowRule& rule, const std::vector<uint8_t>& rss_key) {
    attr_.group = rule.group;
    attr_.priority = rule.priority;
    attr_.ingress = 1;
    const bool eth_fields = rule.eth.dst || rule.eth.src || rule.eth.type;
    if (rule.eth.dst) {
      std::memcpy(eth_spec_.dst.addr_bytes, rule.eth.dst->value.data(), 6);
      std::memcpy(eth_mask_.dst.addr_bytes, rule.eth.dst->mask.data(), 6);
    }
    if (rule.eth.src) {
      std::memcpy(eth_spec_.src.addr_bytes, rule.eth.src->value.data(), 6);
      std::memcpy(eth_mask_.src.addr_bytes, rule.eth.src->mask.data(), 6);
    }
    if (rule.eth.type) {
      eth_spec_.type = rte_cpu_to_be_16(*rule.eth.type);
      eth_mask_.type = 0xffff;
    }
    add(RTE_FLOW_ITEM_TYPE_ETH, "eth", eth_fields ? &eth_spec_ : nullptr, eth_fields ? &eth_mask_ : nullptr);
    switch (rule.network) {
      case FlowRule::Network::Ipv4:
        if (rule.ipv4.src) {
          ipv4_spec_.hdr.src_addr = be32(rule.ipv4.src->value);
          ipv4_mask_.hdr.src_addr = be32(rule.ipv4.src->mask);
        }
        if (rule.ipv4.dst) {
          ipv4_spec_.hdr.dst_addr = be32(rule.ipv4.dst->value);
          ipv4_mask_.hdr.dst_addr = be32(rule.ipv4.dst->mask);
        }
        if (rule.ipv4.proto) {
          ipv4_spec_.hdr.next_proto_id = *rule.ipv4.proto;
          ipv4_mask_.hdr.next_proto_id = 0xff;
        }
        add(RTE_FLOW_ITEM_TYPE_IPV4, "ipv4", &ipv4_spec_, &ipv4_mask_);
        break;
      case FlowRule::Network::Ipv6:
        if (rule.ipv6.src) {
          std::memcpy(ipv6_spec_.hdr.src_addr, rule.ipv6.src->value.data(), 16);
          std::memcpy(ipv6_mask_.hdr.src_addr, rule.ipv6.src->mask.data(), 16);
        }
        if (rule.ipv6.dst) {
          std::memcpy(ipv6_spec_.hdr.dst_addr, rule.ipv6.dst->value.data(), 16);
          std::memcpy(ipv6_mask_.hdr.dst_addr, rule.ipv6.dst->mask.data(), 16);
        }
        if (rule.ipv6.proto) {
          ipv6_spec_.hdr.proto = *rule.ipv6.proto;
          ipv6_mask_.hdr.proto = 0xff;
        }
        add(RTE_FLOW_ITEM_TYPE_IPV6, "ipv6", &ipv6_spec_, &ipv6_mask_);
        break;
      case FlowRule::Network::Arp:
        if (rule.arp.spa) {
          arp_spec_.spa = be32(*rule.arp.spa);
          arp_mask_.spa = 0xffffffffu;
        }
        if (rule.arp.tpa) {
          arp_spec_.tpa = be32(*rule.arp.tpa);
          arp_mask_.tpa = 0xffffffffu;
        }
        add(RTE_FLOW_ITEM_TYPE_ARP_ETH_IPV4, "arp_eth_ipv4", &arp_spec_, &arp_mask_);
        break;
      case FlowRule::Network::None: break;
    }
    if (rule.transport != FlowRule::Transport::None) {
      const bool tcp = rule.transport == FlowRule::Transport::Tcp;
      // rte_tcp_hdr and rte_udp_hdr both name their ports src_port and dst_port.
      auto ports = [&](auto& spec, auto& mask) {
        if (rule.ports.src) {
          spec.src_port = rte_cpu_to_be_16(*rule.ports.src);
          mask.src_port = 0xffff;
        }
        if (rule.ports.dst) {
          spec.dst_port = rte_cpu_to_be_16(*rule.ports.dst);
          mask.dst_port = 0xffff;
        }
      };
      if (tcp) {
        ports(tcp_spec_.hdr, tcp_mask_.hdr);
        add(RTE_FLOW_ITEM_TYPE_TCP, "tcp", &tcp_spec_, &tcp_mask_);
      } else {
        ports(udp_spec_.hdr, udp_mask_.hdr);
        add(RTE_FLOW_ITEM_TYPE_UDP, "udp", &udp_spec_, &udp_mask_);
      }
    }
    items_[count_].type = RTE_FLOW_ITEM_TYPE_END;

    switch (rule.fate) {
      case FlowRule::Fate::Queue:
        queue_.index = rule.queue;
        actions_[0] = {RTE_FLOW_ACTION_TYPE_QUEUE, &queue_};
        break;
      case FlowRule::Fate::Rss:
        rss_queues_ = rule.rss_queues;
        rss_key_ = rss_key;
        rss_.func = RTE_ETH_HASH_FUNCTION_DEFAULT;
        rss_.level = 0;
        rss_.types = rule.network == FlowRule::Network::Ipv4   ? RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP
                     : rule.network == FlowRule::Network::Ipv6 ? RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP
                                                               : RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP;
        rss_.key_len = static_cast<uint32_t>(rss_key_.size());
        rss_.key = rss_key_.data();
        rss_.queue_num = static_cast<uint32_t>(rss_queues_.size());
        rss_.queue = rss_queues_.data();
        actions_[0] = {RTE_FLOW_ACTION_TYPE_RSS, &rss_};
        break;
      case FlowRule::Fate::Drop: actions_[0] = {RTE_FLOW_ACTION_TYPE_DROP, nullptr}; break;
      case FlowRule::Fate::Passthru: actions_[0] = {RTE_FLOW_ACTION_TYPE_PASSTHRU, nullptr}; break;
    }
    actions_[1] = {RTE_FLOW_ACTION_TYPE_END, nullptr};
  }
  RteRule(const RteRule&) = delete;
  RteRule& operator=(const RteRule&) = delete;

  const rte_flow_attr* attr() const { return &attr_; }
  const rte_flow_item* items() const { return items_.data(); }
  const rte_flow_action* actions() const { return actions_.data(); }

  // One line from the driver's rte_flow_error: its message, errno, and what it points at.
  std::string explain(const rte_flow_error& error, int rc) const {
    const int code = rc < 0 ? -rc : rc;
    // rte_flow answers ENOSYS for a driver without flow operations (net_ring, net_memif, af_packet).
    if (code == ENOSYS) return "the driver has no rte_flow support";
    const std::string reason = rte_strerror(code);
    std::string text = error.message ? error.message : "refused";
    if (text != reason) text += " (" + reason + ")";
    switch (error.type) {
      case RTE_FLOW_ERROR_TYPE_ITEM:
      case RTE_FLOW_ERROR_TYPE_ITEM_SPEC:
      case RTE_FLOW_ERROR_TYPE_ITEM_MASK:
      case RTE_FLOW_ERROR_TYPE_ITEM_LAST: {
        std::string where = " at a pattern item";
        for (size_t i = 0; i < count_; ++i)
          if (error.cause == &items_[i]) where = " at pattern item " + std::to_string(i + 1) + " (" + names_[i] + ")";
        text += where;
        break;
      }
      case RTE_FLOW_ERROR_TYPE_ACTION:
      case RTE_FLOW_ERROR_TYPE_ACTION_CONF: text += " at the action"; break;
      case RTE_FLOW_ERROR_TYPE_ATTR:
      case RTE_FLOW_ERROR_TYPE_ATTR_GROUP:
      case RTE_FLOW_ERROR_TYPE_ATTR_PRIORITY:
      case RTE_FLOW_ERROR_TYPE_ATTR_INGRESS: text += " at the attributes (group, priority, ingress)"; break;
      default: break;
    }
    return text;
  }

 private:
  void add(rte_flow_item_type type, const char* name, const void* spec, const void* mask) {
    items_[count_] = {type, spec, nullptr, mask};
    names_[count_] = name;
    ++count_;
  }

  rte_flow_attr attr_{};
  rte_flow_item_eth eth_spec_{}, eth_mask_{};
  rte_flow_item_ipv4 ipv4_spec_{}, ipv4_mask_{};
  rte_flow_item_ipv6 ipv6_spec_{}, ipv6_mask_{};
  rte_flow_item_arp_eth_ipv4 arp_spec_{}, arp_mask_{};
  rte_flow_item_tcp tcp_spec_{}, tcp_mask_{};
  rte_flow_item_udp udp_spec_{}, udp_mask_{};
  rte_flow_action_queue queue_{};
  rte_flow_action_rss rss_{};
  std::vector<uint16_t> rss_queues_;
  std::vector<uint8_t> rss_key_;
  std::array<rte_flow_item, 4> items_{};  // eth, network, transport, end
  std::array<const char*, 4> names_{};
  size_t count_ = 0;
  std::array<rte_flow_action, 2> actions_{};
};

}  // namespace

FlowTable::FlowTable(uint16_t port_id, std::string label, std::vector<uint8_t> rss_key)
    : port_id_(port_id), label_(std::move(label)), rss_key_(std::move(rss_key)) {}

FlowTable::~FlowTable() { destroy_all(); }

std::string FlowTable::validate(const FlowRule& rule) const {
  const RteRule rte(rule, rss_key_);
  rte_flow_error error{};
  const int rc = rte_flow_validate(port_id_, rte.attr(), rte.items(), rte.actions(), &error);
  return rc == 0 ? std::string() : rte.explain(error, rc);
}

std::optional<uint32_t> FlowTable::create(const FlowRule& rule, std::string& error) {
  error = validate(rule);
  if (!error.empty()) return std::nullopt;
  const RteRule rte(rule, rss_key_);
  rte_flow_error flow_error{};
  rte_flow* handle = rte_flow_create(port_id_, rte.attr(), rte.items(), rte.actions(), &flow_error);
  if (handle == nullptr) {
    // Some drivers accept a rule they then fail to install (net_tap's RSS loads a BPF program
    // only here): the creation's own error is the one to report.
    error = rte.explain(flow_error, rte_errno);
    return std::nullopt;
  }
  entries_.push_back({next_id_, rule, handle});
  BYPASS_LOG(Debug, "pmd", "%s: flow rule %u created: %s", label_.c_str(), next_id_, rule.to_string().c_str());
  return next_id_++;
}

bool FlowTable::destroy(uint32_t id, std::string& error) {
  const auto entry = std::find_if(entries_.begin(), entries_.end(), [id](const Entry& e) { return e.id == id; });
  if (entry == entries_.end()) {
    error = label_ + " has no flow rule " + std::to_string(id);
    return false;
  }
  rte_flow_error flow_error{};
  const int rc = rte_flow_destroy(port_id_, entry->handle, &flow_error);
  entries_.erase(entry);
  if (rc == 0) return true;
  error = label_ + ": flow rule " + std::to_string(id) + " not removed: " +
          (flow_error.message ? flow_error.message : "refused") + " (" + rte_strerror(-rc) + ")";
  return false;
}

void FlowTable::destroy_all() {
  // Newest first, the reverse of creation, as a driver that chains rules expects.
  while (!entries_.empty()) {
    std::string error;
    if (!destroy(entries_.back().id, error)) BYPASS_LOG(Warn, "pmd", "%s", error.c_str());
  }
}

std::string set_flow_isolation(uint16_t port_id, bool on) {
  rte_flow_error error{};
  const int rc = rte_flow_isolate(port_id, on ? 1 : 0, &error);
  if (rc == 0) return "";
  if (rc == -ENOSYS) return "the driver has no rte_flow support";
  const std::string code = rte_strerror(-rc);
  const std::string message = error.message ? error.message : "refused";
  return message == code ? message : message + " (" + code + ")";
}

}  // namespace bypass::pmd
