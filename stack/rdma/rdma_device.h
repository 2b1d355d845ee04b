// One opened verbs device port: context, protection domain, the GID chosen from config.
// Shared by every worker of an RDMA stack (a PD may be used from any thread).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <memory>
#include <string>

#include "config/config.h"

namespace bypass::rdma {

struct DeviceSelection {
  std::string device;      // empty: the first device with an active port
  int port = 1;
  int gid_index = -1;  // -1: auto (rdma.gid_index: auto, gid_selection.h)
  std::string roce_version = "v2";  // checked against the GID's type on Ethernet ports
};

class RdmaDevice {
 public:
  // Throws std::runtime_error with a clear message when there is no usable device ("no RDMA
  // device found", "rdma.device: no device 'mlx5_9' (have: rxe0)", an inactive port, a GID index
  // that is empty or of the wrong RoCE version, no GID for rdma.gid_index: auto to choose).
  static std::shared_ptr<RdmaDevice> open(const DeviceSelection& selection);
  static DeviceSelection selection_from(const config::Config& conf);
  ~RdmaDevice();
  RdmaDevice(const RdmaDevice&) = delete;
  RdmaDevice& operator=(const RdmaDevice&) = delete;

  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& name() const { return name_; }
  uint8_t port() const { return port_; }
  int gid_index() const { return gid_index_; }
  const ibv_gid& gid() const { return gid_; }
  uint16_t lid() const { return lid_; }
  ibv_mtu active_mtu() const { return active_mtu_; }
  bool is_ethernet() const { return ethernet_; }
  const ibv_device_attr& attributes() const { return attr_; }

 private:
  RdmaDevice() = default;

  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  std::string name_;
  uint8_t port_ = 1;
  int gid_index_ = 0;
  ibv_gid gid_{};
  uint16_t lid_ = 0;
  ibv_mtu active_mtu_ = IBV_MTU_1024;
  bool ethernet_ = false;
  ibv_device_attr attr_{};
};

}  // namespace bypass::rdma
