/* test_format.c - CRC-32C, varints and the event-list parser. */
#include <stdio.h>
#include <string.h>

#include "trace/format.h"

#include "check.h"

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

/* the hardware and the table paths of CRC-32C agree at every length and alignment, and with
 * RFC 3720's vectors (32 bytes of zeros, of 0xFF, ascending) */
static void crc_paths(void) {
  uint8_t z[32], f[32], a[32];
  for (int i = 0; i < 32; i++) z[i] = 0, f[i] = 0xFF, a[i] = (uint8_t)i;
  CHECK(ncs_crc32c(0, z, 32) == 0x8A9136AAu && ncs_crc32c_soft(0, z, 32) == 0x8A9136AAu);
  CHECK(ncs_crc32c(0, f, 32) == 0x62A8AB43u && ncs_crc32c_soft(0, f, 32) == 0x62A8AB43u);
  CHECK(ncs_crc32c(0, a, 32) == 0x46DD794Eu && ncs_crc32c_soft(0, a, 32) == 0x46DD794Eu);
  static uint8_t buf[4096 + 16];
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < sizeof buf; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, buf[i] = (uint8_t)x;
  for (size_t off = 0; off < 9; off++)
    for (size_t len = 0; len < 300; len += 1 + len / 16) {
      uint32_t h = ncs_crc32c(0, buf + off, len), s = ncs_crc32c_soft(0, buf + off, len);
      CHECK(h == s);
      /* in two pieces, split anywhere: the same */
      CHECK(ncs_crc32c(ncs_crc32c(0, buf + off, len / 3), buf + off + len / 3, len - len / 3) == s);
    }
  CHECK(ncs_crc32c(0, buf, 4096) == ncs_crc32c_soft(0, buf, 4096));
  printf("crc32c: %s path\n", ncs_crc32c_hw() ? "SSE4.2" : "table");
}

/* the varint rule, one byte at a time: what every decoding path must agree with */
static size_t ref_varint(const uint8_t *p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (size_t i = 0; i < 10; i++) {
    if (p + i >= end) return 0;
    if (i == 9 && p[i] > 1) return 0;
    r |= (uint64_t)(p[i] & 0x7F) << (7 * i);
    if (!(p[i] & 0x80)) {
      *v = r;
      return i + 1;
    }
  }
  return 0;
}

/* random byte strings (continuation bits on most bytes, so lengths of 1 to 10 and beyond come up,
 * non-minimal encodings too) decoded with every amount of input after them */
static void varint_paths(void) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  int bad = 0;
  for (int k = 0; k < 300000 && !bad; k++) {
    uint8_t b[16];
    for (int i = 0; i < 16; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      b[i] = (uint8_t)(s >> 24);
      if ((s >> 8) % 5) b[i] |= 0x80; /* 4 in 5 continue */
    }
    b[s % 12] &= 0x7F; /* a terminator somewhere, mostly */
    for (size_t avail = 0; avail <= 16; avail++) {
      uint64_t v = 1, w = 2;
      size_t n = ncs_get_varint(b, b + avail, &v), m = ref_varint(b, b + avail, &w);
      if (n != m || (n && v != w)) {
        fprintf(stderr, "varint of %zu bytes available: %zu -> %llx, expected %zu -> %llx\n", avail, n,
                (unsigned long long)v, m, (unsigned long long)w);
        bad = 1;
      }
    }
  }
  CHECK(!bad);
}

int main(void) {
  type_sizes();
  varint_paths();
  CHECK(ncs_crc32c(0, "123456789", 9) == 0xE3069283u);
  CHECK(ncs_crc32c(ncs_crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u);
  crc_paths();
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
