// The transports a build holds, by their `ms.type` name. Each transport's folder defines
// register_<name>_transport(TransportRegistry&); stack/meson.build's `bypass_transports` lists the
// compiled-in ones and generates compiled_transports.cc, which calls each in turn. The calls are
// explicit because a self-registering static initializer in a static library is dropped by the
// linker when nothing else references its object file.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bypass {

namespace config {
class Config;
}
class NetworkStack;

class TransportRegistry {
 public:
  using Factory = std::shared_ptr<NetworkStack> (*)(const config::Config& conf);

  // Adds `name`; a second registration of a name is a programming error (std::logic_error).
  void add(std::string name, Factory factory);
  // The factory registered as `name`, or nullptr.
  Factory find(std::string_view name) const;
  // The registered names in registration order, for error messages: "posix, dpdk, rdma or rsocket".
  std::string describe_names() const;

  // Every transport this build compiled in, registered on first use.
  static const TransportRegistry& compiled_in();

 private:
  std::vector<std::pair<std::string, Factory>> entries_;
};

// Generated (stack/meson.build): calls register_<name>_transport for each compiled-in transport.
void register_compiled_transports(TransportRegistry& registry);

}  // namespace bypass
