# ranges.cmake - user ranges and their hardware metrics without a GPU (docs/ranges.md,
# docs/testing.md "User ranges"): nccl-sim runs its iterations inside ranges through the plugin's
# range API; with --fake it plays the CUDA driver under the fake CUPTI (tests/fake_cupti.c, whose
# range profiler counts what was launched inside each range) and the fake libcuda. The checks
# compare the trace with what nccl-sim says happened inside each range (--range-truth).

add_executable(ncs-range-check ${CMAKE_CURRENT_LIST_DIR}/range_check.c)
target_link_libraries(ncs-range-check PRIVATE ncs_trace)
set_target_properties(ncs-range-check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# range_test(NAME EXPECT SIM-ARGS... [ENV var=value...] [CHECK checker-args...])
function(range_test name expect)
  cmake_parse_arguments(RT "" "" "ENV;CHECK" ${ARGN})
  string(REPLACE ";" " " RT_ENV "${RT_ENV}")
  string(REPLACE ";" " " RT_CHECK "${RT_CHECK}")
  add_test(NAME ranges_${name}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/range_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> ${CMAKE_BINARY_DIR}/fakecupti
                   $<TARGET_FILE:ncs-range-check> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/ranges-${name} "${RT_ENV}" "${RT_CHECK}"
                   ${RT_UNPARSED_ARGUMENTS})
  set_tests_properties(ranges_${name} PROPERTIES TIMEOUT 180
                       PASS_REGULAR_EXPRESSION "range check: ok.*${expect}"
                       FAIL_REGULAR_EXPRESSION "FAILED|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|runtime error")
endfunction()

# ranges through the API, no CUPTI: names, nesting, threads, the operations inside each
range_test(api "ranges=30 matched=30 ops=40 .*marks=10 .*state=off"
           --scenario allreduce --ranks 4 --threads 2 --iters 5 CHECK --values none --state off)
range_test(api_procs "files=2 ranges=72 matched=72 .*marks=24 "
           --scenario mixed --ranks 4 --procs 2 --iters 6 CHECK --values none)
# with the fake CUPTI: compute kernels inside their ranges; metrics of the default set, exact
range_test(metrics "metrics=8/8 .*state=active"
           --scenario allreduce --ranks 4 --threads 1 --iters 8 --compute 2 --fake
           ENV NCCLSCOPE_METRICS=default)
