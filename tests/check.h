/* check.h - the plain C tests' check: a failed condition is printed with its place and counted in
 * `fails`, and the test goes on (its main returns non-zero when fails is not 0). */
#ifndef NCS_TESTS_CHECK_H
#define NCS_TESTS_CHECK_H

#include <stdio.h>

static int fails;
#define CHECK(c)                                                                                  \
  do {                                                                                            \
    if (!(c)) {                                                                                   \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                       \
      fails++;                                                                                    \
    }                                                                                             \
  } while (0)

#endif
