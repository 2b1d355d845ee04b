// The posix transport's sockets: the stream sockets of posix_socket.h over the kernel's calls.
#include "stack/posix/posix_socket_impl.h"

namespace bypass {

template int apply_socket_options<KernelSocketCalls>(int fd, const SocketOptions& opts);
template class StreamConnectedSocket<KernelSocketCalls>;
template class StreamServerSocket<KernelSocketCalls>;

}  // namespace bypass
