// A test process's own network namespace, so its network state (taps, veths, addresses and routes,
// nftables tables, sysctls of its interfaces, loopback ports, memif's abstract unix sockets,
// `ip netns` names) cannot meet another test's: meson runs two tests at once, and other checkouts
// on the same machine run the same tests under the same names. A mount namespace comes with it:
// /sys then shows this network namespace's interfaces (sysfs lists those of the namespace that
// mounts it) and /run/netns holds only the namespaces the test adds. Everything goes away with the
// process, even when it is killed. Header-only, like subprocess.h; tests/support/test_lib.sh's
// own_network_namespace does the same for shell tests.
#pragma once

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace bypass::test {

// Moves the calling thread into network and mount namespaces of its own, loopback up; threads
// and processes it starts afterwards inherit them. Call it from main() before any other thread
// starts (CLONE_NEWNS is refused to a thread that shares its filesystem with others). Needs root.
// Returns "" or what failed.
inline std::string enter_own_network_namespace() {
  auto failed = [](const std::string& what) { return what + ": " + std::strerror(errno); };
  if (::unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) return failed("unshare(CLONE_NEWNET | CLONE_NEWNS)");
  // What is mounted below stays in this namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return failed("making / private");
  if (::mount("sysfs", "/sys", "sysfs", 0, nullptr) != 0) return failed("mounting this namespace's sysfs on /sys");
  ::mkdir("/run/netns", 0755);
  if (::mount("tmpfs", "/run/netns", "tmpfs", 0, nullptr) != 0) return failed("mounting a private /run/netns");
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return failed("socket");
  ifreq lo{};
  std::strncpy(lo.ifr_name, "lo", IFNAMSIZ - 1);
  bool up = ::ioctl(fd, SIOCGIFFLAGS, &lo) == 0;
  lo.ifr_flags = static_cast<short>(lo.ifr_flags | IFF_UP);
  up = up && ::ioctl(fd, SIOCSIFFLAGS, &lo) == 0;
  const std::string error = up ? "" : failed("bringing up loopback");
  ::close(fd);
  return error;
}

}  // namespace bypass::test
