# The real-GPU fixtures (tests/fixtures/real/README.md; docs/gpu.md, "Real-job fixtures"): traces of
# real jobs on H200s, checked against CUPTI, the benchmark's own numbers and what the job did.
set(NCS_RJ ${CMAKE_CURRENT_SOURCE_DIR}/realjob_check.py $<TARGET_FILE:ncclscope>
    ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/real ${CMAKE_CURRENT_BINARY_DIR}/realjob)
# The benchmark recordings (perf-*: thousands of operations per process) are also labelled
# realjob_heavy: the asan+ubsan stage of scripts/test.sh leaves them out (minutes each there; the
# release stage runs them, and the PyTorch recordings take the read path under ASan).
function(ncs_realjob name check cap)
  add_test(NAME realjob_${name} COMMAND python3 ${NCS_RJ} ${check} ${cap} ${ARGN})
  set(labels realjob)
  if("${ARGN}" MATCHES "perf-")
    list(APPEND labels realjob_heavy)
  endif()
  set_tests_properties(realjob_${name} PROPERTIES PASS_REGULAR_EXPRESSION "realjob ${check} ${cap}: ok"
                       FAIL_REGULAR_EXPRESSION "FAILED|Traceback" LABELS "${labels}")
endfunction()
foreach(cap 2gpu-nccl2.28.9 4gpu-nccl2.28.9 4gpu-nccl2.30.7)
  string(REGEX REPLACE "[^0-9a-z]" "" c ${cap})
  ncs_realjob(gputimes_torch_${c} gputimes ${cap} torch-healthy-cupti)
  ncs_realjob(gputimes_perf_${c} gputimes ${cap} perf-eager-cupti)
  ncs_realjob(twin_torch_${c} twin ${cap} torch-healthy torch-healthy-cupti)
  ncs_realjob(twin_perf_${c} twin ${cap} perf-eager perf-eager-cupti)
endforeach()
foreach(cap 2gpu-nccl2.28.9 4gpu-nccl2.28.9)
  string(REGEX REPLACE "[^0-9a-z]" "" c ${cap})
  ncs_realjob(hang_trace_${c} hang ${cap} torch-hang)
  ncs_realjob(hang_flight_${c} hang ${cap} torch-hang-flight)
  foreach(run torch-straggler torch-stall perf-socket)
    string(REPLACE "-" "_" r ${run})
    ncs_realjob(clock_${r}_${c} clock ${cap} ${run})
  endforeach()
endforeach()
ncs_realjob(clock_perf_graph_2gpunccl2289 clock 2gpu-nccl2.28.9 perf-graph)
# ncs_perf over sockets enqueues its operations back to back: they queue, and are not launch-bound
ncs_realjob(queue_socket_2gpunccl2289 queue 2gpu-nccl2.28.9 perf-socket)
ncs_realjob(queue_socket_4gpunccl2289 queue 4gpu-nccl2.28.9 perf-socket)
ncs_realjob(tput_4gpunccl2289 tput 4gpu-nccl2.28.9 perf-tput)
ncs_realjob(tput_4gpunccl2307 tput 4gpu-nccl2.30.7 perf-tput)
