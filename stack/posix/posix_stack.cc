// The posix NetworkStack and Worker: listen/connect on kernel sockets, epoll per worker.
#include "stack/posix/posix_stack_impl.h"

namespace bypass {

template class StreamWorker<KernelSocketCalls>;
template class StreamNetworkStack<KernelSocketCalls>;

std::shared_ptr<NetworkStack> make_posix_stack(const config::Config& conf) {
  return std::make_shared<PosixNetworkStack>(conf);
}

void register_posix_transport(TransportRegistry& registry) { registry.add("posix", make_posix_stack); }

}  // namespace bypass
