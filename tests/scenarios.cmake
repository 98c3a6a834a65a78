# Scenario tests: nccl-sim drives a profiler plugin through NCCL's call patterns on a CPU.
#
# sim_*       nccl-sim itself, against the empty plugin and the built-in no-op plugin: every
#             scenario must run cleanly (also under the sanitizers); bad arguments must fail.
# scenario_*  nccl-sim against libnccl-profiler-ncclscope.so; scenario_test reads the traces and
#             checks them against nccl-sim's summary (see tests/scenarios.c).
add_executable(scenario_test scenarios.c)
target_link_libraries(scenario_test PRIVATE ncs_trace)

set(NCS_SIM $<TARGET_FILE:nccl-sim>)
set(NCS_EMPTY $<TARGET_FILE:nccl-profiler-empty>)
set(NCS_PLUGIN $<TARGET_FILE:nccl-profiler-ncclscope>)
set(NCS_SCENARIOS allreduce allgather reducescatter broadcast reduce sendrecv alltoall mixed
    grouped ce split pxn neverstop stale graph abort reload symmetric)

# --- nccl-sim alone -------------------------------------------------------------------------
foreach(s ${NCS_SCENARIOS})
  add_test(NAME sim_empty_${s} COMMAND nccl-sim --plugin ${NCS_EMPTY} --scenario ${s})
  set_tests_properties(sim_empty_${s} PROPERTIES TIMEOUT 120)
endforeach()
foreach(v 1 2 3 4 5 6 7)
  add_test(NAME sim_empty_abi${v} COMMAND nccl-sim --plugin ${NCS_EMPTY} --scenario mixed
           --abi ${v} --ranks 6 --threads 3 --nodes 3 --iters 30 --comms 3 --net mix)
endforeach()
add_test(NAME sim_none_mixed COMMAND nccl-sim --plugin none --scenario mixed --procs 2 --iters 40)
add_test(NAME sim_none_flood COMMAND nccl-sim --plugin none --scenario flood --threads 2
         --events 2000000)
add_test(NAME sim_empty_flood_paced COMMAND nccl-sim --plugin ${NCS_EMPTY} --scenario flood
         --threads 2 --duration 0.3 --rate 200000)
set_tests_properties(sim_empty_flood_paced PROPERTIES
                     PASS_REGULAR_EXPRESSION "flood: threads=2 events=[0-9]+ seconds=")
# must fail, with a message
add_test(NAME sim_bad_plugin COMMAND nccl-sim --plugin /nonexistent/libx.so)
set_tests_properties(sim_bad_plugin PROPERTIES PASS_REGULAR_EXPRESSION "cannot load profiler plugin")
add_test(NAME sim_bad_abi COMMAND nccl-sim --plugin ${NCS_EMPTY} --abi 9)
set_tests_properties(sim_bad_abi PROPERTIES WILL_FAIL TRUE)
add_test(NAME sim_bad_scenario COMMAND nccl-sim --plugin none --scenario nosuch)
set_tests_properties(sim_bad_scenario PROPERTIES WILL_FAIL TRUE)
add_test(NAME sim_not_a_plugin COMMAND nccl-sim --plugin libm.so.6 --iters 1)
set_tests_properties(sim_not_a_plugin PROPERTIES PASS_REGULAR_EXPRESSION "exports no ncclProfiler")

# --- the ncclscope plugin under nccl-sim ----------------------------------------------------
function(ncs_scenario name)
  add_test(NAME scenario_${name}
           COMMAND scenario_test --sim ${NCS_SIM} --plugin ${NCS_PLUGIN} ${ARGN})
  set_tests_properties(scenario_${name} PROPERTIES TIMEOUT 120)
endfunction()

foreach(s ${NCS_SCENARIOS})
  ncs_scenario(${s} --scenario ${s})
endforeach()
ncs_scenario(mixed_large --scenario mixed -- --ranks 8 --threads 4 --comms 3 --iters 40
             --channels 4 --nodes 4 --net mix)
ncs_scenario(procs --scenario mixed -- --procs 2 --ranks 4 --iters 30)
ncs_scenario(graph_procs --scenario graph -- --procs 2 --replays 6)
# every ABI version the plugin exports records what that version allows
foreach(v 1 2 3 4 5 6 7)
  ncs_scenario(abi${v} --scenario mixed --abi ${v} -- --iters 30 --net mix)
endforeach()
# ABI v7 (NCCL 2.31): symmetric kernels as Colls with KernelCh, before v7 as API events only;
# phases of coupled ranks; untagged operations; KernelPhase asked for without KernelCh (NCCL
# and ncclscope add KernelCh); every version's view of a graph
foreach(v 5 6 7)
  ncs_scenario(symmetric_abi${v} --scenario symmetric --abi ${v} -- --iters 24 --channels 4)
  ncs_scenario(graph_abi${v} --scenario graph --abi ${v})
endforeach()
ncs_scenario(v7_couple --scenario mixed --abi 7 -- --couple on --iters 27 --ranks 4 --nodes 2)
ncs_scenario(v7_untagged --scenario mixed --abi 7 -- --user-tags 0 --iters 18)
ncs_scenario(v7_tag_steps --scenario mixed --abi 7 -- --user-tags 4 --iters 18 --comms 2)
ncs_scenario(v7_phase_only --scenario allreduce --abi 7 --events group,groupapi,collapi,coll,kernelphase)
# v7's profiler thread 60 ms behind the proxy thread: the writer waits for the KernelCh of every
# operation instead of completing it from its ProxyOps and revising it later (40 revisions of 68
# before it did)
add_test(NAME scenario_v7_profiler_lag
         COMMAND sh -c "rm -rf $4 && NCCLSCOPE_EVENTS=default,proxy NCCLSCOPE_DIR=$4 $1 --plugin $2 \
                        --scenario mixed --abi 7 --iters 10 --profiler-lag-us 60000 >/dev/null && \
                        $3 dump --stats $4 | sed -n '/^== job/,$p'"
                 _ ${NCS_SIM} ${NCS_PLUGIN} $<TARGET_FILE:ncclscope>
                 ${CMAKE_CURRENT_BINARY_DIR}/scenario-v7-profiler-lag)
set_tests_properties(scenario_v7_profiler_lag PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION
  "completions [1-9][0-9]* \\(kernel [1-9][0-9]*, proxy [1-9][0-9]*, revised 0, forced 0")
# the buffer pool overflows: everything missing must be counted as dropped
ncs_scenario(flood_drops --scenario flood --buffer 1M --expect-drops -- --threads 2
             --events 3000000)
