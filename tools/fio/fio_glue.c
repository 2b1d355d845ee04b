/* libfio_bypass.so's fio side: the engine's options, its ioengine_ops and the checks that this
 * fio is the one the engine was built for. The only file that includes fio's headers (see
 * engine_api.h); everything Bypass does happens behind engine_api.h.
 *
 *   fio --ioengine=external:/usr/lib/x86_64-linux-gnu/fio/libfio_bypass.so --enghelp=...   (docs/fio.md) */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fio.h"
#include "optgroup.h"
#include "verify.h"

#include "engine_api.h"

/* Set by meson from the prepared headers' bypass-fio.env (tools/fio/prepare-headers.sh). */
#ifndef BYPASS_FIO_VERSION
#error "BYPASS_FIO_VERSION (the fio version the headers are from) must be defined"
#endif

#define ERROR_LEN 1024

struct bypass_fio_options {
  void *pad; /* fio reads offset 0 as "no field": the options start after it */
  unsigned int receiver;
  unsigned int ms_type;
  char *hostname;
  unsigned int port;
  char *bypass_config;
  char *bypass_set;
  unsigned int timeout;
  unsigned int poll;
};

static struct fio_option options[] = {
    {
        .name = "ms_type",
        .lname = "Bypass transport",
        .type = FIO_OPT_STR,
        .off1 = offsetof(struct bypass_fio_options, ms_type),
        .help = "Bypass transport (ms.type); default: what bypass_config/bypass_set say, else posix",
        .def = "config",
        .posval =
            {
                {.ival = "config", .oval = BYPASS_FIO_MS_CONFIG, .help = "ms.type from bypass_config/bypass_set"},
                {.ival = "posix", .oval = BYPASS_FIO_MS_POSIX, .help = "Linux kernel sockets"},
                {.ival = "dpdk", .oval = BYPASS_FIO_MS_DPDK, .help = "Bypass's TCP/IP stack on a DPDK port"},
                {.ival = "rdma", .oval = BYPASS_FIO_MS_RDMA, .help = "RDMA verbs (RC queue pairs)"},
                /* Ceph's ceph-msgr engine spells them so (src/test/fio/ceph-messenger.fio). */
                {.ival = "async+posix", .oval = BYPASS_FIO_MS_POSIX, .help = "posix, as Ceph spells it"},
                {.ival = "async+dpdk", .oval = BYPASS_FIO_MS_DPDK, .help = "dpdk, as Ceph spells it"},
                {.ival = "async+rdma", .oval = BYPASS_FIO_MS_RDMA, .help = "rdma, as Ceph spells it"},
            },
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_NETIO,
    },
    {
        .name = "receiver",
        .lname = "Bypass receiver",
        .type = FIO_OPT_BOOL,
        .off1 = offsetof(struct bypass_fio_options, receiver),
        .help = "1: this job is the memory-backed target senders write to and read from; 0: a sending job",
        .def = "0",
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_NETIO,
    },
    {
        .name = "hostname",
        .lname = "Bypass receiver address",
        .type = FIO_OPT_STR_STORE,
        .off1 = offsetof(struct bypass_fio_options, hostname),
        .help = "Receiver's IPv4 or IPv6 address (default 127.0.0.1; a dpdk receiver: its dpdk.host_ip)",
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_NETIO,
    },
    {
        .name = "port",
        .lname = "Bypass receiver port",
        .type = FIO_OPT_INT,
        .off1 = offsetof(struct bypass_fio_options, port),
        .minval = 1,
        .maxval = 65535,
        .help = "Receiver's TCP port (required)",
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_NETIO,
    },
    {
        .name = "bypass_config",
        .lname = "Bypass YAML configuration",
        .type = FIO_OPT_STR_STORE,
        .off1 = offsetof(struct bypass_fio_options, bypass_config),
        .help = "A Bypass YAML file: any Bypass option (dpdk.vdev, ms.auth, ms.mode, ...)",
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_NETIO,
    },
    {
        .name = "bypass_set",
        .lname = "Bypass settings",
        .type = FIO_OPT_STR_STORE,
        .off1 = offsetof(struct bypass_fio_options, bypass_set),
        .help = "Bypass key=value settings over bypass_config, separated by spaces ('quote' a value with spaces)",
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_NETIO,
    },
    {
        .name = "bypass_timeout",
        .lname = "Bypass timeout",
        .type = FIO_OPT_INT,
        .off1 = offsetof(struct bypass_fio_options, timeout),
        .minval = 1,
        .maxval = 3600,
        .help = "Seconds a sender waits for its receiver: to connect, and for each reply",
        .def = "10",
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_NETIO,
    },
    {
        .name = "bypass_poll",
        .lname = "Bypass polling thread",
        .type = FIO_OPT_STR,
        .off1 = offsetof(struct bypass_fio_options, poll),
        .help = "Which thread runs the network stack's loops (ms.worker_threads)",
        .def = "auto",
        .posval =
            {
                {.ival = "auto", .oval = BYPASS_FIO_POLL_AUTO,
                 .help = "job when the job is the process's only one (posix: and it commits its requests in "
                         "batches or runs at iodepth 1), else workers"},
                {.ival = "job", .oval = BYPASS_FIO_POLL_JOB,
                 .help = "the job's own thread, while it waits (its stack serves no other job)"},
                {.ival = "workers", .oval = BYPASS_FIO_POLL_WORKERS, .help = "worker threads of the stack's own"},
            },
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_NETIO,
    },
    {.name = NULL},
};

static struct ioengine_ops ioengine;

/* The jobs of this fio process (fio's thread_number; every job is known before any engine call),
 * 0 when unknown. Looked up, not linked: a data reference would keep the engine from loading at all
 * into a program that is not fio, where the load-time check below must say so. */
static unsigned process_jobs(void) {
  const unsigned int *jobs = dlsym(RTLD_DEFAULT, "thread_number");
  return jobs != NULL ? *jobs : 0;
}

static void job_options(struct thread_data *td, struct bypass_fio_job_options *out) {
  const struct bypass_fio_options *o = td->eo;
  memset(out, 0, sizeof(*out));
  out->job_name = td->o.name;
  out->job_number = td->thread_number;
  out->receiver = o->receiver != 0;
  out->ms_type = (int)o->ms_type;
  out->hostname = o->hostname;
  out->port = o->port;
  out->bypass_config = o->bypass_config;
  out->bypass_set = o->bypass_set;
  out->timeout_seconds = o->timeout;
  out->size = td->o.size;
  out->iodepth = td->o.iodepth;
  out->iodepth_batch = td->o.iodepth_batch;
  out->poll = (int)o->poll;
  out->process_jobs = process_jobs();
}

static int fail(struct thread_data *td, int err, const char *func, const char *message) {
  log_err("fio: bypass: %s\n", message);
  td_vmsg(td, err, message, func);
  return 1;
}

/* fio's main process, before any job starts. */
static int bypass_setup(struct thread_data *td) {
  struct bypass_fio_job_options options;
  struct bypass_fio_checked checked = {0};
  char error[ERROR_LEN] = "";
  struct fio_file *f;
  unsigned int i;

  /* thread_data is the largest struct this engine shares with fio; fio filled io_ops in before
   * calling us, so a different offset here means the headers do not describe this fio. */
  if (td->io_ops != &ioengine)
    return fail(td, EINVAL, "bypass setup",
                "fio's struct thread_data does not match the headers libfio_bypass.so was built with "
                "(" BYPASS_FIO_VERSION "); rebuild it against this fio");
  job_options(td, &options);
  if (bypass_fio_check(&options, &checked, error, sizeof(error)) != 0) return fail(td, EINVAL, "bypass setup", error);

  /* A DPDK process owns its port: every job of this fio process shares one stack, in threads. */
  if (checked.is_dpdk) td->o.use_thread = 1;
  if (options.receiver) {
    if (td->o.verify != VERIFY_NONE)
      return fail(td, EINVAL, "bypass setup", "verify= belongs on the sending jobs, not on the receiver");
    /* The receiver serves until its runtime ends or its senders have gone, however much it
     * served; its io_us stand for served requests. */
    td->o.time_based = 1;
    /* Their latencies would be the waits for the next request (the senders time the requests):
     * fio keeps no latency samples for them, which takes fio's bookkeeping per served request
     * off the receiver's CPU. */
    td->o.disable_lat = 1;
    td->o.disable_clat = 1;
    td->o.disable_slat = 1;
    /* Nor bandwidth samples: with them fio still reads the clock for every io (its issue time),
     * 66 -> 58 ns of fio's own per served request (null ioengine); the report's IOPS and
     * bandwidth come from the totals either way. */
    td->o.disable_bw = 1;
  } else if (td->o.size == 0) {
    return fail(td, EINVAL, "bypass setup", "a sending job needs size= (its objects' size on the receiver)");
  }
  /* A sender's file is its object on the receiver. The receiver's size= is its memory budget
   * (1 GiB when not given); its own file only paces fio's offsets. */
  for_each_file(td, f, i) {
    const unsigned long long size = td->o.size ? td->o.size : (options.receiver ? 1ULL << 30 : 0);
    f->real_file_size = td->o.nr_files > 1 ? size / td->o.nr_files : size;
    fio_file_set_size_known(f);
  }
  return 0;
}

static int bypass_init(struct thread_data *td) {
  struct bypass_fio_job_options options;
  char error[ERROR_LEN] = "";
  job_options(td, &options);
  td->io_ops_data = bypass_fio_job_create(&options, error, sizeof(error));
  if (td->io_ops_data == NULL) return fail(td, EIO, "bypass init", error);
  return 0;
}

static void bypass_cleanup(struct thread_data *td) {
  if (td->io_ops_data == NULL) return;
  bypass_fio_job_destroy(td->io_ops_data);
  td->io_ops_data = NULL;
}

static int bypass_open_file(struct thread_data *td, struct fio_file *f) {
  char error[ERROR_LEN] = "";
  uint64_t object = 0;
  int r = bypass_fio_open_file(td->io_ops_data, f->file_name, f->real_file_size, &object, error, sizeof(error));
  if (r < 0) return fail(td, -r, "bypass open_file", error);
  f->engine_data = (void *)(uintptr_t)object;
  return 0;
}

static int bypass_close_file(struct thread_data *td, struct fio_file *f) {
  (void)td;
  f->engine_data = NULL; /* the object lives as long as the session: a reopen finds its bytes */
  return 0;
}

static int bypass_io_u_init(struct thread_data *td, struct io_u *io_u) {
  io_u->engine_data = bypass_fio_io_create(td->io_ops_data, io_u);
  return io_u->engine_data ? 0 : 1;
}

static void bypass_io_u_free(struct thread_data *td, struct io_u *io_u) {
  if (io_u->engine_data == NULL) return;
  bypass_fio_io_free(td->io_ops_data, io_u->engine_data);
  io_u->engine_data = NULL;
}

/* fio's own test (backend.c's runtime_exceeded), for a receiver that waits inside queue. */
static int runtime_over(struct thread_data *td) {
  if (!td->o.timeout || (td->o.ramp_time && !td->ramp_time_over)) return 0;
  return utime_since_now(&td->epoch) >= td->o.timeout;
}

static enum fio_q_status bypass_queue(struct thread_data *td, struct io_u *io_u) {
  /* Per io: only the first byte is cleared (= "" would zero the whole KiB every call); the
   * engine writes a message there only on an error. */
  char error[ERROR_LEN];
  uint64_t bytes = 0;
  int op;
  int r;

  error[0] = '\0';
  fio_ro_check(td, io_u);
  switch (io_u->ddir) {
    case DDIR_READ: op = BYPASS_FIO_READ; break;
    case DDIR_WRITE: op = BYPASS_FIO_WRITE; break;
    case DDIR_SYNC:
    case DDIR_DATASYNC:
    case DDIR_SYNC_FILE_RANGE:
      return FIO_Q_COMPLETED; /* the target is memory: there is nothing to make durable */
    default:
      log_err("fio: bypass: %s is not supported (the target stores and returns bytes)\n", io_ddir_name(io_u->ddir));
      io_u->error = EOPNOTSUPP;
      return FIO_Q_COMPLETED;
  }
  r = bypass_fio_queue(td->io_ops_data, io_u->engine_data, op, io_u->xfer_buf, io_u->xfer_buflen, io_u->offset,
                       (uint64_t)(uintptr_t)io_u->file->engine_data, &bytes, error, sizeof(error));
  switch (r) {
    case BYPASS_FIO_QUEUED:
      return FIO_Q_QUEUED;
    case BYPASS_FIO_COMPLETED: /* a receiver's io_u: one served request, counted with its payload */
      io_u->xfer_buflen = bytes;
      io_u->resid = 0;
      return FIO_Q_COMPLETED;
    case BYPASS_FIO_IDLE:
      /* Busy: fio takes the io_u back, checks whether to go on, and queues it again. */
      if (td->terminate || runtime_over(td)) td->done = 1;
      return FIO_Q_BUSY;
    case BYPASS_FIO_JOB_DONE:
      td->done = 1;
      return FIO_Q_BUSY;
    default: {
      const char *why = error[0] ? error : bypass_fio_take_error(td->io_ops_data);
      if (why[0]) log_err("fio: bypass: %s\n", why);
      io_u->error = -r;
      return FIO_Q_COMPLETED;
    }
  }
}

static int bypass_commit(struct thread_data *td) {
  bypass_fio_commit(td->io_ops_data);
  return 0;
}

static int bypass_getevents(struct thread_data *td, unsigned int min, unsigned int max, const struct timespec *t) {
  char error[ERROR_LEN]; /* as in bypass_queue: not zero-filled per call */
  int r;
  error[0] = '\0';
  (void)t; /* fio passes a zero timeout exactly when min is 0 */
  r = bypass_fio_getevents(td->io_ops_data, min, max, error, sizeof(error));
  if (r < 0) {
    log_err("fio: bypass: %s\n", error);
    td_vmsg(td, -r, error, "bypass getevents");
  }
  return r;
}

static struct io_u *bypass_event(struct thread_data *td, int event) {
  int error = 0;
  struct io_u *io_u = bypass_fio_event(td->io_ops_data, event, &error);
  const char *why = bypass_fio_take_error(td->io_ops_data);
  if (why[0]) log_err("fio: bypass: %s\n", why);
  io_u->error = error;
  io_u->resid = 0;
  return io_u;
}

/* The load-time check: fio itself refuses an ops version it does not know, but says only "bad
 * ioops version"; a fio of another version may keep the ops version and still lay its structs out
 * differently. fio's version string tells exactly. */
static int fio_is_the_one_built_for(void) {
  const char *running = dlsym(RTLD_DEFAULT, "fio_version_string");
  if (running == NULL) {
    fprintf(stderr,
            "fio: libfio_bypass.so: this program exports no fio_version_string: load the engine into fio "
            "(" BYPASS_FIO_VERSION ")\n");
    return 0;
  }
  if (strcmp(running, BYPASS_FIO_VERSION) != 0) {
    fprintf(stderr,
            "fio: libfio_bypass.so was built against the headers of " BYPASS_FIO_VERSION
            " (ioengine ABI %d) but this is %s: its structs may differ. Rebuild the engine against this fio "
            "(tools/setup.sh prepares its headers, then build Bypass again)\n",
            FIO_IOOPS_VERSION, running);
    return 0;
  }
  return 1;
}

/* fio looks this up after dlopen (fio's dlopen_ioengine). */
__attribute__((visibility("default"))) void get_ioengine(struct ioengine_ops **ops) {
  if (!fio_is_the_one_built_for()) {
    *ops = NULL;
    return;
  }
  ioengine.name = "bypass";
  ioengine.version = FIO_IOOPS_VERSION;
  ioengine.flags = FIO_DISKLESSIO | FIO_NODISKUTIL | FIO_NOEXTEND;
  ioengine.setup = bypass_setup;
  ioengine.init = bypass_init;
  ioengine.cleanup = bypass_cleanup;
  ioengine.open_file = bypass_open_file;
  ioengine.close_file = bypass_close_file;
  ioengine.io_u_init = bypass_io_u_init;
  ioengine.io_u_free = bypass_io_u_free;
  ioengine.queue = bypass_queue;
  ioengine.commit = bypass_commit;
  ioengine.getevents = bypass_getevents;
  ioengine.event = bypass_event;
  ioengine.option_struct_size = sizeof(struct bypass_fio_options);
  ioengine.options = options;
  *ops = &ioengine;
}
