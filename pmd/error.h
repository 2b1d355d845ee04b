// The one exception type pmd/ raises: a complete one-line message that names the option to change.
#pragma once

#include <stdexcept>

namespace bypass::pmd {

class PmdError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace bypass::pmd
