# faults.cmake - nccl-sim's peer coupling and --fault (docs/nccl-sim.md "Peer coupling", "Faults").
# Included by tests/CMakeLists.txt after scenarios.cmake (uses NCS_SCENARIOS and ncs_scenario).
#
# couple_*        every scenario with --couple on and no fault completes (built-in no-op plugin,
#                 every event type on); scenario_couple_*: the ncclscope plugin's traces of
#                 coupled jobs pass scenario_test's checks.
# fault_<kind>_p* each fault on a 4-rank AllReduce job, in 4 processes and in one, --hang-s 2:
#                 exit status, the one-line message, the open events `ncclscope dump` shows and,
#                 for mismatches, the rank `ncclscope report` names (tests/fault_check.py).
# kch_counters    NCCL's KernelCh work counters (docs/nccl-sim.md "KernelCh work counters"):
#                 KernelCh toggled between groups around a CUDA graph leaves work items that
#                 NCCL waits for forever (nccl-sim --toggle-kch), and the ncclscope and empty
#                 plugins' sampling, which stops at the first capture, leaves none
#                 (tests/kch_counter_check.sh).
# kch_lap         the profiler thread a lap (64 work items) behind the GPU's ring on a channel:
#                 in model time no KernelCh is lost or lapped, in live time the lapped ones are
#                 counted (kch_lapped) and none is lost (tests/kch_lap_check.sh).
foreach(s ${NCS_SCENARIOS})
  add_test(NAME couple_${s} COMMAND nccl-sim --plugin none --scenario ${s} --couple on)
  set_tests_properties(couple_${s} PROPERTIES TIMEOUT 120)
endforeach()
ncs_scenario(couple_mixed --scenario mixed -- --couple on --iters 30)
ncs_scenario(couple_procs --scenario mixed -- --couple on --procs 4 --ranks 8 --threads 1
             --iters 20)
ncs_scenario(couple_large --scenario mixed -- --couple on --ranks 8 --threads 4 --comms 3
             --iters 40 --channels 4 --nodes 4 --net mix)
ncs_scenario(couple_graph --scenario graph -- --couple on --procs 2 --replays 6)
ncs_scenario(couple_split --scenario split -- --couple on --ranks 6 --procs 2)

foreach(kind skip stall kill mismatch mismatch-dtype)
  foreach(p 1 4)
    add_test(NAME fault_${kind}_p${p}
             COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/fault_check.py $<TARGET_FILE:nccl-sim>
                     $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                     ${CMAKE_CURRENT_BINARY_DIR}/fault/${kind}-p${p} ${kind} ${p})
    set_tests_properties(fault_${kind}_p${p} PROPERTIES TIMEOUT 120
                         PASS_REGULAR_EXPRESSION "fault check ${kind}: ok")
  endforeach()
endforeach()
add_test(NAME fault_usage
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/fault_check.py $<TARGET_FILE:nccl-sim>
                 $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                 ${CMAKE_CURRENT_BINARY_DIR}/fault/usage usage 1)
set_tests_properties(fault_usage PROPERTIES TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "fault check usage: ok")

add_test(NAME kch_counters
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/kch_counter_check.sh $<TARGET_FILE:nccl-sim>
                 $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:nccl-profiler-empty>
                 ${CMAKE_CURRENT_BINARY_DIR}/kch-counters)
set_tests_properties(kch_counters PROPERTIES TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "kch counter check: ok")
add_test(NAME kch_lap
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/kch_lap_check.sh $<TARGET_FILE:nccl-sim>
                 $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                 ${CMAKE_CURRENT_BINARY_DIR}/kch-lap)
set_tests_properties(kch_lap PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "kch lap check: ok")
