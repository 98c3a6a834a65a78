/* sqlite_missing.c - `export --format sqlite` in an ncclscope built where libsqlite3-dev was not
 * found (src/cli/CMakeLists.txt): the format is known, and says what to install. */
#include <stdio.h>

#include "export/sqlite.h"

int ncs_export_sqlite(const char *in, const ncs_sqlite_opts_t *o, ncs_sqlite_stats_t *st,
                      char *err, size_t errlen) {
  (void)in, (void)o, (void)st;
  snprintf(err, errlen,
           "this ncclscope was built without SQLite: install libsqlite3-dev (Debian) and build "
           "again for --format sqlite");
  return -1;
}
