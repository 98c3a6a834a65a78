# ranges.cmake - user ranges and their hardware metrics without a GPU (docs/ranges.md,
# docs/testing.md "User ranges"): nccl-sim runs its iterations inside ranges through the plugin's
# range API; with --fake it plays the CUDA driver under the fake CUPTI (tests/fake_cupti.c, whose
# range profiler counts what was launched inside each range) and the fake libcuda. The checks
# compare the trace with what nccl-sim says happened inside each range (--range-truth).

add_executable(ncs-range-check ${CMAKE_CURRENT_LIST_DIR}/range_check.c)
target_link_libraries(ncs-range-check PRIVATE ncs_trace)
set_target_properties(ncs-range-check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# range_test(NAME EXPECT SIM-ARGS... [ENV var=value...] [CHECK checker-args...])
function(range_test name expect)
  cmake_parse_arguments(RT "" "" "ENV;CHECK" ${ARGN})
  string(REPLACE ";" " " RT_ENV "${RT_ENV}")
  string(REPLACE ";" " " RT_CHECK "${RT_CHECK}")
  add_test(NAME ranges_${name}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/range_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> ${CMAKE_BINARY_DIR}/fakecupti
                   $<TARGET_FILE:ncs-range-check> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/ranges-${name} "${RT_ENV}" "${RT_CHECK}"
                   ${RT_UNPARSED_ARGUMENTS})
  set_tests_properties(ranges_${name} PROPERTIES TIMEOUT 180
                       PASS_REGULAR_EXPRESSION "range check: ok.*${expect}"
                       FAIL_REGULAR_EXPRESSION "FAILED|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|runtime error")
endfunction()

# ranges through the API, no CUPTI: names, nesting, threads, the operations inside each
range_test(api "ranges=30 matched=30 ops=40 .*marks=10 .*state=off"
           --scenario allreduce --ranks 4 --threads 2 --iters 5 CHECK --values none --state off)
range_test(api_procs "files=2 ranges=72 matched=72 .*marks=24 "
           --scenario mixed --ranks 4 --procs 2 --iters 6 CHECK --values none)
# with the fake CUPTI: compute kernels inside their ranges; metrics of the default set, exact
range_test(metrics "metrics=8/8 .*state=active"
           --scenario allreduce --ranks 4 --threads 1 --iters 8 --compute 2 --fake
           ENV NCCLSCOPE_RANGE_METRICS=default)
# the 2000-range limit others hit: a counter buffer of 4 ranges, 30 ranges roll over to fresh
# buffers, every value exact. (An iteration takes 5 ms, so the writer normally keeps up and
# nothing goes unmeasured; on a loaded machine a range that finds no buffer free is counted
# unmeasured (no_buffer), and the checker accounts for every one: what it asserts does not
# depend on the machine's pace.)
range_test(metrics_rollover "metrics=[0-9]+/30 buffers=([2-9]|[1-9][0-9]) "
           --scenario allreduce --ranks 2 --threads 1 --iters 30 --compute 1 --slow-rank 0 --slow-us 5000 --fake
           ENV NCCLSCOPE_RANGE_METRICS=default NCCLSCOPE_RANGE_METRICS_RANGES=4
           CHECK --values some --allow-lost --min-buffers 2)
# a writer too slow for buffers of one range (100 ms to evaluate each): ranges go unmeasured, and
# every one is counted (no_buffer)
range_test(metrics_no_buffer "unmeasured=[1-9]"
           --scenario allreduce --ranks 2 --threads 1 --iters 100 --fake
           ENV NCCLSCOPE_RANGE_METRICS=default NCCLSCOPE_RANGE_METRICS_RANGES=1 FAKECUPTI=eval_delay_us=100000
           CHECK --values some --allow-lost)
# a metric that needs several passes is refused, with its name and the passes, said once; the
# ranges are still recorded
range_test(metrics_multipass "metrics=0/0 .*state=refused"
           --scenario allreduce --ranks 2 --threads 1 --iters 4 --fake --verbose
           ENV NCCLSCOPE_RANGE_METRICS=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
           CHECK --values none --state refused --reason sm__throughput.avg.pct_of_peak_sustained_elapsed
                 --log-once @LOG@ needs)
range_test(metrics_unknown "state=refused"
           --scenario allreduce --ranks 2 --threads 1 --iters 4 --fake
           ENV NCCLSCOPE_RANGE_METRICS=gpu__time_duration.sum,no__such_metric.sum
           CHECK --values none --state refused --reason no__such_metric.sum)
# replay, asked for: each of 8 passes measures one of 8 successive steps; 28 steps make 3 groups,
# the 4 steps of the unfinished fourth are counted lost
range_test(metrics_replay "metrics=3/28 .*unmeasured=4 "
           --scenario allreduce --ranks 2 --threads 1 --iters 28 --fake
           ENV NCCLSCOPE_RANGE_METRICS=gpu__time_duration.sum,dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
               NCCLSCOPE_RANGE_REPLAY=user
           CHECK --values some --replay 8 --allow-lost)
# no access to the performance counters: one clear warning; ranges, kernels and everything else
# are still recorded
range_test(metrics_privileges "ops=16 kernels=8 .*state=no-privileges"
           --scenario allreduce --ranks 2 --threads 1 --iters 4 --fake --verbose
           ENV NCCLSCOPE_RANGE_METRICS=default FAKECUPTI=privileges
           CHECK --values none --state no-privileges --log-once @LOG@ no-privileges)
# the counters are another tool's; another CUPTI client holds CUPTI; no CUDA driver
range_test(metrics_counters_busy "state=busy"
           --scenario allreduce --ranks 2 --threads 1 --iters 4 --fake
           ENV NCCLSCOPE_RANGE_METRICS=default FAKECUPTI=counters_busy CHECK --values none --state busy --reason counters)
range_test(metrics_cupti_busy "state=busy"
           --scenario allreduce --ranks 2 --threads 1 --iters 4 --fake
           ENV NCCLSCOPE_RANGE_METRICS=default FAKECUPTI=holder=CUPTI_for_nsys CHECK --values none --state busy --reason nsys)
range_test(metrics_no_driver "state=unavailable"
           --scenario allreduce --ranks 2 --threads 1 --iters 4 --fake-no-driver
           ENV NCCLSCOPE_RANGE_METRICS=default CHECK --values none --state unavailable --reason libcuda)
# the default set leaves NVLink out where the chip has none, or where it needs another pass
range_test(metrics_no_nvlink "metrics=6/6 .*state=active"
           --scenario allreduce --ranks 2 --threads 1 --iters 6 --fake
           ENV NCCLSCOPE_RANGE_METRICS=default FAKECUPTI=no_nvlink CHECK --reason NVLink)
range_test(metrics_nvlink_passes "metrics=6/6 .*state=active"
           --scenario allreduce --ranks 2 --threads 1 --iters 6 --fake
           ENV NCCLSCOPE_RANGE_METRICS=default FAKECUPTI=nvlink_passes=2 CHECK --reason NVLink)
# the metrics level: the level-2 ranges (comm, optimizer) of the metrics thread
range_test(metrics_level2 "metrics=16/16 .*state=active"
           --scenario allreduce --ranks 2 --threads 1 --iters 8 --compute 1 --fake
           ENV NCCLSCOPE_RANGE_METRICS=sm__cycles_active.avg,dram__bytes_write.sum NCCLSCOPE_RANGE_METRICS_LEVEL=2)
# two threads: one is the metrics thread (the other's kernels land in its ranges, as on a GPU, so
# values are only accounted for); the other's ranges at the level are counted, not measured
range_test(metrics_threads "metrics=6/6 .*state=active"
           --scenario allreduce --ranks 4 --threads 2 --iters 6 --fake
           ENV NCCLSCOPE_RANGE_METRICS=default CHECK --values accounted)
# an outer range around every iteration, in a trace and in a flight recorder whose ring holds a
# fraction of the run: open ranges are restated at every slot
range_test(outer "matched=61 .*state=off"
           --scenario allreduce --ranks 2 --threads 1 --iters 20 --range-outer CHECK --values none)
range_test(flight "restated=[1-9][0-9]* forgotten=[1-9][0-9]* state=off"
           --scenario allreduce --ranks 2 --threads 1 --iters 3000 --range-outer
           ENV NCCLSCOPE_MODE=flight NCCLSCOPE_FLIGHT_SIZE=1M CHECK --values none --flight)
# under `ncclscope record`: --range-metrics reaches the plugin (the default set, every value
# exact), and the ranges are recorded as without record
range_test(record_metrics "metrics=8/8 .*state=active"
           --scenario allreduce --ranks 4 --threads 1 --iters 8 --compute 2 --fake
           --record=--range-metrics=default)
range_test(record_api "files=2 ranges=72 matched=72 .*marks=24 "
           --scenario mixed --ranks 4 --procs 2 --iters 6 --record CHECK --values none)

# NVTX itself (NVIDIA's header-only NVTX v3, where a CUDA toolkit or NVTX is installed): a program
# marks its work with NVTX and the range API and reads the trace back (tests/nvtx_ranges.c)
# (NCS_NVTX_INCLUDE_DIR: the top CMakeLists.txt)
if(NCS_NVTX_INCLUDE_DIR)
  add_executable(ncs-nvtx-ranges ${CMAKE_CURRENT_LIST_DIR}/nvtx_ranges.c)
  target_include_directories(ncs-nvtx-ranges SYSTEM PRIVATE ${NCS_NVTX_INCLUDE_DIR})
  target_link_libraries(ncs-nvtx-ranges PRIVATE ncs_trace Threads::Threads ${CMAKE_DL_LIBS})
  foreach(mode nvtx no-nvtx off)
    add_test(NAME ranges_nvtx_${mode}
             COMMAND sh -c "rm -rf '${CMAKE_CURRENT_BINARY_DIR}/nvtx-${mode}' && '$<TARGET_FILE:ncs-nvtx-ranges>' \
'$<TARGET_FILE:nccl-profiler-ncclscope>' '${CMAKE_CURRENT_BINARY_DIR}/nvtx-${mode}' ${mode}")
    set_tests_properties(ranges_nvtx_${mode} PROPERTIES PASS_REGULAR_EXPRESSION "nvtx ranges: ok"
                         FAIL_REGULAR_EXPRESSION "FAILED|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|runtime error")
  endforeach()
  # under `ncclscope record`, which names the plugin in NVTX_INJECTION64_PATH: NVTX ranges are
  # recorded; a value the user set is kept (NVTX's ranges go there) and record says so
  add_test(NAME ranges_record_nvtx
           COMMAND sh -c "rm -rf '${CMAKE_CURRENT_BINARY_DIR}/nvtx-record' && env -u NVTX_INJECTION64_PATH \
'$<TARGET_FILE:ncclscope>' record -o '${CMAKE_CURRENT_BINARY_DIR}/nvtx-record' -- \
'$<TARGET_FILE:ncs-nvtx-ranges>' '$<TARGET_FILE:nccl-profiler-ncclscope>' unused record")
  set_tests_properties(ranges_record_nvtx PROPERTIES
                       PASS_REGULAR_EXPRESSION "nvtx ranges: ok mode=record ranges=[0-9]+ marks=3 nvtx=ours"
                       FAIL_REGULAR_EXPRESSION "FAILED|warning|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|runtime error")
  add_test(NAME ranges_record_nvtx_other
           COMMAND sh -c "rm -rf '${CMAKE_CURRENT_BINARY_DIR}/nvtx-record-other' && \
out=$(NVTX_INJECTION64_PATH=/nonexistent/libother-nvtx-tool.so '$<TARGET_FILE:ncclscope>' record \
-o '${CMAKE_CURRENT_BINARY_DIR}/nvtx-record-other' -- '$<TARGET_FILE:ncs-nvtx-ranges>' \
'$<TARGET_FILE:nccl-profiler-ncclscope>' unused record-other 2>&1); echo \"$out\"; \
echo \"$out\" | grep -q 'NVTX_INJECTION64_PATH is set to /nonexistent/libother-nvtx-tool.so, not to the plugin' \
|| echo 'record-other: FAILED: no warning'")
  set_tests_properties(ranges_record_nvtx_other PROPERTIES
                       PASS_REGULAR_EXPRESSION "nvtx ranges: ok mode=record-other ranges=2 marks=1 nvtx=other"
                       FAIL_REGULAR_EXPRESSION "FAILED|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|runtime error")
else()
  message(STATUS "ncclscope: NVTX headers (nvtx3/nvToolsExt.h) not found; the NVTX range tests are skipped")
endif()

# the range cost benchmark (bench/range_cost.c) records every range it times: none dropped
if(NCS_NVTX_INCLUDE_DIR)
  set(NCS_RC_EXPECT "ranges=6002 begun=6002 dropped=0 no_slot=0 untracked=0 damage=none")
else()
  set(NCS_RC_EXPECT "ranges=3001 begun=3001 dropped=0 no_slot=0 untracked=0 damage=none")
endif()
add_test(NAME ranges_cost_bench
         COMMAND sh -c "rm -rf '${CMAKE_CURRENT_BINARY_DIR}/range-cost' && '$<TARGET_FILE:ncs-range-cost>' \
'$<TARGET_FILE:nccl-profiler-ncclscope>' '${CMAKE_CURRENT_BINARY_DIR}/range-cost' 1000 3")
set_tests_properties(ranges_cost_bench PROPERTIES PASS_REGULAR_EXPRESSION "${NCS_RC_EXPECT}"
                     FAIL_REGULAR_EXPRESSION "WARNING|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|runtime error")

# examples/range_dram.cu (the GPU proof, built by nvcc on the GPU host only) reads its trace
# through the project's C headers compiled as C++: keep them so (no _Static_assert, etc.)
find_program(NCS_CXX NAMES c++ g++ clang++)
if(NCS_CXX)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/reader_headers.cpp
       "#include <stdint.h>\nextern \"C\" {\n#include \"ncclscope.h\"\n"
       "#include \"abi/ncs_abi.h\"\n#include \"trace/reader.h\"\n}\nint main() { return 0; }\n")
  add_test(NAME reader_headers_cxx
           COMMAND ${NCS_CXX} -std=c++17 -Wall -Werror -fsyntax-only -I ${CMAKE_SOURCE_DIR}/src -I ${CMAKE_SOURCE_DIR}/include
                   ${CMAKE_CURRENT_BINARY_DIR}/reader_headers.cpp)
endif()

# the read side (docs/ranges.md "What the read side shows"): report --json and the SQLite ranges
# table against nccl-sim's truth (counts, operations and bytes per range exactly, wall times within
# the push/pop windows); with the writer hung on its first write (libncs-faultinj.so's
# NCS_FAULT_STALL, tests/writer.cmake) while the job runs, a 1 MiB pool fills and range records are
# dropped on any machine: they are said lost, ranges whose pop was dropped have no end and no
# numbers, and no range shows shorter than nccl-sim made it; a flight recording's window counts each
# range once however its keyframe restated it (tests/range_read.sh)
foreach(mode truth lost flight)
  add_test(NAME ranges_read_${mode}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/range_read.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> ${CMAKE_BINARY_DIR}/fakecupti $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/ranges-read-${mode} ${mode} 1M
                   $<TARGET_FILE:ncs-faultinj> $<TARGET_FILE:ncs-pftrace-lint>)
  set_tests_properties(ranges_read_${mode} PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "range read: ok mode=${mode}"
                       FAIL_REGULAR_EXPRESSION "FAILED|ERROR: AddressSanitizer|runtime error")
endforeach()

# the filters --range and --tag (docs/cli.md "Filters"): report keeps exactly the operations
# nccl-sim's truth puts in the selected ranges and tags, on one process (one thread and two) and on
# two processes, in a flight window, and refuses what the job cannot answer (tests/range_filter.sh)
add_test(NAME report_filter_range
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/range_filter.sh $<TARGET_FILE:nccl-sim>
                 $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                 ${CMAKE_CURRENT_BINARY_DIR}/report-filter-range)
set_tests_properties(report_filter_range PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "range filter: ok"
                     FAIL_REGULAR_EXPRESSION "FAILED|ERROR: AddressSanitizer|runtime error")
