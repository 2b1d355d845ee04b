/* The seam between fio and Bypass inside libfio_bypass.so.
 *
 * fio_glue.c is the only file that includes fio's headers (C, compiled with the flags fio itself
 * was built with: their struct layout must match the fio binary's). It translates fio's
 * thread_data / io_u / fio_file into the plain values below and calls the C++ side (engine.cc),
 * which knows nothing of fio's structs: an io_u is an opaque pointer it hands back on completion.
 * Every call is made on the fio job's own thread, except bypass_fio_check() (fio's main process,
 * before any job starts). Functions that fail write one line to `error` (NUL-terminated, cut to
 * `error_len`) for the glue to print with fio's log_err. */
#ifndef BYPASS_TOOLS_FIO_ENGINE_API_H
#define BYPASS_TOOLS_FIO_ENGINE_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ms_type values of the engine option (0: take ms.type from bypass_config / bypass_set). */
enum bypass_fio_ms_type { BYPASS_FIO_MS_CONFIG = 0, BYPASS_FIO_MS_POSIX, BYPASS_FIO_MS_DPDK, BYPASS_FIO_MS_RDMA };

/* bypass_poll values: which thread runs the network stack's loops (docs/fio.md). */
enum bypass_fio_poll { BYPASS_FIO_POLL_AUTO = 0, BYPASS_FIO_POLL_JOB, BYPASS_FIO_POLL_WORKERS };

/* The engine options of one job (fio_glue.c's option table) plus what the C++ side needs of fio's
 * own job options. Strings may be NULL (not given). */
struct bypass_fio_job_options {
  const char *job_name;
  int job_number;          /* fio's thread_number: 1, 2, ... within the run */
  int receiver;            /* 1: the memory-backed target; 0: a sending job */
  int ms_type;             /* enum bypass_fio_ms_type */
  const char *hostname;
  unsigned port;
  const char *bypass_config;  /* a Bypass YAML file */
  const char *bypass_set;     /* key=value settings, whitespace-separated, quotes group */
  unsigned timeout_seconds;   /* bypass_timeout: connect and reply bound */
  uint64_t size;              /* fio's size= (sender: the objects' total size; receiver: memory budget) */
  unsigned iodepth;           /* fio's iodepth: how many io_us the job sets up */
  unsigned iodepth_batch;     /* fio's iodepth_batch_submit: ios queued between two commits */
  int poll;                   /* enum bypass_fio_poll */
  unsigned process_jobs;      /* the jobs of this fio process (fio's thread_number count) */
};

/* What bypass_fio_check() learnt from the options, for fio's set-up. */
struct bypass_fio_checked {
  int is_dpdk;             /* the transport is dpdk: one stack per process, so fio must use threads */
};

/* fio's main process, once per job before anything starts: resolves the Bypass configuration
 * (defaults < bypass_config < BYPASS_* environment < bypass_set < ms_type) and the address.
 * 0, or -EINVAL with the error (a ConfigError's text unchanged). */
int bypass_fio_check(const struct bypass_fio_job_options *options, struct bypass_fio_checked *checked, char *error,
                     size_t error_len);

typedef struct bypass_fio_job bypass_fio_job;

/* The job's thread (fio's init): starts (or shares) the network stack and the messenger; a sender
 * connects to its receiver, waiting at most timeout_seconds. NULL on failure. */
bypass_fio_job *bypass_fio_job_create(const struct bypass_fio_job_options *options, char *error, size_t error_len);
/* fio's cleanup: closes the session(s) and lets go of the stack. */
void bypass_fio_job_destroy(bypass_fio_job *job);

/* Sender: opens the object for one of the job's files on the receiver (its size is fio's file
 * size; the same name on the same session opens the same object again). 0 with *object set, or
 * a negative errno. Receiver: nothing to do (returns 0). */
int bypass_fio_open_file(bypass_fio_job *job, const char *file_name, uint64_t size, uint64_t *object, char *error,
                         size_t error_len);

/* One per io_u, created when fio sets the io_u up and freed before its buffer is. NULL on failure.
 * bypass_fio_io_free waits (bounded) until the messenger holds no view of the io_u's buffer. */
void *bypass_fio_io_create(bypass_fio_job *job, void *io_u);
void bypass_fio_io_free(bypass_fio_job *job, void *io);

enum bypass_fio_op { BYPASS_FIO_READ = 0, BYPASS_FIO_WRITE = 1 };

/* What bypass_fio_queue() did (or a negative errno, with the error set). */
enum bypass_fio_queued {
  BYPASS_FIO_QUEUED = 0,    /* sender: the request is out; it completes through getevents */
  BYPASS_FIO_COMPLETED = 1, /* receiver: the io_u stands for one served request of *bytes payload */
  BYPASS_FIO_IDLE = 2,      /* receiver: nothing served for a while; fio may check its runtime */
};
#define BYPASS_FIO_JOB_DONE (-100000) /* receiver: every sender that connected has gone */

/* Sender: sends the request (a write's buffer is the message's data segment, not copied; a read's
 * reply is copied into buf) and returns BYPASS_FIO_QUEUED. Receiver: waits (up to 100 ms) for a
 * request served since the last call: BYPASS_FIO_COMPLETED, BYPASS_FIO_IDLE or
 * BYPASS_FIO_JOB_DONE. The receiver serves on the messenger's workers whether or not fio waits. */
int bypass_fio_queue(bypass_fio_job *job, void *io, int op, void *buf, uint64_t length, uint64_t offset,
                     uint64_t object, uint64_t *bytes, char *error, size_t error_len);

/* Sender: writes out the requests queued since the last commit (fio commits after every
 * iodepth_batch_submit queued ios, and before it waits). Only where the job's thread runs the stack's
 * loops do requests wait for it: they then leave together, in one write. Receiver: nothing to do. */
void bypass_fio_commit(bypass_fio_job *job);

/* Sender: waits until at least `min` queued requests completed (min 0: does not wait), returns
 * how many (at most `max`) are ready for bypass_fio_event(), or a negative errno with the error set
 * (no reply within the timeout). Requests that failed (the receiver gone, a reply carrying an
 * error) complete with their error. */
int bypass_fio_getevents(bypass_fio_job *job, unsigned min, unsigned max, char *error, size_t error_len);

/* The i-th completion of the last getevents: its io_u and its error (0 or a positive errno; the
 * job's first error is told by bypass_fio_take_error). */
void *bypass_fio_event(bypass_fio_job *job, int i, int *error);

/* The first error a job met that fio has not printed yet (empty when none), e.g. why a reply
 * carried an error. */
const char *bypass_fio_take_error(bypass_fio_job *job);

#ifdef __cplusplus
}
#endif

#endif
