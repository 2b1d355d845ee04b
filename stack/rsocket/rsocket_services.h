// rlisten, rconnect, raccept and rclose, kept within what librdmacm's service threads hold safely.
//
// librdmacm (rsocket.c) hands every listening rsocket to its listen service thread, and every
// rsocket whose connect goes on in the background (rconnect -> EINPROGRESS) and every accepted one
// (raccept) to its connection service thread, until rclose. Such a thread polls an array of its
// rsockets that is reallocated when one joins a full array, and in rdma-core 44 (Debian 12; fixed
// upstream by rdma-core PR 1484, July 2024) the thread keeps polling the freed array: garbage fds,
// then the thread blocked for good in rdma_get_cm_event, and every later rclose with it. ASan in
// the soft-RoCE guest reports the read of the freed array as soon as a 4th connection (outgoing
// and accepted alike) or a 4th listener joins.
//
// The array is also grown, safely, each time its thread starts (by 4 places, one of them the
// thread's control socket), and the thread starts when an rsocket joins an empty service and ends
// when the last one leaves. So before an rsocket joins an empty service, these calls grow it to
// the room configured by joining and closing throwaway rsockets (a connect to port 0 of the same
// address, which never becomes a connection; a listen on port 0), and they refuse (EMFILE) an
// rsocket for which no room is left instead of letting librdmacm corrupt the process. They count
// exactly because every change of membership goes through them, one at a time (librdmacm
// serializes its service requests under one lock anyway). Process-wide, like the threads.
//
// (A second flaw of that rpoll(), a finite timeout that runs out inside it, is the rpoll driver's
// to avoid: rpoll_driver.cc.)
#pragma once

#include <sys/socket.h>

namespace bypass {

// Room wanted in each service: rsocket.max_listeners, rsocket.max_connections (0: no limit and no
// growing, for a librdmacm without the flaw). The last stack created decides.
void set_rsocket_service_room(int listeners, int connections);

// rlisten, rconnect, raccept and rclose with the bookkeeping above; libc contract (-1 and errno,
// EMFILE when the service has no room left).
int rsocket_listen(int fd, int backlog);
int rsocket_connect(int fd, const sockaddr* addr, socklen_t len);
int rsocket_accept(int fd, sockaddr* peer, socklen_t* len);
int rsocket_close(int fd);

}  // namespace bypass
