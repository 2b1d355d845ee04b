// What one fio job of the bypass engine runs with: the Bypass configuration its engine options
// resolve to, its role and the receiver's address.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "msgr/entity.h"
#include "tools/fio/engine_api.h"

namespace bypass::fio {

struct JobSettings {
  config::Config conf;             // every Bypass option, as the job's options set them
  bool receiver = false;           // the memory-backed target (else a sending job)
  std::string transport;           // ms.type
  msgr::EntityAddr address;        // receiver: where it listens; sender: where it connects
  std::chrono::seconds timeout{10};  // bypass_timeout
  uint64_t size = 0;               // fio's size= (receiver: memory budget, 0 = default)
  std::string job_name;
  int job_number = 0;
  // Jobs of one process whose settings print the same share a network stack (SharedStack).
  std::string stack_key;

  // Layers, lowest first: defaults, bypass_config (YAML), BYPASS_* environment, bypass_set,
  // the ms_type option. Throws config::ConfigError: Bypass's own messages unchanged (file:line,
  // key, suggestion), or one naming the engine option that is wrong.
  static JobSettings resolve(const bypass_fio_job_options& options);
};

// bypass_set's text split into key=value items: separated by whitespace, a 'single' or "double"
// quoted stretch keeps its spaces (the quotes go). Throws config::ConfigError on an unclosed quote.
std::vector<std::string> split_settings(std::string_view text);

}  // namespace bypass::fio
