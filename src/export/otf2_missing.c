/* otf2_missing.c - `export --format otf2` in an ncclscope built where OTF2 was not found
 * (src/export/CMakeLists.txt): the format is known, and says what to install. */
#include <stdio.h>

#include "export/otf2.h"

int ncs_export_otf2(const char *path, const ncs_otf2_opts_t *o, ncs_otf2_stats_t *st, char *err,
                    size_t errlen) {
  (void)path, (void)o, (void)st;
  snprintf(err, errlen,
           "this ncclscope was built without OTF2: install libopen-trace-format2-dev (Debian) "
           "and build again for --format otf2");
  return -3;
}
