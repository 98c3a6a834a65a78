/* dtype.c - datatype sizes (dtype.h). */
#include "util/dtype.h"

#include <string.h>

uint32_t ncs_dtype_size(const char *d) {
  static const struct {
    const char *name;
    uint32_t size;
  } t[] = {{"Unknown", 1}, /* ncclUint8: NCCL has no string for it (research notes 2.9) */
           {"ncclInt8", 1}, {"ncclChar", 1}, {"ncclUint8", 1}, {"ncclFloat8e4m3", 1},
           {"ncclFloat8e5m2", 1}, {"ncclFloat16", 2}, {"ncclHalf", 2}, {"ncclBfloat16", 2},
           {"ncclInt32", 4}, {"ncclInt", 4}, {"ncclUint32", 4}, {"ncclFloat32", 4},
           {"ncclFloat", 4}, {"ncclInt64", 8}, {"ncclUint64", 8}, {"ncclFloat64", 8},
           {"ncclDouble", 8}};
  if (!d) return 0;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(d, t[i].name)) return t[i].size;
  return 0;
}
