// Process-wide room in librdmacm's service threads (see the header). Taken on listen, connect,
// accept and close only, never per message, so one mutex serves.
#include "stack/rsocket/rsocket_services.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/log.h"

namespace bypass {

namespace {

enum Kind : uint8_t { kListen = 0, kConnection = 1, kNone = 2 };
// The array a service thread starts with, and what every later start adds (librdmacm's
// cm_svc_run grows it by 4); one place holds the thread's control socket.
constexpr int kPlacesPerStart = 4;

struct Service {
  int wanted = 0;   // room to grow to before an rsocket joins the empty service; 0 = no limit
  int members = 0;  // rsockets of ours in the service
  int starts = 0;   // thread starts we caused (each grew its array)
  bool warned = false;  // a refusal was logged since the last place came free

  int room() const { return kPlacesPerStart * starts - 1; }
};

struct Services {
  std::mutex mutex;  // held across each call that changes membership
  std::array<Service, 2> by_kind;
  std::vector<uint8_t> kind_of_fd;  // kNone, or the service the fd belongs to
};

Services& services() {
  static Services instance;
  return instance;
}

const char* name_of(Kind kind) { return kind == kListen ? "listening" : "connection"; }

// `address` with port 0: nobody listens there, so a throwaway connect that got as far as a
// connection request would only be rejected.
sockaddr_storage port_zero(const sockaddr_storage& address) {
  sockaddr_storage out = address;
  if (out.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&out)->sin_port = 0;
  if (out.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&out)->sin6_port = 0;
  return out;
}

// One throwaway rsocket joins the empty service (starting its thread, which grows the array) and
// leaves it (ending the thread). False when it could not join.
bool join_and_leave(Kind kind, const sockaddr_storage& address, socklen_t len) {
  const int fd = rsocket(address.ss_family, SOCK_STREAM, 0);
  if (fd < 0) return false;
  bool joined = false;
  const auto* sa = reinterpret_cast<const sockaddr*>(&address);
  if (kind == kListen) {
    joined = rbind(fd, sa, len) == 0 && rlisten(fd, 1) == 0;
  } else if (rfcntl(fd, F_SETFL, O_NONBLOCK) == 0) {
    joined = rconnect(fd, sa, len) != 0 && errno == EINPROGRESS;
  }
  rclose(fd);
  return joined;
}

// A connect towards a local address may resolve, connect and be refused before rconnect returns
// (the kernel's resolution work can finish first), and then never joins: seen for 8 tries in a row
// in the soft-RoCE guest, so up to 32 (a try costs about a connection set-up). A round that never
// joins leaves the room where it is, and the limit holds at that.
bool start_once(Kind kind, const sockaddr_storage& address, socklen_t len) {
  constexpr int kTries = 32;
  for (int i = 0; i < kTries; ++i) {
    if (join_and_leave(kind, address, len)) return true;
  }
  return false;
}

// Before an rsocket joins: grows an empty service towards its room, then takes a place. Called
// with the mutex held; false and errno EMFILE when there is no room.
bool take_place(Services& all, Kind kind, const sockaddr_storage& address, socklen_t len) {
  Service& s = all.by_kind[kind];
  if (s.wanted == 0) return true;
  if (s.members == 0) {
    const sockaddr_storage target = port_zero(address);
    while (s.room() + kPlacesPerStart < s.wanted) {  // the joining rsocket adds one more start
      if (!start_once(kind, target, len)) {
        BYPASS_LOG(Warn, "rsocket", "librdmacm's %s service stays at %d rsockets: a throwaway rsocket could not join (%s)",
                   name_of(kind), s.room() + kPlacesPerStart, std::strerror(errno));
        break;
      }
      ++s.starts;
    }
  }
  const int room = s.members == 0 ? s.room() + kPlacesPerStart : s.room();
  if (s.members < room) return true;
  if (!s.warned) {
    s.warned = true;
    BYPASS_LOG(Warn, "rsocket", "refusing an rsocket (%s): %d are open, all librdmacm's service thread holds safely (rsocket.max_%s)",
               name_of(kind), s.members, kind == kListen ? "listeners" : "connections");
  }
  errno = EMFILE;
  return false;
}

// The rsocket `fd` joined: its thread started if the service was empty.
void joined(Services& all, Kind kind, int fd) {
  Service& s = all.by_kind[kind];
  if (s.members++ == 0) ++s.starts;
  if (static_cast<size_t>(fd) >= all.kind_of_fd.size()) all.kind_of_fd.resize(static_cast<size_t>(fd) + 1, kNone);
  all.kind_of_fd[static_cast<size_t>(fd)] = kind;
}

sockaddr_storage local_address(int fd, socklen_t* len) {
  sockaddr_storage out{};
  *len = sizeof(out);
  if (rgetsockname(fd, reinterpret_cast<sockaddr*>(&out), len) != 0) *len = 0;
  return out;
}

}  // namespace

void set_rsocket_service_room(int listeners, int connections) {
  Services& all = services();
  std::lock_guard<std::mutex> guard(all.mutex);
  all.by_kind[kListen].wanted = listeners;
  all.by_kind[kConnection].wanted = connections;
}

int rsocket_listen(int fd, int backlog) {
  Services& all = services();
  std::lock_guard<std::mutex> guard(all.mutex);
  socklen_t len;
  const sockaddr_storage bound = local_address(fd, &len);
  if (!take_place(all, kListen, bound, len)) return -1;
  const int rc = rlisten(fd, backlog);
  if (rc == 0) joined(all, kListen, fd);
  return rc;
}

int rsocket_connect(int fd, const sockaddr* addr, socklen_t len) {
  Services& all = services();
  std::lock_guard<std::mutex> guard(all.mutex);
  sockaddr_storage peer{};
  std::memcpy(&peer, addr, std::min<size_t>(len, sizeof(peer)));
  if (!take_place(all, kConnection, peer, len)) return -1;
  const int rc = rconnect(fd, addr, len);
  if (rc != 0 && errno == EINPROGRESS) joined(all, kConnection, fd);
  return rc;
}

int rsocket_accept(int fd, sockaddr* peer, socklen_t* len) {
  Services& all = services();
  std::lock_guard<std::mutex> guard(all.mutex);
  socklen_t local_len;
  const sockaddr_storage local = local_address(fd, &local_len);
  if (!take_place(all, kConnection, local, local_len)) return -1;
  const int accepted = raccept(fd, peer, len);
  if (accepted >= 0) joined(all, kConnection, accepted);
  return accepted;
}

int rsocket_close(int fd) {
  Services& all = services();
  std::lock_guard<std::mutex> guard(all.mutex);
  if (fd >= 0 && static_cast<size_t>(fd) < all.kind_of_fd.size() && all.kind_of_fd[static_cast<size_t>(fd)] != kNone) {
    Service& s = all.by_kind[all.kind_of_fd[static_cast<size_t>(fd)]];
    all.kind_of_fd[static_cast<size_t>(fd)] = kNone;
    --s.members;
    s.warned = false;
  }
  return rclose(fd);
}

}  // namespace bypass
