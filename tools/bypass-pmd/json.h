// bypass-pmd's JSON writer is base/json.h (shared with the admin socket).
#pragma once

#include "base/json.h"

namespace bypass::tools {
using Json = bypass::Json;
}  // namespace bypass::tools
