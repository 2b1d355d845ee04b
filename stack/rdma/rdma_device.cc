#include "stack/rdma/rdma_device.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/host_files.h"
#include "base/log.h"
#include "stack/rdma/gid_selection.h"

namespace bypass::rdma {

namespace {

std::runtime_error device_error(const std::string& message) {
  return std::runtime_error("ms.type=rdma: " + message);
}

// rdma.gid_index: auto, from the port's GID table (gid_selection.h).
int auto_gid_index(const std::vector<GidEntry>* table, const std::string& device, const DeviceSelection& selection,
                   bool ethernet) {
  const std::string where = device + " port " + std::to_string(selection.port);
  if (table == nullptr)
    throw device_error("rdma.gid_index: auto: cannot read the GID table of " + where + " (/sys/class/infiniband/" +
                       device + "/ports/" + std::to_string(selection.port) + "/gids); set rdma.gid_index to a number");
  const GidChoice choice = choose_gid(*table, ethernet, selection.roce_version);
  if (choice.index < 0) throw device_error("rdma.gid_index: auto: " + where + ": " + choice.error);
  return choice.index;
}

bool port_active(ibv_context* ctx, int port, ibv_port_attr* attr) {
  return ibv_query_port(ctx, static_cast<uint8_t>(port), attr) == 0 && attr->state == IBV_PORT_ACTIVE;
}

}  // namespace

DeviceSelection RdmaDevice::selection_from(const config::Config& conf) {
  DeviceSelection s;
  s.device = conf.get_string("rdma.device");
  s.port = static_cast<int>(conf.get_int("rdma.port"));
  s.gid_index = static_cast<int>(conf.get_int_or_auto("rdma.gid_index").value_or(-1));
  s.roce_version = conf.get_string("rdma.roce_version");
  return s;
}

std::shared_ptr<RdmaDevice> RdmaDevice::open(const DeviceSelection& selection) {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr || count == 0) {
    if (list) ibv_free_device_list(list);
    const std::string wanted =
        selection.device.empty() ? std::string() : "rdma.device: '" + selection.device + "': ";
    throw device_error(wanted +
        "no RDMA device found (no /sys/class/infiniband entries; load a driver or create a "
        "soft-RoCE device: rdma link add rxe0 type rxe netdev IFACE)");
  }
  std::unique_ptr<ibv_device*, void (*)(ibv_device**)> guard(list, ibv_free_device_list);
  std::string names;
  std::shared_ptr<RdmaDevice> dev(new RdmaDevice);
  for (int i = 0; i < count; ++i) {
    const std::string name = ibv_get_device_name(list[i]);
    names += (names.empty() ? "" : ", ") + name;
    if (!selection.device.empty() && name != selection.device) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) {
      if (!selection.device.empty())
        throw device_error("rdma.device: cannot open " + name + ": " + strerror(errno));
      continue;
    }
    ibv_port_attr pattr{};
    if (!port_active(ctx, selection.port, &pattr)) {
      ibv_close_device(ctx);
      if (!selection.device.empty())
        throw device_error("rdma.port: port " + std::to_string(selection.port) + " of " + name +
                           " is missing or not active");
      continue;
    }
    dev->context_ = ctx;
    dev->name_ = name;
    dev->lid_ = pattr.lid;
    dev->active_mtu_ = pattr.active_mtu;
    dev->ethernet_ = pattr.link_layer == IBV_LINK_LAYER_ETHERNET;
    break;
  }
  if (dev->context_ == nullptr) {
    if (!selection.device.empty())
      throw device_error("rdma.device: no device '" + selection.device + "' (have: " + names + ")");
    throw device_error("no RDMA device with an active port " + std::to_string(selection.port) +
                       " (have: " + names + ")");
  }
  dev->port_ = static_cast<uint8_t>(selection.port);
  // The kernel publishes each GID's type ("IB/RoCE v1" or "RoCE v2") in sysfs; verbs only gained
  // ibv_query_gid_ex later, and sysfs works with every rdma-core we target.
  const auto table = read_gid_table(HostFiles(), dev->name_, selection.port);
  const int index = selection.gid_index >= 0 ? selection.gid_index
                                             : auto_gid_index(table ? &*table : nullptr, dev->name_, selection,
                                                              dev->ethernet_);
  dev->gid_index_ = index;
  if (ibv_query_gid(dev->context_, dev->port_, index, &dev->gid_) != 0) {
    throw device_error("rdma.gid_index: cannot read GID " + std::to_string(index) +
                       " of " + dev->name_ + ": " + strerror(errno));
  }
  static const uint8_t zero[16] = {};
  if (dev->ethernet_) {
    if (std::memcmp(dev->gid_.raw, zero, 16) == 0) {
      throw device_error("rdma.gid_index: GID " + std::to_string(index) + " of " +
                         dev->name_ + " port " + std::to_string(selection.port) +
                         " is empty (is an IP address configured on its netdev?)");
    }
    std::string type;
    if (table) {
      const auto entry = std::find_if(table->begin(), table->end(), [&](const GidEntry& e) { return e.index == index; });
      if (entry != table->end()) type = entry->type;
    }
    if (!type.empty() && !gid_type_matches(type, selection.roce_version)) {
      throw device_error("rdma.roce_version: GID " + std::to_string(index) + " of " +
                         dev->name_ + " is '" + type + "', not RoCE " + selection.roce_version +
                         " (pick another rdma.gid_index, or auto)");
    }
  }
  if (ibv_query_device(dev->context_, &dev->attr_) != 0) {
    throw device_error("cannot query " + dev->name_ + ": " + strerror(errno));
  }
  dev->pd_ = ibv_alloc_pd(dev->context_);
  if (dev->pd_ == nullptr) throw device_error("cannot allocate a protection domain on " + dev->name_);
  BYPASS_LOG(Info, "rdma", "using %s port %u gid index %d%s: %s (mtu %d)", dev->name_.c_str(), dev->port_,
             dev->gid_index_, selection.gid_index < 0 ? " (auto)" : "",
             gid_address_text(std::to_array(dev->gid_.raw)).c_str(), 128 << dev->active_mtu_);
  return dev;
}

RdmaDevice::~RdmaDevice() {
  if (pd_ != nullptr && ibv_dealloc_pd(pd_) != 0)
    BYPASS_LOG(Error, "rdma", "%s: protection domain still in use at shutdown", name_.c_str());
  if (context_ != nullptr) ibv_close_device(context_);
}

}  // namespace bypass::rdma
