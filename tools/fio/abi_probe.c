/* The build-time ABI check (check_abi.sh): an engine that is nothing but the ioengine_ops version
 * of the prepared headers, for the installed fio to accept or refuse ("bad ioops version"). */
#include "fio.h"

static enum fio_q_status probe_queue(struct thread_data *td, struct io_u *io_u) {
  (void)td;
  (void)io_u;
  return FIO_Q_COMPLETED;
}

static struct ioengine_ops probe_ops = {
    .name = "bypass-abi-probe",
    .version = FIO_IOOPS_VERSION,
    .flags = FIO_SYNCIO | FIO_DISKLESSIO,
    .queue = probe_queue,
};

void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops) { *ops = &probe_ops; }
