// engine_api.h's functions: each catches what the C++ side throws, so no exception crosses into
// fio's C, and turns it into one line for fio's log.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "base/log.h"
#include "tools/fio/engine_api.h"
#include "tools/fio/engine_job.h"
#include "tools/fio/job_settings.h"
#include "tools/fio/receiver.h"
#include "tools/fio/sender.h"

struct bypass_fio_job {
  std::unique_ptr<bypass::fio::EngineJob> impl;
  std::string taken_error;  // what bypass_fio_take_error last returned
};

namespace {

void put_error(char* out, size_t len, const std::string& text) {
  if (len == 0) return;
  std::snprintf(out, len, "%s", text.c_str());
}

// fio's output is the report: Bypass's informational lines (listening, sessions coming and going)
// only when asked for with BYPASS_LOG=info; warnings and errors always.
void quiet_unless_asked() {
  if (std::getenv("BYPASS_LOG") == nullptr) bypass::log::set_threshold(bypass::log::Level::Warn);
}

}  // namespace

extern "C" {

int bypass_fio_check(const struct bypass_fio_job_options* options, struct bypass_fio_checked* checked, char* error,
                     size_t error_len) {
  quiet_unless_asked();
  try {
    const bypass::fio::JobSettings job = bypass::fio::JobSettings::resolve(*options);
    checked->is_dpdk = job.transport == "dpdk";
    return 0;
  } catch (const std::exception& e) {
    put_error(error, error_len, e.what());
    return -EINVAL;
  }
}

bypass_fio_job* bypass_fio_job_create(const struct bypass_fio_job_options* options, char* error, size_t error_len) {
  quiet_unless_asked();
  try {
    auto job = std::make_unique<bypass_fio_job>();
    bypass::fio::JobSettings settings = bypass::fio::JobSettings::resolve(*options);
    if (settings.receiver) {
      job->impl = std::make_unique<bypass::fio::Receiver>(std::move(settings));
    } else {
      job->impl = std::make_unique<bypass::fio::Sender>(std::move(settings), options->iodepth);
    }
    return job.release();
  } catch (const std::exception& e) {
    put_error(error, error_len, e.what());
    return nullptr;
  }
}

void bypass_fio_job_destroy(bypass_fio_job* job) {
  if (!job->impl->retire()) {
    (void)job->impl.release();  // the messenger may still touch it: keep its memory (retire logged why)
    return;
  }
  delete job;
}

int bypass_fio_open_file(bypass_fio_job* job, const char* file_name, uint64_t size, uint64_t* object, char* error,
                         size_t error_len) {
  try {
    std::string why;
    const int r = job->impl->open_file(file_name, size, object, &why);
    if (r < 0) put_error(error, error_len, why);
    return r;
  } catch (const std::exception& e) {
    put_error(error, error_len, e.what());
    return -EIO;
  }
}

void* bypass_fio_io_create(bypass_fio_job* job, void* io_u) {
  try {
    return job->impl->create_io(io_u);
  } catch (const std::exception& e) {
    BYPASS_LOG(Error, "fio", "%s", e.what());
    return nullptr;
  }
}

void bypass_fio_io_free(bypass_fio_job* job, void* io) { job->impl->free_io(io); }

int bypass_fio_queue(bypass_fio_job* job, void* io, int op, void* buf, uint64_t length, uint64_t offset,
                     uint64_t object, uint64_t* bytes, char* error, size_t error_len) {
  try {
    std::string why;
    const int r = job->impl->queue(io, op, buf, length, offset, object, bytes, &why);
    if (r < 0) put_error(error, error_len, why);
    return r;
  } catch (const std::exception& e) {
    put_error(error, error_len, e.what());
    return -EIO;
  }
}

void bypass_fio_commit(bypass_fio_job* job) { job->impl->commit(); }

int bypass_fio_getevents(bypass_fio_job* job, unsigned min, unsigned max, char* error, size_t error_len) {
  try {
    std::string why;
    const int r = job->impl->getevents(min, max, &why);
    if (r < 0) put_error(error, error_len, why);
    return r;
  } catch (const std::exception& e) {
    put_error(error, error_len, e.what());
    return -EIO;
  }
}

void* bypass_fio_event(bypass_fio_job* job, int i, int* error) { return job->impl->event(i, error); }

const char* bypass_fio_take_error(bypass_fio_job* job) {
  job->taken_error = job->impl->take_error();
  return job->taken_error.c_str();
}

}  // extern "C"
