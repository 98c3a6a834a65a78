# outputs.cmake - every output fails closed, one exit-status table, record owns its process tree
# (docs/cli.md: "Output files", "Exit status", "Processes and signals"). Included by
# tests/CMakeLists.txt. Each case of tests/outputs_check.sh runs in its own directory.
set(NCS_OUT_CHECK sh ${CMAKE_CURRENT_SOURCE_DIR}/outputs_check.sh $<TARGET_FILE:ncclscope>
    $<TARGET_FILE:nccl-sim> $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncs-pftrace-lint>)
foreach(c full special inputs overwrite killed stdout record-tree record-wait record-usr1
          record-exec events couple)
  add_test(NAME outputs_${c} COMMAND ${NCS_OUT_CHECK} ${CMAKE_CURRENT_BINARY_DIR}/outputs/${c} ${c})
  set_tests_properties(outputs_${c} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
endforeach()
# record in a terminal: the job gets the terminal, Ctrl-C and Ctrl-Z (a pseudo-terminal)
add_test(NAME outputs_record_tty
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/record_tty.py $<TARGET_FILE:ncclscope>
                 ${CMAKE_CURRENT_BINARY_DIR}/outputs/tty)
set_tests_properties(outputs_record_tty PROPERTIES TIMEOUT 120)
