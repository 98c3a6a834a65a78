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

# one diagnose_check.sh case: test NAME runs CASE in its own directory
function(ncs_dg_test name case timeout)
  add_test(NAME ${name} COMMAND ${NCS_DG_CHECK} ${CMAKE_CURRENT_BINARY_DIR}/diagnose/${case} ${case})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout}
                       PASS_REGULAR_EXPRESSION "diagnose check ${case}: ok")
endfunction()

foreach(c healthy skip stall mismatch kill kernel nokernel p2p lost orphan cupti)
  foreach(m trace flight)
    ncs_dg_test(diagnose_gen_${c}_${m} gen-${c}-${m} 60)
  endforeach()
endforeach()
# issue 32: a process killed before its writer wrote any operation, while its peers completed
# collectives that need it (a trace without footer: trace mode only)
ncs_dg_test(diagnose_gen_gone_trace gen-gone-trace 60)
# a hung job killed as a whole (traces without footers that stop together): no one died alone
foreach(c skip stall)
  ncs_dg_test(diagnose_gen_${c}_jobkill gen-${c}-jobkill 60)
endforeach()
foreach(c usage incidents heartbeat nocomp abi3)
  ncs_dg_test(diagnose_${c} ${c} 60)
endforeach()
# the shared filters (docs/diagnose.md, "Filters"): nccl-sim jobs in trace mode
foreach(c comm rank to healthy from range)
  ncs_dg_test(diagnose_filter_${c} filter-${c} 120)
endforeach()
# the reproducers of issues 14, 15, 24 and 32 (tests/diagnose_check.sh says what each was)
foreach(c flightdrops sampled-hang kill-mixed cut-first)
  ncs_dg_test(diagnose_repro_${c} repro-${c} 120)
  set_tests_properties(diagnose_repro_${c} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# nccl-sim with injected faults (docs/nccl-sim.md "Faults"): each names the injected rank and reason
foreach(c healthy skip stall mismatch kill)
  foreach(m flight trace)
    ncs_dg_test(diagnose_sim_${c}_${m} sim-${c}-${m} 120)
  endforeach()
endforeach()
# issue 31: stalls on every rank position of an 8-rank job, by mode and event set; no wrong rank
foreach(m trace flight)
  foreach(e default all)
    ncs_dg_test(diagnose_sweep_${m}_${e} sweep-${m}-${e} 300)
    # label sweep: the TSan stage leaves these out (16 nccl-sim jobs through the same paths as
    # the diagnose_sim_* tests it runs; scripts/test.sh)
    set_tests_properties(diagnose_sweep_${m}_${e} PROPERTIES LABELS sweep)
  endforeach()
endforeach()
ncs_dg_test(diagnose_sim_neverstop_trace sim-neverstop-trace 120)
ncs_dg_test(diagnose_sim_mismatch-dtype_flight sim-mismatch-dtype-flight 120)
# gpu-*: the watchdog dumps of a real 2-GPU job (2xH200, NCCL 2.28.9; scripts/gpu-validate.sh):
# rank 1 slept before its 11th AllReduce while rank 0 waited inside it. Exit status 1 and rank 1
# named as never having entered, from outside NCCL, on both transports.
foreach(t nvlink socket)
  add_test(NAME diagnose_gpu_hang_${t}
           COMMAND sh -c "'$<TARGET_FILE:ncclscope>' diagnose --wide '${CMAKE_CURRENT_SOURCE_DIR}/fixtures/gpu/hang-${t}'; echo rc=$?")
  set_tests_properties(diagnose_gpu_hang_${t} PROPERTIES TIMEOUT 60
    PASS_REGULAR_EXPRESSION "HANG   rank 1 never entered AllReduce #10 [^\n]*outside NCCL[^\n]*stuck in the application.*rc=1")
endforeach()
# idle-nccl-2.30.7: a real 2xH200 trace (NCCL 2.30.7 built from source, ex_collectives, CUPTI on)
# whose process hung for 100 s with nothing open in NCCL (2.30's Broadcast emits no Coll) and was
# killed: every recorded operation completed. Not "OK": CANNOT TELL (exit 4), naming the process,
# its idle time and its communicator. The same check on a trace that ended cleanly must stay OK.
add_test(NAME diagnose_gpu_idle_unended
         COMMAND sh -c "'$<TARGET_FILE:ncclscope>' diagnose --wide '${CMAKE_CURRENT_SOURCE_DIR}/fixtures/diagnose/idle-nccl-2.30.7'; echo rc=$?")
set_tests_properties(diagnose_gpu_idle_unended PROPERTIES TIMEOUT 60
  PASS_REGULAR_EXPRESSION "CANNOT TELL cannot tell whether process vm-19549 is healthy: its recording did not end cleanly and it made no NCCL call in its last 107.70 s.*communicator c[0-9]+ 0x90ace5f94510b308.*rc=4"
  FAIL_REGULAR_EXPRESSION "OK     nothing stuck")
# hang-threads-nccl-2.28.9: 2xH200, NCCL 2.28.9, the default events (every operation recorded), a
# trace (not flight): `ncclscope record -- ex_threads --ranks 2 --stall-rank 1 --stall-at 3
# --stall-s 60 --timeout 15`; rank 1 never joins AllReduce #3 and the example gives up. diagnose
# must name rank 1, from outside NCCL, and exit 1.
add_test(NAME diagnose_gpu_hang_threads_trace
         COMMAND sh -c "'$<TARGET_FILE:ncclscope>' diagnose --wide '${CMAKE_CURRENT_SOURCE_DIR}/fixtures/diagnose/hang-threads-nccl-2.28.9'; echo rc=$?")
set_tests_properties(diagnose_gpu_hang_threads_trace PROPERTIES TIMEOUT 60
  PASS_REGULAR_EXPRESSION "HANG   rank 1 never entered AllReduce #3 \\(communicator c[0-9]+ 0xdd44db355b699adf\\): it is outside NCCL[^\n]*stuck in the application.*rc=1")
