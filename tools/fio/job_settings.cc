#include "tools/fio/job_settings.h"

#include <cctype>

namespace bypass::fio {

namespace {

const char* ms_type_name(int ms_type) {
  switch (ms_type) {
    case BYPASS_FIO_MS_POSIX: return "posix";
    case BYPASS_FIO_MS_DPDK: return "dpdk";
    case BYPASS_FIO_MS_RDMA: return "rdma";
    default: return nullptr;
  }
}

// hostname + port as the messenger's msgr2 address. Bypass resolves no names: an IP is needed.
msgr::EntityAddr parse_address(const JobSettings& job, const char* hostname, unsigned port) {
  if (port == 0) throw config::ConfigError("port: the receiver's TCP port is required (port=1..65535)");
  std::string host = hostname != nullptr ? hostname : "";
  if (host.empty()) {
    if (job.transport != "dpdk") {
      host = "127.0.0.1";
    } else if (job.receiver) {
      host = job.conf.get_ipv4("dpdk.host_ip").to_string();  // the userspace stack's own address
    } else {
      throw config::ConfigError("hostname: a dpdk sender needs the receiver's address (its dpdk.host_ip)");
    }
  }
  const std::string bracketed = host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
  msgr::EntityAddr addr;
  if (!msgr::EntityAddr::parse("v2:" + bracketed + ":" + std::to_string(port), &addr) || addr.is_blank_ip())
    throw config::ConfigError("hostname: '" + host + "' is not an IPv4 or IPv6 address of the receiver");
  return addr;
}

}  // namespace

std::vector<std::string> split_settings(std::string_view text) {
  std::vector<std::string> items;
  std::string item;
  bool in_item = false;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        item += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_item = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_item) items.push_back(std::move(item));
      item.clear();
      in_item = false;
    } else {
      item += c;
      in_item = true;
    }
  }
  if (quote != 0) throw config::ConfigError(std::string("bypass_set: unclosed ") + quote + " in '" + std::string(text) + "'");
  if (in_item) items.push_back(std::move(item));
  return items;
}

JobSettings JobSettings::resolve(const bypass_fio_job_options& options) {
  JobSettings job;
  job.receiver = options.receiver != 0;
  job.job_name = options.job_name != nullptr ? options.job_name : "";
  job.job_number = options.job_number;
  job.size = options.size;
  job.timeout = std::chrono::seconds(options.timeout_seconds > 0 ? options.timeout_seconds : 10);
  if (options.bypass_config != nullptr && *options.bypass_config != '\0') job.conf.load_yaml_file(options.bypass_config);
  job.conf.apply_environment();
  if (options.bypass_set != nullptr)
    for (const std::string& item : split_settings(options.bypass_set)) {
      if (item.find('=') == std::string::npos)
        throw config::ConfigError("bypass_set: '" + item + "' is not key=value");
      job.conf.set_assignment(item, "bypass_set");
    }
  if (const char* type = ms_type_name(options.ms_type)) job.conf.set("ms.type", type, "ms_type");
  job.transport = job.conf.get_string("ms.type");
  // A single job polls the stack itself, one thread per process as bypass-bench runs (docs/fio.md):
  // on dpdk a worker would busy-poll a CPU the job's thread then has to win from it at every
  // request; on posix every request and reply would cross between two threads. A posix job that
  // commits its requests one by one at depth (fio's default iodepth_batch_submit, 1) keeps the
  // worker, which writes what was handed over meanwhile at once; polled, each would be a write.
  const bool posix_batches = job.transport == "posix" && (options.iodepth <= 1 || options.iodepth_batch > 1);
  const bool job_polls = options.poll == BYPASS_FIO_POLL_JOB ||
                         (options.poll == BYPASS_FIO_POLL_AUTO && options.process_jobs == 1 &&
                          (job.transport == "dpdk" || posix_batches));
  if (job_polls) job.conf.set("ms.worker_threads", "false", "bypass_poll");
  if (options.poll == BYPASS_FIO_POLL_WORKERS) job.conf.set("ms.worker_threads", "true", "bypass_poll");
  job.address = parse_address(job, options.hostname, options.port);
  job.stack_key = job.conf.to_json();
  return job;
}

}  // namespace bypass::fio
