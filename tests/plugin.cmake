# plugin.cmake - ncs-trace-check, the checker scripts/gpu-run.sh runs on the traces of real NCCL
# runs (docs/gpu.md), tested here on traces that nccl-sim makes through the plugin.
# Included by tests/CMakeLists.txt.

add_executable(ncs-trace-check ${CMAKE_CURRENT_LIST_DIR}/trace_check.c)
target_link_libraries(ncs-trace-check PRIVATE ncs_trace)
# next to ncclscope in the build directory, where gpu-run.sh looks for it
set_target_properties(ncs-trace-check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

set(NCS_TC_DIR ${CMAKE_CURRENT_BINARY_DIR}/trace-check)
set(NCS_TC_CHECK sh ${CMAKE_CURRENT_LIST_DIR}/cli_check.sh)
set(NCS_TC_EXE $<TARGET_FILE:ncs-trace-check>)

# ncs_tc_gen(NAME [ENV...] -- NCCL-SIM ARGS...): traces of one nccl-sim run in ${NCS_TC_DIR}/NAME
function(ncs_tc_gen name)
  set(env "")
  set(args "")
  set(seen_sep 0)
  foreach(a ${ARGN})
    if(a STREQUAL "--" AND NOT seen_sep)
      set(seen_sep 1)
    elseif(seen_sep)
      list(APPEND args "${a}")
    else()
      list(APPEND env "${a}")
    endif()
  endforeach()
  add_test(NAME trace_check_gen_${name}
           COMMAND ${CMAKE_COMMAND} -E env NCCLSCOPE_DIR=${NCS_TC_DIR}/${name} NCCLSCOPE_EVENTS=all ${env}
                   $<TARGET_FILE:nccl-sim> --plugin $<TARGET_FILE:nccl-profiler-ncclscope> ${args})
  set_tests_properties(trace_check_gen_${name} PROPERTIES FIXTURES_SETUP ncs_tc_${name}
                       FIXTURES_REQUIRED ncs_tc_clean TIMEOUT 120)
endfunction()

# ncs_tc_test(NAME FIXTURE RC PATTERN... -- ncs-trace-check ARGS...)
function(ncs_tc_test name fixture rc)
  add_test(NAME trace_check_${name} COMMAND ${NCS_TC_CHECK} ${rc} ${ARGN})
  set_tests_properties(trace_check_${name} PROPERTIES FIXTURES_REQUIRED ncs_tc_${fixture})
endfunction()

add_test(NAME trace_check_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${NCS_TC_DIR})
set_tests_properties(trace_check_clean PROPERTIES FIXTURES_SETUP ncs_tc_clean)

# a healthy run: every check passes
ncs_tc_gen(mixed -- --scenario mixed --ranks 4 --iters 40)
ncs_tc_test(mixed mixed 0 "^PASS +files" "^PASS +footers" "^PASS +drops +0 records" "^PASS +expected"
  "^PASS +completion +Coll [0-9]+ of [0-9]+ completed" "^PASS +seqmatch +2 communicators" "^INFO +events .*coll=[1-9]"
  "^verdict: PASS" "!FAIL"
  -- ${NCS_TC_EXE} ${NCS_TC_DIR}/mixed --expect group,coll,p2p,kernel,proxyop,proxystep,api)
# ranks in two processes: seqNumbers are matched across files
ncs_tc_gen(procs -- --scenario mixed --ranks 4 --procs 2 --iters 30)
ncs_tc_test(procs procs 0 "^PASS +files +2 trace files" "^PASS +seqmatch" "^verdict: PASS"
  -- ${NCS_TC_EXE} ${NCS_TC_DIR}/procs --expect coll,p2p)
# --abi: the version NCCL (here nccl-sim) called, proven from the COMM records
ncs_tc_gen(abi6 -- --scenario allreduce --ranks 2 --iters 4 --abi 6)
ncs_tc_test(abi_match abi6 0 "^PASS +abi +2 communicator records, want all of ABI v6: v6 2" "^verdict: PASS"
  -- ${NCS_TC_EXE} ${NCS_TC_DIR}/abi6 --abi 6)
ncs_tc_test(abi_other abi6 1 "^FAIL +abi +2 communicator records, want all of ABI v7: v6 2" "^verdict: FAIL"
  -- ${NCS_TC_EXE} ${NCS_TC_DIR}/abi6 --abi 7)
# a type that was not recorded: FAIL with --expect, WARN with --want
ncs_tc_gen(collonly NCCLSCOPE_EVENTS=coll -- --scenario allreduce --ranks 2 --iters 10)
ncs_tc_test(expect_missing collonly 1 "^FAIL +expected +not seen: p2p,kernel" "^verdict: FAIL"
  -- ${NCS_TC_EXE} ${NCS_TC_DIR}/collonly --expect coll,p2p,kernel)
ncs_tc_test(want_missing collonly 0 "^WARN +wanted +not seen: proxyop" "^verdict: PASS [(]1 warnings[)]"
  -- ${NCS_TC_EXE} ${NCS_TC_DIR}/collonly --expect coll --want proxyop --allow-missing-completion coll)
# the buffer pool overflows: drops must fail the check
ncs_tc_gen(flood NCCLSCOPE_BUFFER_SIZE=1M -- --scenario flood --threads 2 --events 3000000)
ncs_tc_test(drops flood 1 "^FAIL +drops +[1-9][0-9]* records dropped" "^verdict: FAIL"
  -- ${NCS_TC_EXE} ${NCS_TC_DIR}/flood --no-seq-match)
# rank 0 recorded collectives that rank 1 did not: a second, longer single-rank run of the same
# communicator (nccl-sim's commIds come from the seed) lands in the same directory
ncs_tc_gen(seqa -- --scenario allreduce --ranks 2 --procs 2 --iters 5)
add_test(NAME trace_check_gen_seqb
         COMMAND ${CMAKE_COMMAND} -E env NCCLSCOPE_DIR=${NCS_TC_DIR}/seqa NCCLSCOPE_EVENTS=all
                 $<TARGET_FILE:nccl-sim> --plugin $<TARGET_FILE:nccl-profiler-ncclscope>
                 --scenario allreduce --ranks 1 --iters 8)
set_tests_properties(trace_check_gen_seqb PROPERTIES FIXTURES_SETUP ncs_tc_seqb FIXTURES_REQUIRED ncs_tc_seqa)
ncs_tc_test(seq_mismatch seqb 1 "differ; first: AllReduce seqNumber 5 only on rank 0" "^FAIL +seqmatch"
  "^verdict: FAIL" -- ${NCS_TC_EXE} ${NCS_TC_DIR}/seqa)
# no traces, bad arguments
ncs_tc_test(no_traces clean 1 "^FAIL +files +no trace files" -- ${NCS_TC_EXE} ${CMAKE_CURRENT_LIST_DIR}/fuzz)
ncs_tc_test(bad_type clean 2 "unknown event type 'colll'" -- ${NCS_TC_EXE} ${NCS_TC_DIR} --expect colll)
ncs_tc_test(usage clean 2 "usage: ncs-trace-check" -- ${NCS_TC_EXE})

# The instruction budget of the event path per call (callgrind counts, the same on any machine;
# tests/hotpath_budget.sh). Sanitizers add instructions, so only the plain build counts them.
if(NOT NCS_SANITIZE)
  add_test(NAME hotpath_budget
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hotpath_budget.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> ${CMAKE_CURRENT_BINARY_DIR}/hotpath-budget)
  set_tests_properties(hotpath_budget PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "hotpath budget: ok")
  # the read side's, per record of a real NCCL trace (tests/read_budget.sh)
  add_test(NAME read_budget
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/read_budget.sh $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/read-budget)
  set_tests_properties(read_budget PROPERTIES TIMEOUT 600 PASS_REGULAR_EXPRESSION "read budget: ok")
endif()
