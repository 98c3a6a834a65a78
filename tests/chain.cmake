# chain.cmake - NCCLSCOPE_CHAIN (docs/chain.md): ncclscope forwards to a second plugin.
# Included by tests/CMakeLists.txt. The logger plugin (chain_logger.c) checks what it receives and
# counts it; chain_check.py compares the counts with nccl-sim's own and ncclscope's trace.

function(ncs_chainlog name)
  add_library(${name} SHARED ${CMAKE_CURRENT_LIST_DIR}/chain_logger.c ${CMAKE_SOURCE_DIR}/src/trace/format.c)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE -fvisibility=hidden)
  target_compile_definitions(${name} PRIVATE ${ARGN})
  target_link_libraries(${name} PRIVATE Threads::Threads)
  set_target_properties(${name} PROPERTIES PREFIX "lib")
endfunction()
ncs_chainlog(nccl-profiler-chainlog CHAINLOG_MAX_ABI=7)
ncs_chainlog(nccl-profiler-chainlog-v6 CHAINLOG_MAX_ABI=6)
ncs_chainlog(nccl-profiler-chainlog-v5 CHAINLOG_MAX_ABI=5)   # like Inspector: v5 only
ncs_chainlog(nccl-profiler-chainlog-v4 CHAINLOG_MAX_ABI=4)
ncs_chainlog(nccl-profiler-chainlog-v3 CHAINLOG_MAX_ABI=3)
ncs_chainlog(nccl-profiler-chainlog-only6 CHAINLOG_MIN_ABI=6)
ncs_chainlog(nccl-profiler-chainlog-only7 CHAINLOG_MIN_ABI=7)
ncs_chainlog(nccl-profiler-chainlog-noend CHAINLOG_NO_END=1)
ncs_chainlog(nccl-profiler-chainlog-none CHAINLOG_MIN_ABI=8)  # exports no ncclProfiler_vN

set(NCS_CH_W ${CMAKE_CURRENT_BINARY_DIR}/chain)
# ncs_chain_test(NAME LIB CASE [ENV...] -- NCCL-SIM ARGS...)
function(ncs_chain_test name lib case)
  set(env "")
  set(args "")
  set(seen 0)
  foreach(a ${ARGN})
    if(a STREQUAL "--" AND NOT seen)
      set(seen 1)
    elseif(seen)
      list(APPEND args "${a}")
    else()
      list(APPEND env "${a}")
    endif()
  endforeach()
  add_test(NAME chain_${name}
           COMMAND ${CMAKE_COMMAND} -E env ${env}
                   python3 ${CMAKE_CURRENT_LIST_DIR}/chain_check.py $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope> ${lib}
                   ${NCS_CH_W}/${name} ${case} ${args})
  set_tests_properties(chain_${name} PROPERTIES TIMEOUT 240 PASS_REGULAR_EXPRESSION "chain check: ok")
endfunction()

set(LOG $<TARGET_FILE:nccl-profiler-chainlog>)
# every ABI version nccl-sim speaks, the logger on the same version, every event on both sides
foreach(abi 7 6 5 4 3 2 1)
  ncs_chain_test(abi${abi} ${LOG} match -- --scenario mixed --ranks 4 --iters 10 --abi ${abi})
endforeach()
# the masks differ: ncclscope its defaults, the logger Inspector's (coll,kernel) and NULL for the
# ancestors; and the other way round
ncs_chain_test(masks_inspector ${LOG} match NCCLSCOPE_EVENTS=default CHAINLOG_EVENTS=coll,kernel
               CHAINLOG_NULL_ANCESTORS=1 -- --scenario mixed --ranks 4 --iters 10)
ncs_chain_test(masks_proxy ${LOG} match NCCLSCOPE_EVENTS=coll CHAINLOG_EVENTS=proxystep,net
               -- --scenario allreduce --ranks 4 --iters 10)
# the logger on an older version than NCCL's, as NCCL's adapters would feed it
ncs_chain_test(v7_to_v6 $<TARGET_FILE:nccl-profiler-chainlog-v6> match -- --scenario mixed --ranks 4 --iters 10 --abi 7)
ncs_chain_test(v7_to_v5 $<TARGET_FILE:nccl-profiler-chainlog-v5> match -- --scenario mixed --ranks 4 --iters 10 --abi 7)
# v7's KernelPhase on one side only (NCCL 2.31 adds KernelCh for it)
ncs_chain_test(masks_phase ${LOG} match NCCLSCOPE_EVENTS=coll CHAINLOG_EVENTS=kernelphase -- --scenario allreduce --ranks 4 --iters 10 --abi 7)
ncs_chain_test(v6_to_v5 $<TARGET_FILE:nccl-profiler-chainlog-v5> match -- --scenario mixed --ranks 4 --iters 10)
ncs_chain_test(v6_to_v4 $<TARGET_FILE:nccl-profiler-chainlog-v4> match -- --scenario mixed --ranks 4 --iters 10)
ncs_chain_test(v5_to_v4 $<TARGET_FILE:nccl-profiler-chainlog-v4> match -- --scenario mixed --ranks 4 --iters 10 --abi 5)
# call patterns: split (ProxyCtrl after the parent's finalize), abandoned events, graphs, reloads
ncs_chain_test(split ${LOG} match -- --scenario split --ranks 4 --iters 10)
ncs_chain_test(graph ${LOG} match -- --scenario graph --ranks 2 --iters 6)
ncs_chain_test(reload ${LOG} match -- --scenario reload --ranks 2 --iters 5)
# the project's empty plugin: ncclscope's trace is whole (its handles are one constant)
add_test(NAME chain_empty
         COMMAND ${CMAKE_COMMAND} -E env NCCLSCOPE_DIR=${NCS_CH_W}/empty NCCLSCOPE_CHAIN=$<TARGET_FILE:nccl-profiler-empty>
                 NCS_EMPTY_ANNOUNCE=1 $<TARGET_FILE:nccl-sim> --plugin $<TARGET_FILE:nccl-profiler-ncclscope>
                 --scenario mixed --ranks 4 --iters 20 --verbose)
set_tests_properties(chain_empty PROPERTIES TIMEOUT 120
  PASS_REGULAR_EXPRESSION "ncclscope-empty: abi=v[67].*NCCLSCOPE_CHAIN: table_full=0 parent_lost=0 stale=0 errors=0")
# failures that are survived
ncs_chain_test(missing_lib /nonexistent/libnccl-profiler-x.so "nochain:cannot load" -- --scenario allreduce --ranks 2)
ncs_chain_test(no_symbols $<TARGET_FILE:nccl-profiler-chainlog-none> "nochain:exports no ncclProfiler_v1..v7" -- --scenario allreduce --ranks 2)
ncs_chain_test(wrong_abi $<TARGET_FILE:nccl-profiler-chainlog-only6> "nochain:exports no ncclProfiler_v1..v4"
               -- --scenario allreduce --ranks 2 --abi 4)
ncs_chain_test(wrong_abi7 $<TARGET_FILE:nccl-profiler-chainlog-only7> "nochain:exports no ncclProfiler_v1..v6"
               -- --scenario allreduce --ranks 2 --abi 6)
ncs_chain_test(unsupported_pair $<TARGET_FILE:nccl-profiler-chainlog-v3> "nochain:speaks profiler ABI v3 and NCCL v7"
               -- --scenario allreduce --ranks 2)
ncs_chain_test(init_fails ${LOG} initfail CHAINLOG_FAIL_INIT=1 -- --scenario mixed --ranks 4 --iters 10)
ncs_chain_test(start_errors ${LOG} errors CHAINLOG_START_ERR=1 -- --scenario allreduce --ranks 2 --iters 10)
ncs_chain_test(null_entry_points $<TARGET_FILE:nccl-profiler-chainlog-noend> noend -- --scenario allreduce --ranks 2 --iters 10)
# ncclscope chained to itself (issue 32): the same library, and a copy under another name (a
# second instance that would chain itself again without end); the identity symbol refuses both
ncs_chain_test(self $<TARGET_FILE:nccl-profiler-ncclscope> "nochain:is ncclscope \\(this very library.*refused"
               -- --scenario mixed --ranks 4 --iters 10)
add_test(NAME chain_self_copy
         COMMAND sh -c "mkdir -p '${NCS_CH_W}' && cp '$<TARGET_FILE:nccl-profiler-ncclscope>' \
'${NCS_CH_W}/libnccl-profiler-other-name.so' && exec python3 '${CMAKE_CURRENT_LIST_DIR}/chain_check.py' \
'$<TARGET_FILE:nccl-sim>' '$<TARGET_FILE:nccl-profiler-ncclscope>' '$<TARGET_FILE:ncclscope>' \
'${NCS_CH_W}/libnccl-profiler-other-name.so' '${NCS_CH_W}/self_copy' \
'nochain:is ncclscope \\(another copy or build.*refused' --scenario mixed --ranks 4 --iters 10")
set_tests_properties(chain_self_copy PROPERTIES TIMEOUT 240 PASS_REGULAR_EXPRESSION "chain check: ok")
