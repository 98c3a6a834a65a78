/* test_phases.c - the computations of src/analyze/phases.h on plain inputs: an operation's GPU
 * time split by kernel phases, the GPU-side last arrival of an instance, and user tags. */
#include <stdio.h>
#include <string.h>

#include "analyze/phases.h"

#include "check.h"

static void split(void) {
  ncs_gpu_split_t s;
  /* two channels, three phases each: the means per channel */
  ncs_kphase_t two[] = {{0, 0, 100, 300}, {0, 1, 300, 1300}, {0, 2, 1300, 1400},
                        {1, 0, 110, 510}, {1, 1, 510, 1310}, {1, 2, 1310, 1410}};
  CHECK(ncs_gpu_split(two, 6, &s) == 2 && s.bad == 0);
  CHECK(s.ns[0] == 300 && s.ns[1] == 900 && s.ns[2] == 100);
  /* NCCL leaves out a phase of no length: that channel spent 0 ns in it, and still counts */
  ncs_kphase_t gap[] = {{3, 1, 0, 1000}, {5, 0, 0, 400}, {5, 1, 400, 1000}};
  CHECK(ncs_gpu_split(gap, 3, &s) == 2 && s.ns[0] == 200 && s.ns[1] == 800 && s.ns[2] == 0);
  /* unknown ids, missing ends and ends before starts are left out and counted */
  ncs_kphase_t bad[] = {{0, 3, 0, 10}, {0, 1, 50, 0}, {0, 2, 90, 80}, {0, 0, 0, 40}};
  CHECK(ncs_gpu_split(bad, 4, &s) == 1 && s.bad == 3 && s.ns[0] == 40 && s.ns[1] == 0);
  /* nothing: cannot tell */
  CHECK(ncs_gpu_split(NULL, 0, &s) == 0 && s.ns[0] == 0);
  CHECK(ncs_gpu_split(bad, 3, &s) == 0 && s.bad == 3);
  /* the sum over operations, and operations whose kernels reported channels but no phase */
  ncs_gpu_split_sum_t sum;
  memset(&sum, 0, sizeof sum);
  ncs_gpu_split(two, 6, &s);
  ncs_gpu_split_add(&sum, &s, 1);
  ncs_gpu_split_add(&sum, &s, 1);
  ncs_gpu_split(NULL, 0, &s);
  ncs_gpu_split_add(&sum, &s, 1); /* KernelCh, no phase */
  ncs_gpu_split_add(&sum, &s, 0); /* no kernel at all: neither */
  ncs_gpu_split_add(&sum, NULL, 1);
  CHECK(sum.ops == 2 && sum.ops_without == 2 && sum.ns[0] == 600 && sum.ns[1] == 1800 && sum.ns[2] == 200);
}

static void last_arrival(void) {
  uint64_t spread = 0;
  const uint64_t late2[] = {9000, 8800, 150, 9100};
  CHECK(ncs_gpu_last_arrival(late2, 4, &spread) == 2 && spread == 8950);
  /* ranks that cannot be told are skipped; one rank left is no evidence */
  const uint64_t unk[] = {UINT64_MAX, 700, UINT64_MAX, 40};
  CHECK(ncs_gpu_last_arrival(unk, 4, &spread) == 3 && spread == 660);
  const uint64_t one[] = {UINT64_MAX, 700, UINT64_MAX};
  CHECK(ncs_gpu_last_arrival(one, 3, &spread) == -1);
  /* all equal: no order to tell */
  const uint64_t same[] = {500, 500, 500};
  CHECK(ncs_gpu_last_arrival(same, 3, &spread) == -1);
  CHECK(ncs_gpu_last_arrival(NULL, 0, &spread) == -1);
}

static void tags(void) {
  ncs_tags_t t;
  memset(&t, 0, sizeof t);
  CHECK(ncs_tags_add(&t, 1, 7, 1000, 1500) == 0);
  CHECK(ncs_tags_add(&t, 1, 3, 200, 900) == 0);
  CHECK(ncs_tags_add(&t, 1, 7, 800, 2500) == 0);
  CHECK(ncs_tags_add(&t, 1, 7, 3000, -1) == 0); /* no completion: counted, no end, no busy */
  CHECK(ncs_tags_add(&t, 1, 0, 10, 20) == 0);   /* untagged */
  CHECK(ncs_tags_add(&t, 0, 7, 10, 20) == 0);   /* ABI v6: the tag cannot be told */
  CHECK(ncs_tags_add(&t, 0, 0, 10, 20) == 0);
  for (uint64_t k = 100; k < 400; k++) CHECK(ncs_tags_add(&t, 1, k, (int64_t)k, (int64_t)k + 1) == 0);
  ncs_tags_sort(&t);
  CHECK(t.n == 302 && t.untagged == 1 && t.unknown == 2);
  CHECK(t.v[0].tag == 3 && t.v[0].ops == 1 && t.v[0].first_start == 200 && t.v[0].last_end == 900 &&
        t.v[0].busy == 700);
  CHECK(t.v[1].tag == 7 && t.v[1].ops == 3 && t.v[1].first_start == 800 && t.v[1].last_end == 2500 &&
        t.v[1].busy == 500 + 1700);
  CHECK(t.v[2].tag == 100 && t.v[301].tag == 399 && t.v[301].busy == 1);
  ncs_tags_free(&t);
  CHECK(t.n == 0 && !t.v);
}

int main(void) {
  split();
  last_arrival();
  tags();
  printf("phases: %s\n", fails ? "FAILED" : "ok");
  return fails != 0;
}
