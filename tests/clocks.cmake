# Multi-host clocks of `ncclscope report` (docs/report.md, "Clocks"): a 4-process nccl-sim job with
# a straggler is recorded on one host, then two of its files are rewritten by ncs-trace-rehost
# (tests/trace_rehost.c, test-only) as another host whose wall clock is 37 ms ahead and whose
# monotonic clock is elsewhere. The report must estimate that offset within its printed error
# bound and keep the straggler, the skew and the waits of the one-host recording.
add_executable(ncs-trace-rehost ${CMAKE_CURRENT_LIST_DIR}/trace_rehost.c)
target_link_libraries(ncs-trace-rehost PRIVATE ncs_format)
foreach(c slow_on_b slow_on_a rehost)
  add_test(NAME clocks_${c}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/clocks_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   $<TARGET_FILE:ncs-trace-rehost> ${CMAKE_CURRENT_BINARY_DIR}/clocks-${c} ${c})
  set_tests_properties(clocks_${c} PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "clocks check ${c}: ok")
endforeach()
