# Capture and replay (docs/gpu.md): a capture is a trace recorded with NCCLSCOPE_CAPTURE=1;
# nccl-sim --replay plays it back against a plugin.
#
# replay_roundtrip_*  capture a nccl-sim scenario, replay it, and require the same job stats
# replay_fixture_*    replay every capture kept in tests/fixtures/gpu/<name>/ (recorded on real
#                     GPUs by scripts/gpu-run.sh) through ncclscope, checked by scenario_test:
#                     counts equal what was replayed, parent types, completions, seqNumbers,
#                     no drops. Also through the v6, v5 and v4 adapters (nccl-sim's default is v7).
set(NCS_RT ${CMAKE_CURRENT_SOURCE_DIR}/replay_roundtrip.sh)
foreach(s mixed pxn reload graph stale)
  add_test(NAME replay_roundtrip_${s}
           COMMAND sh ${NCS_RT} $<TARGET_FILE:nccl-sim> $<TARGET_FILE:nccl-profiler-ncclscope>
                   $<TARGET_FILE:ncclscope> ${CMAKE_CURRENT_BINARY_DIR}/replay-${s}
                   --scenario ${s} --procs 2 --ranks 4 --iters 20)
  set_tests_properties(replay_roundtrip_${s} PROPERTIES TIMEOUT 120
                       PASS_REGULAR_EXPRESSION "replay round trip: ok")
endforeach()
# reload and stale run in one process
set_tests_properties(replay_roundtrip_reload replay_roundtrip_stale PROPERTIES DISABLED FALSE)

# Fixture roots: tests/fixtures/gpu (NCCL 2.28.9) and any tests/fixtures/gpu-<name> (another NCCL);
# each has a file ABI whose first line is the profiler ABI version NCCL called in every one of
# its traces (fixture_*_recorded_abi checks it: the proof of which version that NCCL picks).
file(GLOB NCS_GPU_ROOTS LIST_DIRECTORIES true ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/gpu*)
foreach(root ${NCS_GPU_ROOTS})
  if(NOT IS_DIRECTORY ${root} OR NOT EXISTS ${root}/ABI)
    continue()
  endif()
  get_filename_component(rname ${root} NAME)
  set(prefix "")
  if(NOT rname STREQUAL "gpu")
    set(prefix "${rname}_")
  endif()
  file(STRINGS ${root}/ABI abi_line LIMIT_COUNT 1)
  string(REGEX MATCH "^[1-7]" root_abi "${abi_line}")
  file(GLOB NCS_GPU_FIXTURES LIST_DIRECTORIES true ${root}/*)
  foreach(dir ${NCS_GPU_FIXTURES})
    if(NOT IS_DIRECTORY ${dir})
      continue()
    endif()
    get_filename_component(name ${dir} NAME)
    set(name ${prefix}${name})
    add_test(NAME fixture_${name}_recorded_abi COMMAND ncs-trace-check ${dir} --abi ${root_abi})
    set_tests_properties(fixture_${name}_recorded_abi PROPERTIES PASS_REGULAR_EXPRESSION "PASS  abi ")
    ncs_scenario(fixture_${name} --scenario replay -- --replay ${dir} --speed 0)
    # the checks of scripts/gpu-run.sh on the replayed trace (abort leaves operations unfinished)
    set(flags --expect group,coll,kernel)
    if(name MATCHES "abort")
      list(APPEND flags --allow-missing-completion coll,p2p --no-seq-match)
    endif()
    add_test(NAME fixture_${name}_check
             COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/replay_check.sh $<TARGET_FILE:nccl-sim>
                     $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncs-trace-check> ${dir}
                     ${CMAKE_CURRENT_BINARY_DIR}/fixture-check-${name} ${flags})
    foreach(v 6 5 4)
      ncs_scenario(fixture_${name}_abi${v} --scenario replay --abi ${v} -- --replay ${dir} --speed 0)
    endforeach()
  endforeach()
endforeach()
