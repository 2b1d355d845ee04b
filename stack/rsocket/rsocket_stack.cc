// The rsocket transport: the posix transport's sockets, worker and stack instantiated over
// RsocketCalls.
#include "stack/rsocket/rsocket_stack.h"

#include <rdma/rdma_cma.h>

#include <stdexcept>

#include "stack/posix/posix_socket_impl.h"
#include "stack/posix/posix_stack_impl.h"
#include "stack/rsocket/rsocket_calls.h"

namespace bypass {

void RsocketCalls::configure(const config::Config& conf) {
  int devices = 0;
  ibv_context** list = rdma_get_devices(&devices);
  if (list != nullptr) rdma_free_devices(list);
  if (devices == 0) {
    throw std::runtime_error(
        "ms.type=rsocket: no RDMA device on this machine (rsockets run over RDMA connections; "
        "soft-RoCE: rdma link add rxe0 type rxe netdev IFACE)");
  }
  set_rsocket_service_room(static_cast<int>(conf.get_int("rsocket.max_listeners")),
                           static_cast<int>(conf.get_int("rsocket.max_connections")));
}

template int apply_socket_options<RsocketCalls>(int fd, const SocketOptions& opts);
template class StreamConnectedSocket<RsocketCalls>;
template class StreamServerSocket<RsocketCalls>;
template class StreamWorker<RsocketCalls>;
template class StreamNetworkStack<RsocketCalls>;

std::shared_ptr<NetworkStack> make_rsocket_stack(const config::Config& conf) {
  return std::make_shared<StreamNetworkStack<RsocketCalls>>(conf);
}

void register_rsocket_transport(TransportRegistry& registry) { registry.add("rsocket", make_rsocket_stack); }

}  // namespace bypass
