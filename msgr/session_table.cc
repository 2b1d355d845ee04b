#include "msgr/session_table.h"

#include <utility>

namespace bypass::msgr {

namespace {

// Removes the one entry of `index` under `key` that names `server_cookie`.
template <typename Index, typename Key>
void unindex(Index& index, const Key& key, uint64_t server_cookie) {
  auto [first, last] = index.equal_range(key);
  for (auto it = first; it != last; ++it) {
    if (it->second == server_cookie) {
      index.erase(it);
      return;
    }
  }
}

}  // namespace

void SessionTable::add(uint64_t server_cookie, ConnectionRef con, uint64_t client_cookie,
                       const EntityAddrVec& peer_addrs) {
  if (auto old = sessions_.find(server_cookie); old != sessions_.end()) erase(old);
  std::string key = identifies_entity(peer_addrs) ? peer_addrs.to_string() : std::string();
  by_client_cookie_.emplace(client_cookie, server_cookie);
  if (!key.empty()) by_addrs_.emplace(key, server_cookie);
  by_connection_.emplace(con.get(), server_cookie);
  sessions_.emplace(server_cookie, Session{std::move(con), client_cookie, peer_addrs, std::move(key)});
}

SessionTable::ConnectionRef SessionTable::find(uint64_t server_cookie) const {
  auto it = sessions_.find(server_cookie);
  return it == sessions_.end() ? nullptr : it->second.con;
}

void SessionTable::remove(const AsyncConnection* con) {
  auto [first, last] = by_connection_.equal_range(con);
  std::vector<uint64_t> cookies;
  for (auto it = first; it != last; ++it) cookies.push_back(it->second);
  for (uint64_t cookie : cookies)
    if (auto it = sessions_.find(cookie); it != sessions_.end()) erase(it);
}

void SessionTable::clear() {
  sessions_.clear();
  by_client_cookie_.clear();
  by_addrs_.clear();
  by_connection_.clear();
}

void SessionTable::erase(std::map<uint64_t, Session>::iterator it) {
  const uint64_t cookie = it->first;
  unindex(by_client_cookie_, it->second.client_cookie, cookie);
  if (!it->second.addrs_key.empty()) unindex(by_addrs_, it->second.addrs_key, cookie);
  unindex(by_connection_, it->second.con.get(), cookie);
  sessions_.erase(it);
}

std::vector<SessionTable::ConnectionRef> SessionTable::with_client_cookie(uint64_t client_cookie,
                                                                          const AsyncConnection* except) const {
  std::vector<ConnectionRef> found;
  auto [first, last] = by_client_cookie_.equal_range(client_cookie);
  for (auto it = first; it != last; ++it) {
    const Session& s = sessions_.at(it->second);
    if (s.con.get() != except) found.push_back(s.con);
  }
  return found;
}

std::vector<SessionTable::ConnectionRef> SessionTable::with_addrs_not_cookie(const EntityAddrVec& peer_addrs,
                                                                             uint64_t client_cookie,
                                                                             const AsyncConnection* except) const {
  std::vector<ConnectionRef> found;
  if (!identifies_entity(peer_addrs)) return found;
  auto [first, last] = by_addrs_.equal_range(peer_addrs.to_string());
  for (auto it = first; it != last; ++it) {
    const Session& s = sessions_.at(it->second);
    if (s.con.get() != except && s.client_cookie != client_cookie && s.peer_addrs == peer_addrs) found.push_back(s.con);
  }
  return found;
}

}  // namespace bypass::msgr
