/* replay_main.c - run the fuzz target over files without libFuzzer, so the corpus is exercised
 * in every build (gcc, ASan, ...). Arguments: files or directories (their regular files). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return -1;
  }
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  for (size_t n; buf && (n = fread(buf + len, 1, cap - len, f)) > 0;) {
    len += n;
    if (len == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf) return -1;
  /* an exact-size copy, so ASan catches a read one byte past the input */
  uint8_t *exact = malloc(len ? len : 1);
  memcpy(exact, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

static int run_path(const char *path, int *count) {
  struct stat st;
  if (stat(path, &st) != 0) {
    perror(path);
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    ++*count;
    return run_file(path);
  }
  DIR *d = opendir(path);
  if (!d) return -1;
  int rc = 0;
  for (struct dirent *de; (de = readdir(d));) {
    if (de->d_name[0] == '.') continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", path, de->d_name);
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
      ++*count;
      rc |= run_file(p);
    }
  }
  closedir(d);
  return rc;
}

int main(int argc, char **argv) {
  int rc = 0, count = 0;
  for (int i = 1; i < argc; i++) rc |= run_path(argv[i], &count);
  printf("replayed %d inputs\n", count);
  return rc ? 1 : (count ? 0 : 1);
}
