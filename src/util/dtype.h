/* dtype.h - the one datatype-size table of the read side (ncs_util).
 *
 * NCCL names datatypes with ncclDatatypeToString (research notes §2.9): ncclInt8 ncclInt32
 * ncclUint32 ncclInt64 ncclUint64 ncclFloat16 ncclFloat32 ncclFloat64 ncclBfloat16
 * ncclFloat8e4m3 ncclFloat8e5m2, and "Unknown" for the one type it has no case for, ncclUint8
 * (1 byte). The older aliases (ncclChar, ncclInt, ncclHalf, ncclFloat, ncclDouble, ncclUint8)
 * are accepted too. Any other string is a type this table does not know: size 0, and the
 * operation's byte count is unknown (the report counts such operations and says so). */
#ifndef NCS_UTIL_DTYPE_H
#define NCS_UTIL_DTYPE_H

#include <stdint.h>

uint32_t ncs_dtype_size(const char *name); /* bytes per element; 0 unknown (NULL included) */

#endif
