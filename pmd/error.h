// The one exception type pmd/ raises: a complete one-line message that names the option to change.
#pragma once

#include <rte_errno.h>

#include <stdexcept>
#include <string>

namespace bypass::pmd {

class PmdError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The text of an ethdev call's return code (a negative errno).
inline std::string ethdev_error(int rc) { return rte_strerror(rc < 0 ? -rc : rc); }

}  // namespace bypass::pmd
