# diagnose.cmake - `ncclscope diagnose` (docs/diagnose.md). Included by tests/CMakeLists.txt.
#
# gen-*: crafted recordings of a 4-rank job (tests/diagnose_gen.c), every fault in trace and
#        flight form, so the verdicts are checked independently of nccl-sim.
# sim-*: nccl-sim with --fault and the plugin: 4 ranks in 4 processes, flight mode with a 1 s
#        watchdog (the dumps of every process form one incident), or trace mode.
add_executable(ncs-diagnose-gen ${CMAKE_CURRENT_SOURCE_DIR}/diagnose_gen.c)
target_link_libraries(ncs-diagnose-gen PRIVATE ncs_tracegen)

set(NCS_DG_CHECK sh ${CMAKE_CURRENT_SOURCE_DIR}/diagnose_check.sh $<TARGET_FILE:ncclscope>
    $<TARGET_FILE:ncs-diagnose-gen> $<TARGET_FILE:nccl-sim> $<TARGET_FILE:nccl-profiler-ncclscope>)

foreach(c healthy skip stall mismatch kill kernel p2p)
  foreach(m trace flight)
    add_test(NAME diagnose_gen_${c}_${m}
             COMMAND ${NCS_DG_CHECK} ${CMAKE_CURRENT_BINARY_DIR}/diagnose/gen-${c}-${m} gen-${c}-${m})
    set_tests_properties(diagnose_gen_${c}_${m} PROPERTIES TIMEOUT 60
                         PASS_REGULAR_EXPRESSION "diagnose check gen-${c}-${m}: ok")
  endforeach()
endforeach()
# a hung job killed as a whole (traces without footers that stop together): no one died alone
foreach(c skip stall)
  add_test(NAME diagnose_gen_${c}_jobkill
           COMMAND ${NCS_DG_CHECK} ${CMAKE_CURRENT_BINARY_DIR}/diagnose/gen-${c}-jobkill gen-${c}-jobkill)
  set_tests_properties(diagnose_gen_${c}_jobkill PROPERTIES TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "diagnose check gen-${c}-jobkill: ok")
endforeach()
foreach(c usage incidents)
  add_test(NAME diagnose_${c} COMMAND ${NCS_DG_CHECK} ${CMAKE_CURRENT_BINARY_DIR}/diagnose/${c} ${c})
  set_tests_properties(diagnose_${c} PROPERTIES TIMEOUT 60 PASS_REGULAR_EXPRESSION "diagnose check ${c}: ok")
endforeach()

# nccl-sim with injected faults (docs/nccl-sim.md "Faults"): each names the injected rank and reason
foreach(c healthy skip stall mismatch kill)
  foreach(m flight trace)
    add_test(NAME diagnose_sim_${c}_${m}
             COMMAND ${NCS_DG_CHECK} ${CMAKE_CURRENT_BINARY_DIR}/diagnose/sim-${c}-${m} sim-${c}-${m})
    set_tests_properties(diagnose_sim_${c}_${m} PROPERTIES TIMEOUT 120
                         PASS_REGULAR_EXPRESSION "diagnose check sim-${c}-${m}: ok")
  endforeach()
endforeach()
add_test(NAME diagnose_sim_neverstop_trace
         COMMAND ${NCS_DG_CHECK} ${CMAKE_CURRENT_BINARY_DIR}/diagnose/sim-neverstop-trace sim-neverstop-trace)
set_tests_properties(diagnose_sim_neverstop_trace PROPERTIES TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "diagnose check sim-neverstop-trace: ok")
add_test(NAME diagnose_sim_mismatch-dtype_flight
         COMMAND ${NCS_DG_CHECK} ${CMAKE_CURRENT_BINARY_DIR}/diagnose/sim-mismatch-dtype-flight
                 sim-mismatch-dtype-flight)
set_tests_properties(diagnose_sim_mismatch-dtype_flight PROPERTIES TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "diagnose check sim-mismatch-dtype-flight: ok")
# gpu-*: the watchdog dumps of a real 2-GPU job (2xH200, NCCL 2.28.9; scripts/gpu-validate.sh):
# rank 1 slept before its 11th AllReduce while rank 0 waited inside it. Exit status 1 and rank 1
# named as never having entered, from outside NCCL, on both transports.
foreach(t nvlink socket)
  add_test(NAME diagnose_gpu_hang_${t}
           COMMAND sh -c "'$<TARGET_FILE:ncclscope>' diagnose '${CMAKE_CURRENT_SOURCE_DIR}/fixtures/gpu/hang-${t}'; echo rc=$?")
  set_tests_properties(diagnose_gpu_hang_${t} PROPERTIES TIMEOUT 60
    PASS_REGULAR_EXPRESSION "HANG   rank 1 never entered AllReduce #10 [^\n]*outside NCCL[^\n]*stuck in the application.*rc=1")
endforeach()
