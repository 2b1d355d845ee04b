/* The engine's load-time check (fio_glue.c): loaded into a program that calls itself some other
 * fio, get_ioengine must refuse with a message naming both versions; into the fio it was built
 * for, it must hand its ops over. This program exports fio_version_string (-rdynamic) as fio does,
 * and sets it before each load.
 *   load_check_test ENGINE BUILT_FOR_VERSION */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

char fio_version_string[32];

typedef void (*get_ioengine_fn)(void **ops);

static int check(get_ioengine_fn get, const char *version, int expect_ops) {
  void *ops = (void *)1;
  snprintf(fio_version_string, sizeof(fio_version_string), "%s", version);
  get(&ops);
  if ((ops != NULL) != expect_ops) {
    fprintf(stdout, "FAIL: as %s, get_ioengine %s\n", version, ops ? "handed its ops over" : "refused");
    return 1;
  }
  fprintf(stdout, "ok: as %s, get_ioengine %s\n", version, ops ? "handed its ops over" : "refused");
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s ENGINE BUILT_FOR_VERSION\n", argv[0]);
    return 2;
  }
  void *engine = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
  if (engine == NULL) {
    fprintf(stdout, "FAIL: dlopen: %s\n", dlerror());
    return 1;
  }
  get_ioengine_fn get = (get_ioengine_fn)dlsym(engine, "get_ioengine");
  if (get == NULL) {
    fprintf(stdout, "FAIL: no get_ioengine: %s\n", dlerror());
    return 1;
  }
  /* The refusal goes to stderr: catch it in a pipe to check its words. */
  int pipefd[2];
  if (pipe(pipefd) != 0) return 1;
  fflush(stderr);
  int saved = dup(2);
  dup2(pipefd[1], 2);
  int failures = check(get, "fio-0.1", 0);
  fflush(stderr);
  dup2(saved, 2);
  close(pipefd[1]);
  char said[1024] = "";
  ssize_t n = read(pipefd[0], said, sizeof(said) - 1);
  said[n > 0 ? n : 0] = '\0';
  char expected[256];
  snprintf(expected, sizeof(expected), "built against the headers of %s", argv[2]);
  if (strstr(said, expected) == NULL || strstr(said, "but this is fio-0.1") == NULL) {
    fprintf(stdout, "FAIL: the refusal does not name both versions: %s\n", said);
    failures++;
  } else {
    fprintf(stdout, "ok: %s", said);
  }
  failures += check(get, argv[2], 1);
  return failures == 0 ? 0 : 1;
}
