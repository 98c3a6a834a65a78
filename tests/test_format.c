/* test_format.c - CRC-32C, varints and the event-list parser. */
#include <stdio.h>
#include <string.h>

#include "trace/format.h"

static int fails;
#define CHECK(c)                                                                                  \
  do {                                                                                            \
    if (!(c)) {                                                                                   \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                       \
      fails++;                                                                                    \
    }                                                                                             \
  } while (0)

static uint32_t mask_of(const char *s) {
  uint32_t m = 0xDEAD;
  const char *bad;
  size_t bl;
  return ncs_parse_event_list(s, &m, &bad, &bl) == 0 ? m : 0xFFFFFFFF;
}

/* the one datatype table (report, the job model and the live metrics): NCCL's names, an unknown
 * name 0 bytes rather than a guess */
static void type_sizes(void) {
  CHECK(ncs_type_size("ncclFloat32") == 4 && ncs_type_size("ncclBfloat16") == 2);
  CHECK(ncs_type_size("ncclUint64") == 8 && ncs_type_size("ncclFloat8e5m2") == 1);
  CHECK(ncs_type_size("Unknown") == 1); /* NCCL's name for ncclUint8 */
  CHECK(ncs_type_size("ncclFloat128") == 0 && ncs_type_size("") == 0 && ncs_type_size(NULL) == 0);
  CHECK(ncs_op_bytes("AllGather", "ncclFloat32", 10, 4, 0) == 160);
  CHECK(ncs_op_bytes("AllGather", "ncclFloat32", 10, 4, 1) == 40); /* p2p: no x nranks */
  CHECK(ncs_op_bytes("AllReduce", "ncclInt2", 10, 4, 0) == 0);
  CHECK(ncs_bus_factor("AllReduce", 4) == 1.5 && ncs_bus_factor("ReduceScatter", 4) == 0.75);
  CHECK(ncs_bus_factor("Broadcast", 4) == 1.0 && ncs_bus_factor("AllReduce", 1) == 1.0);
}

int main(void) {
  type_sizes();
  CHECK(ncs_crc32c(0, "123456789", 9) == 0xE3069283u);
  CHECK(ncs_crc32c(ncs_crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u);
  uint64_t vals[] = {0, 1, 127, 128, 300, 1ull << 35, UINT64_MAX};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
    uint8_t b[10];
    size_t n = ncs_put_varint(b, vals[i]);
    uint64_t v;
    CHECK(ncs_get_varint(b, b + n, &v) == n && v == vals[i]);
    CHECK(n == 1 || ncs_get_varint(b, b + n - 1, &v) == 0); /* truncated */
  }
  uint8_t over[11] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0};
  uint64_t v;
  CHECK(ncs_get_varint(over, over + 11, &v) == 0);
  CHECK(ncs_unzigzag(ncs_zigzag(-5)) == -5 && ncs_zigzag(-1) == 1);
  CHECK(mask_of("all") == 0xFFFF);
  CHECK(mask_of("kernelphase") == 0x8000 && mask_of("0xFFFF") == 0xFFFF && mask_of("0x10000") == 0xFFFFFFFF);
  CHECK(!strcmp(ncs_state_name(31), "KernelPhaseStop") && !strcmp(ncs_state_name(32), "?"));
  CHECK(!strcmp(ncs_type_name(NCS_T_KERNEL_PHASE), "KernelPhase") && !strcmp(ncs_type_name(16), "?"));
  CHECK(mask_of("coll,kernel") == ((1u << 1) | (1u << 6)));
  CHECK(mask_of("api") == 0xF00);
  CHECK(mask_of("proxy") == ((1u << 3) | (1u << 4)));
  CHECK(mask_of("0x41") == 0x41 && mask_of("4095") == 4095);
  CHECK(mask_of("all,-proxystep") == (0xFFFFu & ~(1u << 4)));
  CHECK(mask_of("bogus") == 0xFFFFFFFF && mask_of("") == 0xFFFFFFFF && mask_of("99999") == 0xFFFFFFFF);
  CHECK(mask_of("default") == mask_of(NCS_DEFAULT_EVENTS));
  printf("format: %s\n", fails ? "FAILED" : "ok");
  return fails != 0;
}
