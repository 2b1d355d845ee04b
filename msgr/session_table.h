// SessionTable (internal): a server messenger's sessions by server cookie, with the two lookups
// a new CLIENT_IDENT needs (AsyncMessenger::accept_session): the sessions of the same client
// incarnation (its client cookie) and those of the same client entity (its addresses). Both are
// hash lookups: comparing each new session with every existing one cost about 75,000
// instructions per accept at 1,024 sessions (the whole set-up O(n^2)). Not thread-safe: the
// messenger holds its lock around every call.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "msgr/entity.h"

namespace bypass::msgr {

class AsyncConnection;

class SessionTable {
 public:
  using ConnectionRef = std::shared_ptr<AsyncConnection>;

  // Records `con` as the session `server_cookie` of the client incarnation `client_cookie` with
  // addresses `peer_addrs` (what its CLIENT_IDENT said); replaces an earlier one of that cookie.
  void add(uint64_t server_cookie, ConnectionRef con, uint64_t client_cookie, const EntityAddrVec& peer_addrs);
  // The session of `server_cookie`, or null.
  ConnectionRef find(uint64_t server_cookie) const;
  // Forgets every session `con` holds.
  void remove(const AsyncConnection* con);
  void clear();
  size_t size() const { return sessions_.size(); }

  // Sessions other than `except` of the client incarnation `client_cookie`.
  std::vector<ConnectionRef> with_client_cookie(uint64_t client_cookie, const AsyncConnection* except) const;
  // Sessions other than `except` whose client had the addresses `peer_addrs` and another
  // client cookie than `client_cookie`: an incarnation that came before. Addresses without a
  // port (a client that listens nowhere, as most do) name no entity: they match nothing and are
  // not indexed, so a thousand such clients do not share one hash bucket.
  static bool identifies_entity(const EntityAddrVec& peer_addrs) {
    return !peer_addrs.empty() && peer_addrs.addrs[0].port() != 0;
  }
  std::vector<ConnectionRef> with_addrs_not_cookie(const EntityAddrVec& peer_addrs, uint64_t client_cookie,
                                                   const AsyncConnection* except) const;

 private:
  struct Session {
    ConnectionRef con;
    uint64_t client_cookie;
    EntityAddrVec peer_addrs;
    std::string addrs_key;  // peer_addrs.to_string(): the index key (exact match checked on lookup); empty: not indexed
  };
  void erase(std::map<uint64_t, Session>::iterator it);

  std::map<uint64_t, Session> sessions_;  // by server cookie
  std::unordered_multimap<uint64_t, uint64_t> by_client_cookie_;                  // -> server cookie
  std::unordered_multimap<std::string, uint64_t> by_addrs_;                      // -> server cookie
  std::unordered_multimap<const AsyncConnection*, uint64_t> by_connection_;      // -> server cookie
};

}  // namespace bypass::msgr
