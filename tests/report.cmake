# `ncclscope report` (docs/report.md) on nccl-sim jobs with injected delays: the straggler and
# the slow link are named, busbw matches --gpu-gbps within 2%, --json parses with its fields.
foreach(c straggler slowlink busbw json usage)
  add_test(NAME report_${c}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/report_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/report-${c} ${c})
  set_tests_properties(report_${c} PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "report check ${c}: ok")
endforeach()
