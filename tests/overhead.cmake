# bench/overhead.sh (the GPU overhead benchmark, docs/benchmarks.md) without a GPU: a stub in place
# of ncs_perf prints `perf:` lines from a model, and the check recomputes every figure of the
# tables and summaries; the budget stop, a failing run and the usage errors are checked too.
foreach(c model plugins budget fail usage)
  add_test(NAME overhead_${c}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/overhead_check.sh ${CMAKE_BINARY_DIR}
                   ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/overhead-${c} ${c})
  # TIMEOUT: a guard against a hang, not a verdict (the model case runs about 700 stub runs, a
  # few minutes on a loaded machine)
  set_tests_properties(overhead_${c} PROPERTIES TIMEOUT 600 PASS_REGULAR_EXPRESSION "overhead check ${c}: ok")
endforeach()
