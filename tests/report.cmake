# `ncclscope report` (docs/report.md) on nccl-sim jobs with injected delays: the straggler and
# the slow link are named, busbw matches --gpu-gbps within 2%, --json parses with its fields;
# bounded: the analysis holds no more rank operations at once for a job 6.7x longer (its own
# count, `analysis.peak_held_ops`), so its memory does not grow with the job; ktime: one rank's
# KernelCh times of one AllReduce belong to another operation (nccl-sim --fault ktime), and the
# report flags that instance and names the rank; v7: NCCL 2.31's kernel phases show the late rank
# as the one that waits least in its kernels' opening barrier, user tags become steps, symmetric
# kernels are counted, and none of it is claimed for a job recorded through ABI v6.
# slowed_successor: a rank slowed before each collective is the straggler, and its ring successor
# (whose data waits for it) is not named a slow rank (issue 32).
foreach(c straggler slowlink busbw ktime json bounded v7 usage slowed_successor)
  add_test(NAME report_${c}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/report_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/report-${c} ${c})
  set_tests_properties(report_${c} PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "report check ${c}: ok")
endforeach()

# report --html FILE (docs/report.md, "The HTML page"): the page of a straggler job has the three
# charts, the terminal report's findings and no remote reference, and headless Chromium loads it
# (page; fails when chromium is missing); exit statuses and --html - (errors); hostile and
# damaged crafted traces (fixtures, after reader.cmake's tracegen_files).
foreach(c page errors fixtures)
  add_test(NAME report_html_${c}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/report_html.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/report-html-${c} ${c}
                   ${CMAKE_CURRENT_BINARY_DIR}/generated/fixtures)
  set_tests_properties(report_html_${c} PROPERTIES TIMEOUT 180 PASS_REGULAR_EXPRESSION "report html ${c}: ok")
endforeach()
set_tests_properties(report_html_fixtures PROPERTIES FIXTURES_REQUIRED ncs_traces)
# Every operation by default, and the optional sampling of GPU times: the same groups sampled on
# every rank, the rest recorded without GPU times and left out of latency and bandwidth
# (tests/sample_check.sh)
add_test(NAME report_kernel_sample
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sample_check.sh $<TARGET_FILE:nccl-sim>
                 $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                 ${CMAKE_CURRENT_BINARY_DIR}/report-sample $<TARGET_FILE:nccl-profiler-empty>)
set_tests_properties(report_kernel_sample PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "sample check: ok")
# Every operation, always: the sampled default's reproducers with today's defaults (a full trace
# keeps every group, a hidden hang is a HANG, several ranks per process agree) (defaults_check.sh)
add_test(NAME defaults_every_operation
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/defaults_check.sh $<TARGET_FILE:ncclscope>
                 $<TARGET_FILE:nccl-sim> $<TARGET_FILE:nccl-profiler-ncclscope>
                 ${CMAKE_CURRENT_BINARY_DIR}/defaults)
set_tests_properties(defaults_every_operation PROPERTIES TIMEOUT 180 PASS_REGULAR_EXPRESSION "defaults check: ok")
# Findings against chance (docs/report.md, "Findings"; tests/findings_check.sh): 20 healthy jobs
# (mixed) of each size have no straggler or slow-rank finding; a rank slowed by 100 ms is named,
# and no other rank, in 3 jobs (AllReduce) of each size; issue 30's reproducer (mixed, 8 ranks in
# 8 processes, rank 5 slowed by 30 ms) names rank 5. The jobs run in model time (nccl-sim --clock
# model): the machine's load and the sanitizers change nothing in them, so they run beside other
# tests and under sanitizers too; the healthy ones (60 jobs) only in the plain build, for their
# time. bench/findings_rate.sh measures more sizes, live.
function(ncs_findings_test name case size)
  add_test(NAME ${name}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/findings_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/${name} ${case} ${size} ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 600 PASS_REGULAR_EXPRESSION "findings check ${case} ${size}: ok")
endfunction()
if(NOT NCS_SANITIZE)
  foreach(sz 4x4 8x2 8x8)
    ncs_findings_test(report_findings_healthy_${sz} healthy ${sz})
  endforeach()
endif()
foreach(sz 4x4 8x8 16x4)
  ncs_findings_test(report_findings_slowed_${sz} slowed ${sz} 100000)
endforeach()
ncs_findings_test(report_findings_mixed_8x8 mixed 8x8 30000)

# Which files form the job (docs/model.md, "Jobs and duplicates"; tests/jobs_check.sh): a copied
# trace file is read once with a warning; two runs in one directory are refused without --run and
# never merged; an ABI v3 job without commIds stays one job
foreach(c dup runs loose)
  add_test(NAME jobs_${c}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/jobs_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/jobs-${c} ${c})
  set_tests_properties(jobs_${c} PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "jobs check ${c}: ok")
endforeach()
# Every consumer of the job model names the same instances, times, stragglers, losses and
# warnings on the same recording: report (terminal, JSON, HTML), the timeline, SQLite, diagnose
# (tests/consistency_check.py)
foreach(c slowed drops hang)
  add_test(NAME consistency_${c}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/consistency_check.py $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/consistency-${c} ${c})
  set_tests_properties(consistency_${c} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                       PASS_REGULAR_EXPRESSION "consistency check ${c}: ok")
endforeach()

# the breakdown's bottleneck labels and `ncclscope diff` (docs/report.md "Breakdown", docs/diff.md)
foreach(c healthy slowlink slowgpu slowrank queue diff_same diff_slow diff_straggler diff_seeds outputs)
  add_test(NAME breakdown_${c}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/breakdown_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/breakdown_${c} ${c})
endforeach()
# Stalls (docs/report.md, "Findings"; tests/stall_check.sh): a one-off pause of each rank in turn
# is a headline stall with its size, GPU-side, and host-side without GPU times; a small pause in a
# long job is minor; healthy seeds have no stall and no headline. Model time: load-independent.
function(ncs_stall_test name case size)
  add_test(NAME ${name}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/stall_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/${name} ${case} ${size})
  set_tests_properties(${name} PROPERTIES TIMEOUT 600 PASS_REGULAR_EXPRESSION "stall check ${case} ${size}: ok")
endfunction()
ncs_stall_test(report_stall_positions_4x4 positions 4x4)
ncs_stall_test(report_stall_host_4x4 host 4x4)
ncs_stall_test(report_stall_mixed_4x4 mixed 4x4)
ncs_stall_test(report_stall_minor_4x4 minor 4x4)
if(NOT NCS_SANITIZE) # 8 and 13 jobs: the plain build only, for their time (as the healthy findings)
  ncs_stall_test(report_stall_positions_8x2 positions 8x2)
  ncs_stall_test(report_stall_healthy_4x4 healthy 4x4)
endif()
