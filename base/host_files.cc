#include "base/host_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace bypass {

HostFiles::HostFiles(std::string root) : root_(std::move(root)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string HostFiles::full_path(std::string_view path) const {
  std::string full = root_;
  if (path.empty() || path.front() != '/') full += '/';
  full += path;
  return full;
}

std::optional<std::string> HostFiles::read(std::string_view path) const {
  const int fd = ::open(full_path(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {  // EISDIR, or EINVAL from a sysfs attribute with no value (an empty GID's type)
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

std::optional<std::string> HostFiles::first_line(std::string_view path) const {
  std::optional<std::string> text = read(path);
  if (!text) return std::nullopt;
  std::string line = text->substr(0, text->find('\n'));
  const size_t begin = line.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return std::string();
  const size_t end = line.find_last_not_of(" \t\r");
  return line.substr(begin, end - begin + 1);
}

std::optional<std::vector<std::string>> HostFiles::list(std::string_view dir) const {
  DIR* d = ::opendir(full_path(dir).c_str());
  if (d == nullptr) return std::nullopt;
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(d)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> HostFiles::link_name(std::string_view path) const {
  char target[4096];
  const ssize_t n = ::readlink(full_path(path).c_str(), target, sizeof target - 1);
  if (n <= 0) return std::nullopt;
  std::string text(target, static_cast<size_t>(n));
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text.substr(text.rfind('/') + 1);
}

bool HostFiles::exists(std::string_view path) const {
  struct stat st {};
  return ::lstat(full_path(path).c_str(), &st) == 0;
}

std::string HostFiles::why_unreadable(std::string_view path) const {
  const int fd = ::open(full_path(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  return "readable";
}

}  // namespace bypass
