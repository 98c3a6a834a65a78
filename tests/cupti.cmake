# cupti.cmake - GPU truth without a GPU (docs/gpu-truth.md, docs/testing.md "Fake CUPTI"):
# tests/fake_cupti.c is a libcupti that nccl-sim drives as the CUDA driver would. The plugin
# finds it loaded, subscribes, and joins the fake kernels to NCCL's KernelLaunch events; the
# checks compare the trace with what nccl-sim says really ran (--gpu-truth).

# the fake library, named and versioned as the real one (SONAME libcupti.so.13)
add_library(fake_cupti SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cupti.c)
target_include_directories(fake_cupti PRIVATE ${CMAKE_SOURCE_DIR}/src)
# its entry points are an API defined by name (CUPTI's and fakecupti_*), not by a header here
target_compile_options(fake_cupti PRIVATE -fvisibility=hidden -Wno-missing-prototypes)
target_link_libraries(fake_cupti PRIVATE Threads::Threads)
set_target_properties(fake_cupti PROPERTIES OUTPUT_NAME cupti SUFFIX ".so.13" NO_SONAME ON
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fakecupti)
target_link_options(fake_cupti PRIVATE -Wl,-soname,libcupti.so.13)

# a fake CUDA driver beside it (the current context the range profiler needs; nccl-sim --cuda)
add_library(fake_cuda SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cuda.c)
target_compile_options(fake_cuda PRIVATE -fvisibility=hidden -Wno-missing-prototypes)
set_target_properties(fake_cuda PROPERTIES OUTPUT_NAME cuda SUFFIX ".so.1" NO_SONAME ON
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fakecupti)
target_link_options(fake_cuda PRIVATE -Wl,-soname,libcuda.so.1)

# the checker: a trace's GPU records against what really ran (also used on real GPUs)
add_executable(ncs-cupti-check ${CMAKE_CURRENT_LIST_DIR}/cupti_check.c)
target_link_libraries(ncs-cupti-check PRIVATE ncs_trace)
set_target_properties(ncs-cupti-check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# cupti_test(NAME EXPECT SIM-ARGS... [ENV var=value...] [CHECK checker-args...])
# Runs nccl-sim under the plugin with NCCLSCOPE_CUPTI=on and the fake, then the checker; EXPECT
# is a regular expression the output must match besides "cupti check: ok".
function(cupti_test name expect)
  cmake_parse_arguments(CT "" "" "ENV;CHECK" ${ARGN})
  string(REPLACE ";" " " CT_ENV "${CT_ENV}")
  string(REPLACE ";" " " CT_CHECK "${CT_CHECK}")
  add_test(NAME cupti_${name}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cupti_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:fake_cupti>
                   $<TARGET_FILE:ncs-cupti-check> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/cupti-${name} "${CT_ENV}" "${CT_CHECK}"
                   ${CT_UNPARSED_ARGUMENTS})
  set_tests_properties(cupti_${name} PROPERTIES TIMEOUT 180
                       PASS_REGULAR_EXPRESSION "cupti check: ok.*${expect}"
                       FAIL_REGULAR_EXPRESSION "FAILED|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|runtime error")
endfunction()

# the join: eager kernels by correlation id, compute kernels joined to nothing
cupti_test(eager "nccl_eager=24 nccl_replays=0 compute=48 .*ops_with_cupti=24/24"
           --scenario allreduce --ranks 4 --iters 6 --compute 2)
cupti_test(mixed "nccl_eager=[1-9][0-9]* .*compute=[1-9]"
           --scenario mixed --ranks 4 --comms 2 --iters 6 --compute 1 --procs 2)
cupti_test(alltoall "nccl_eager=24 .*ops_with_cupti=144/144"
           --scenario alltoall --ranks 4 --iters 6)
cupti_test(grouped "nccl_eager=[1-9]"
           --scenario grouped --ranks 4 --iters 6 --threads 2)
# CUDA graphs: captured nodes, their instantiated copies, replays with the captured operations;
# compute kernels captured in the same graph join nothing; with KernelCh off nothing else fires
# at replay
cupti_test(graph "nccl_eager=24 nccl_replays=20 compute=[1-9]"
           --scenario graph --ranks 4 --iters 6 --replays 5 --compute 1 --procs 2)
cupti_test(graph_no_kernelch "nccl_replays=20 .*ops_with_kernelch=0"
           --scenario graph --ranks 4 --iters 6 --replays 5 --compute 1
           ENV NCCLSCOPE_EVENTS=api,group,coll,p2p,launch)
cupti_test(graph_single_thread "nccl_replays=16 "
           --scenario graph --ranks 4 --procs 2 --threads 1 --iters 4 --replays 4)
# no GRAPHNODE_CLONED: nodes matched by index; no cuGraphLaunch callback: replay index by arrival
cupti_test(graph_by_index "nccl_replays=12 "
           --scenario graph --ranks 2 --iters 4 --replays 6 ENV FAKECUPTI=no_clone)
cupti_test(graph_no_launch_callback "nccl_replays=12 "
           --scenario graph --ranks 2 --iters 4 --replays 6 ENV FAKECUPTI=no_graph_launch)
# bad records: zero and reversed times flagged, other kinds skipped, a corrupt buffer counted
cupti_test(bad_records "bad=[1-9]"
           --scenario allreduce --ranks 4 --iters 20 --compute 2
           ENV FAKECUPTI=bad_every=7,other_every=5,corrupt_after=30 CHECK --min-bad 10)
# lost records are counted: CUPTI drops, and buffers refused when the pool is empty
cupti_test(dropped "missing=[1-9][0-9]* lost_counted="
           --scenario allreduce --ranks 4 --iters 20 --compute 2
           ENV FAKECUPTI=drop_every=9 CHECK --allow-lost)
cupti_test(no_buffer "state=active"
           --scenario allreduce --ranks 4 --iters 30 --compute 8
           ENV FAKECUPTI=buffer_records=1 NCCLSCOPE_CUPTI_BUFFER_SIZE=2M CHECK --allow-lost)
# hangs: launches that never completed are pending, on every rank that hung (rank 1 skipped the
# operation: it launched nothing)
cupti_test(hang "hung=3 pending=3"
           --scenario allreduce --ranks 4 --iters 8 --fault skip:1:5 --hang-s 1)
cupti_test(flight_hang "hung=3 pending=3"
           --scenario allreduce --ranks 4 --iters 300 --compute 2 --fault skip:1:250 --hang-s 1
           ENV NCCLSCOPE_MODE=flight NCCLSCOPE_FLIGHT_SIZE=1M)
# the degrade paths: the plugin works as without CUPTI, and the trace says why
# (busy: rank 0 sleeps 20 ms before each of its 6 operations, so that many flush periods pass: none may
# touch CUPTI)
cupti_test(busy "state=busy .*ops_with_kernelch=24"
           --scenario allreduce --ranks 4 --iters 6 --slow-rank 0 --slow-us 20000
           ENV FAKECUPTI=holder=CUPTI_for_kineto NCCLSCOPE_FLUSH_MS=5 CHECK --state busy --holder kineto)
cupti_test(subscribe_refused "state=failed .*ops_with_kernelch=24"
           --scenario allreduce --ranks 4 --iters 6
           ENV FAKECUPTI=subscribe_error=15 CHECK --state failed --reason CUPTI_ERROR_NOT_INITIALIZED)
cupti_test(enable_refused "state=failed"
           --scenario allreduce --ranks 4 --iters 6
           ENV FAKECUPTI=enable_error=35 CHECK --state failed --reason cuptiActivityEnable)
cupti_test(no_library "state=unavailable .*ops_with_kernelch=24"
           --scenario allreduce --ranks 4 --iters 6 --no-cupti
           ENV NCCLSCOPE_CUPTI_LIB=/nonexistent/libcupti.so.13 CHECK --state unavailable --reason nonexistent)
cupti_test(off "state=off .*ops_with_kernelch=24"
           --scenario allreduce --ranks 4 --iters 6 ENV NCCLSCOPE_CUPTI=off CHECK --state off)
# (every record is handed back as the next one comes, and every flush fails once 8 kernel
# records were: what was delivered before stays, compute kernels among them, and the flushes
# fail whatever the machine's pace, at the latest the one at exit; rank 0 spends 200 us before
# each of its 400 operations, so that flushes fail while the job runs too)
cupti_test(flush_errors "state=failed .*compute=[1-9]"
           --scenario allreduce --ranks 4 --iters 400 --compute 2 --slow-rank 0 --slow-us 200
           ENV FAKECUPTI=buffer_records=1,flush_error_after_kernels=8 NCCLSCOPE_FLUSH_MS=5
           CHECK --state failed --reason cuptiActivityFlushAll)
# a second CUPTI client after ours is refused with our name (what PyTorch's profiler would see)
cupti_test(other_client "state=active"
           --scenario allreduce --ranks 2 --iters 4 --cupti-other)

# the plugin's CUPTI declarations against the real headers, where a CUDA toolkit has them
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  find_path(NCS_CUPTI_INCLUDE_DIR cupti.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/extras/CUPTI/include
                  ${CUDAToolkit_TARGET_DIR}/extras/CUPTI/include)
endif()
if(NCS_CUPTI_INCLUDE_DIR)
  add_executable(test_cupti_decl ${CMAKE_CURRENT_LIST_DIR}/test_cupti_decl.c)
  target_include_directories(test_cupti_decl SYSTEM PRIVATE ${NCS_CUPTI_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  target_include_directories(test_cupti_decl PRIVATE ${CMAKE_SOURCE_DIR}/src)
  add_test(NAME cupti_declarations COMMAND test_cupti_decl)
  set_tests_properties(cupti_declarations PROPERTIES PASS_REGULAR_EXPRESSION "cupti declarations: ok")
else()
  message(STATUS "ncclscope: CUPTI headers not found; the check of the plugin's CUPTI declarations is skipped")
endif()

# the GPU chunks through the encoder and the reader, and their damage handling
add_executable(test_gpu_format ${CMAKE_CURRENT_LIST_DIR}/test_gpu_format.c)
target_link_libraries(test_gpu_format PRIVATE ncs_trace ncs_tracegen)
add_test(NAME cupti_format COMMAND test_gpu_format)
set_tests_properties(cupti_format PROPERTIES PASS_REGULAR_EXPRESSION "gpu format: ok")

# what CUPTI on adds to NCCL's thread per kernel launch, in instructions (callgrind); sanitizers
# add instructions, so only the plain build counts them
if(NOT NCS_SANITIZE)
  add_test(NAME cupti_launch_cost
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cupti_launch_cost.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:fake_cupti>
                   ${CMAKE_CURRENT_BINARY_DIR}/cupti-launch-cost)
  set_tests_properties(cupti_launch_cost PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "cupti launch cost: ok")
endif()

# ncclscope record --cupti on: the plugin takes CUPTI and the trace says so
ncs_cli_test(record_cupti_bad 2 "--cupti must be on or off" -- ${NCS_EXE} record --cupti maybe -- true)
add_test(NAME cupti_record
         COMMAND sh -c "rm -rf '${CMAKE_CURRENT_BINARY_DIR}/cupti-record' && \
'$<TARGET_FILE:ncclscope>' record -o '${CMAKE_CURRENT_BINARY_DIR}/cupti-record' --cupti on -- \
'$<TARGET_FILE:nccl-sim>' --cupti '$<TARGET_FILE:fake_cupti>' --scenario allreduce --ranks 2 --iters 3 >/dev/null && \
'$<TARGET_FILE:ncclscope>' dump --stats '${CMAKE_CURRENT_BINARY_DIR}/cupti-record'")
set_tests_properties(cupti_record PROPERTIES PASS_REGULAR_EXPRESSION
                     "CUPTI: active.*kernels \\(CUPTI\\): 6: 6 NCCL eager.*6 from CUPTI")

# the checker's --counts mode (what scripts/gpu-cupti.sh runs on real GPUs), on a simulated job
# whose counts are known: 2 ranks x 4 iterations of an eager AllReduce and one compute kernel,
# and a captured group (AllReduce + AllGather) with one compute kernel replayed 3 times
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cupti-counts.expect
     "expect name=sim_gemm_128x128_kernel graph=0 count=8 min_ns=20000\n"
     "expect name=sim_gemm_128x128_kernel graph=1 count=6 replays=3 min_ns=20000\n"
     "expect nccl=eager count=8 func=AllReduce\n"
     "expect nccl=graph count=6 replays=3\n")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cupti-counts-wrong.expect
     "expect name=sim_gemm_128x128_kernel graph=1 count=6 replays=4\n"
     "expect nccl=eager count=9 func=AllGather\n")
foreach(c counts counts-wrong)
  add_test(NAME cupti_${c}
           COMMAND sh -c "rm -rf '${CMAKE_CURRENT_BINARY_DIR}/cupti-${c}' && \
NCCLSCOPE_CUPTI=on NCCLSCOPE_DIR='${CMAKE_CURRENT_BINARY_DIR}/cupti-${c}' '$<TARGET_FILE:nccl-sim>' \
--plugin '$<TARGET_FILE:nccl-profiler-ncclscope>' --cupti '$<TARGET_FILE:fake_cupti>' --scenario graph \
--ranks 2 --iters 4 --replays 3 --compute 1 >/dev/null && \
'$<TARGET_FILE:ncs-cupti-check>' --counts '${CMAKE_CURRENT_BINARY_DIR}/cupti-${c}' \
'${CMAKE_CURRENT_BINARY_DIR}/cupti-${c}.expect'")
endforeach()
set_tests_properties(cupti_counts PROPERTIES PASS_REGULAR_EXPRESSION
                     "cupti check: ok counts: 28 kernels .*NCCL AllReduce eager 8, NCCL kernels replayed 6")
# the wrong expectations must fail, each for its own reason
set_tests_properties(cupti_counts-wrong PROPERTIES PASS_REGULAR_EXPRESSION
                     "not joined to its AllGather.*3 replays, 4 ran.*NCCL kernels eager: 8 kernels in the trace, 9 ran.*FAILED")

# a capture from a real GPU (one H200, scripts/gpu-cupti.sh part 1: examples/ex_cupti --iters 50
# --replays 20 under NCCLSCOPE_CUPTI=on; tests/fixtures/cupti/README.md): the reader, dump and the
# checker on what real CUPTI wrote, and the checker still refuses a count one off
set(NCS_CUPTI_FX ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/cupti/h200-ex_cupti)
add_test(NAME cupti_fixture_h200
         COMMAND sh -c "'$<TARGET_FILE:ncs-cupti-check>' --counts '${NCS_CUPTI_FX}' '${NCS_CUPTI_FX}/expect.txt' && \
'$<TARGET_FILE:ncclscope>' dump --stats '${NCS_CUPTI_FX}'")
set_tests_properties(cupti_fixture_h200 PROPERTIES PASS_REGULAR_EXPRESSION
  "cupti check: ok counts: 190 kernels \\(0 not the program's\\), ncs_spin eager 150, ncs_spin replayed 20, ncs_empty replayed 20.*CUPTI: active.*kernels \\(CUPTI\\): 190: 0 NCCL eager, 0 NCCL graph replays, 190 other; 0 without usable times")
add_test(NAME cupti_fixture_h200_wrong
         COMMAND sh -c "sed 's/count=150/count=151/' '${NCS_CUPTI_FX}/expect.txt' > '${CMAKE_CURRENT_BINARY_DIR}/cupti-fx-wrong.expect' && \
'$<TARGET_FILE:ncs-cupti-check>' --counts '${NCS_CUPTI_FX}' '${CMAKE_CURRENT_BINARY_DIR}/cupti-fx-wrong.expect'; echo rc=$?")
set_tests_properties(cupti_fixture_h200_wrong PROPERTIES PASS_REGULAR_EXPRESSION
  "ncs_spin eager: 150 kernels in the trace, 151 ran.*FAILED.*rc=1")

# the analysis of CUPTI's kernels (docs/gpu-truth.md, "Analysis"): report --json and SQLite
# against what nccl-sim ran: overlap and exposed communication per GPU recomputed from the truth,
# GPU-time sources, replays; without CUPTI no number is invented; with CUPTI's records lost the
# report says it cannot tell
function(gpu_analysis_test name mode expect)
  cmake_parse_arguments(GA "" "" "ENV" ${ARGN})
  string(REPLACE ";" " " GA_ENV "${GA_ENV}")
  add_test(NAME cupti_analysis_${name}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gpu_analysis.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:fake_cupti>
                   $<TARGET_FILE:ncclscope> ${CMAKE_CURRENT_LIST_DIR}/gpu_analysis_check.py
                   $<TARGET_FILE:ncs-pftrace-lint> ${CMAKE_CURRENT_BINARY_DIR}/cupti-analysis-${name} ${mode} "${GA_ENV}"
                   ${GA_UNPARSED_ARGUMENTS})
  set_tests_properties(cupti_analysis_${name} PROPERTIES TIMEOUT 180
                       PASS_REGULAR_EXPRESSION "gpu analysis check: ok ${mode}.*${expect}|${expect}.*gpu analysis check: ok ${mode}"
                       FAIL_REGULAR_EXPRESSION "FAILED|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|runtime error")
endfunction()
gpu_analysis_test(graph full "24 replay records"
                  --scenario graph --ranks 4 --procs 2 --iters 6 --replays 3 --compute 2)
gpu_analysis_test(eager full "'cupti': 24"
                  --scenario allreduce --ranks 4 --iters 6 --compute 2)
gpu_analysis_test(off off "no overlap numbers"
                  --scenario allreduce --ranks 4 --iters 6 --compute 2 ENV NCCLSCOPE_CUPTI=off)
gpu_analysis_test(busy off "no overlap numbers"
                  --scenario allreduce --ranks 4 --iters 6 --compute 2 ENV FAKECUPTI=holder=CUPTI_for_kineto)
gpu_analysis_test(lost lost "CUPTI dropped"
                  --scenario allreduce --ranks 4 --iters 20 --compute 2 ENV FAKECUPTI=drop_every=9)

# diagnose with CUPTI (docs/diagnose.md, "CUPTI"): the hung ranks' NCCL kernels were launched and
# never completed; with CUPTI's records dropped the same launches are no evidence
foreach(c hang lost)
  set(_env "")
  if(c STREQUAL "lost")
    set(_env "FAKECUPTI=drop_every=3")
  endif()
  add_test(NAME cupti_diagnose_${c}
           COMMAND sh -c "rm -rf '${CMAKE_CURRENT_BINARY_DIR}/cupti-diagnose-${c}' && \
env NCCLSCOPE_CUPTI=on NCCLSCOPE_DIR='${CMAKE_CURRENT_BINARY_DIR}/cupti-diagnose-${c}' ${_env} '$<TARGET_FILE:nccl-sim>' \
--plugin '$<TARGET_FILE:nccl-profiler-ncclscope>' --cupti '$<TARGET_FILE:fake_cupti>' --scenario allreduce \
--ranks 4 --iters 8 --compute 2 --fault skip:1:5 --hang-s 1 >/dev/null 2>&1; \
'$<TARGET_FILE:ncclscope>' diagnose '${CMAKE_CURRENT_BINARY_DIR}/cupti-diagnose-${c}'; echo exit=$?")
endforeach()
set_tests_properties(cupti_diagnose_hang PROPERTIES PASS_REGULAR_EXPRESSION
  "rank 1 never entered AllReduce #5.*rank 0 .*CUPTI: the NCCL kernel of AllReduce #5 \\(KernelLaunch [0-9]+, stream 0x[0-9a-f]+\\) was launched .* before CUPTI's last flush and never completed.*exit=1"
  FAIL_REGULAR_EXPRESSION "CUPTI lost records|against a hang|ERROR: AddressSanitizer|runtime error")
set_tests_properties(cupti_diagnose_lost PROPERTIES PASS_REGULAR_EXPRESSION
  "rank 1 never entered AllReduce #5.*CUPTI lost records \\(CUPTI dropped [0-9]+ records\\): its kernel launches without kernels are no evidence of a hang.*exit=1"
  FAIL_REGULAR_EXPRESSION "never completed|ERROR: AddressSanitizer|runtime error")

# the H200 capture through the analysis (docs/gpu-truth.md, "Analysis"): one GPU, 190 kernels that
# are not NCCL's: the report's compute time is the union of its KERNEL records (from dump), no NCCL
# time, no GPU-time source or replay invented; the timeline has a CUPTI slice per kernel
add_test(NAME cupti_fixture_h200_analysis
         COMMAND sh -c "'$<TARGET_FILE:ncclscope>' report --json '${NCS_CUPTI_FX}' > '${CMAKE_CURRENT_BINARY_DIR}/cupti-fx.json' && \
'$<TARGET_FILE:ncclscope>' dump '${NCS_CUPTI_FX}' > '${CMAKE_CURRENT_BINARY_DIR}/cupti-fx.dump' && \
'$<TARGET_FILE:ncclscope>' export '${NCS_CUPTI_FX}' --format chrome --force -o '${CMAKE_CURRENT_BINARY_DIR}/cupti-fx.chrome.json' >/dev/null 2>&1 && \
python3 '${CMAKE_CURRENT_LIST_DIR}/gpu_analysis_check.py' fixture '${CMAKE_CURRENT_BINARY_DIR}/cupti-fx.json' \
'${CMAKE_CURRENT_BINARY_DIR}/cupti-fx.dump' - '${CMAKE_CURRENT_BINARY_DIR}/cupti-fx.chrome.json'")
set_tests_properties(cupti_fixture_h200_analysis PROPERTIES PASS_REGULAR_EXPRESSION
                     "gpu analysis check: ok fixture: 190 kernels")
