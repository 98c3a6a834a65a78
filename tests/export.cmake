# export.cmake - tests of `ncclscope export` (docs/timeline.md). Included by tests/CMakeLists.txt.
#
# ncs-pftrace-lint   decodes a .pftrace without Perfetto and checks what trace processor
#                    enforces (tests/pftrace_lint.c); export_lint_broken_* feed it files that
#                    break one rule each and expect it to say so.
# export_golden_*    nccl-sim scenarios: the lint passes and its --summary (processes, slices
#                    per kind, phases, instants, job slices, flows) matches nccl-sim's counts;
#                    the output is the same for any number of threads (tests/export_check.sh).
# export_protoc_*    protoc decodes the file against tests/perfetto_subset.proto with no
#                    unknown field (skipped without protobuf-compiler).
# export_chrome_*    the Chrome JSON parses and has the .pftrace's slices, instants, counters
#                    and flows.
# export_chrome_rows_* the JSON's thread rows (tests/chrome_rows_check.py): every row nests, rows
#                    per process near the least possible, slices, instants and flows as in the
#                    .pftrace, rows named for what they hold, the size warning.
# export_fixtures    crafted traces (valid, crashed, damaged) and real-GPU traces in
#                    tests/fixtures/*/ (skipped when there are none).
# export_filter_*    the shared filters (--comm, --rank, --from/--to) in the timeline and SQLite
#                    (tests/export_filter_check.py; OTF2's in otf2.cmake).

set(NCS_EXPORT_TESTS_DIR ${CMAKE_CURRENT_LIST_DIR})
add_executable(ncs-pftrace-lint ${NCS_EXPORT_TESTS_DIR}/pftrace_lint.c
                                ${NCS_EXPORT_TESTS_DIR}/../src/export/pb.c)
target_include_directories(ncs-pftrace-lint PRIVATE ${NCS_EXPORT_TESTS_DIR}/../src)

set(NCS_X_CLI sh ${NCS_EXPORT_TESTS_DIR}/cli_check.sh)
set(NCS_X_LINT $<TARGET_FILE:ncs-pftrace-lint>)
set(NCS_X_EXE $<TARGET_FILE:ncclscope>)
set(NCS_X_WORK ${CMAKE_CURRENT_BINARY_DIR}/export)
set(NCS_X_CHECK sh ${NCS_EXPORT_TESTS_DIR}/export_check.sh)
set(NCS_X_FIX ${CMAKE_CURRENT_BINARY_DIR}/generated/fixtures) # written by reader.cmake's tracegen_files
set(NCS_X_ARGS ${NCS_X_EXE} ${NCS_X_LINT} $<TARGET_FILE:nccl-sim>
    $<TARGET_FILE:nccl-profiler-ncclscope> ${NCS_EXPORT_TESTS_DIR}/perfetto_subset.proto)

# ---- the lint itself: every broken file is caught, with its message
function(ncs_lint_broken kind pattern)
  add_test(NAME export_lint_broken_${kind}
           COMMAND ${NCS_X_CLI} 1 "${pattern}" -- sh -c
                   "'${NCS_X_LINT}' --write-broken ${kind} '${NCS_X_WORK}-broken-${kind}.pftrace' && \
'${NCS_X_LINT}' '${NCS_X_WORK}-broken-${kind}.pftrace'")
endfunction()
ncs_lint_broken(noseq "no trusted_packet_sequence_id")
ncs_lint_broken(unbalanced "END at 300 closes nothing")
ncs_lint_broken(unclosed "slice[(]s[)] never end")
ncs_lint_broken(endorder "closes the slice that BEGAN at the same time")
ncs_lint_broken(dupuuid "track uuid 11 described twice")
ncs_lint_broken(parent "parent 999 does not exist")
ncs_lint_broken(undeclared "event on track 77 that was not described")
ncs_lint_broken(flow "flow id 2748 appears on one event only")
ncs_lint_broken(iid "interned id 5 .* before it was defined")
ncs_lint_broken(counter "counter event on a non-counter track")

# ---- exports of nccl-sim scenarios
function(ncs_export_test mode name)
  add_test(NAME export_${mode}_${name}
           COMMAND ${NCS_X_CHECK} ${mode} ${NCS_X_WORK}/${mode}-${name} ${NCS_X_ARGS} -- ${ARGN})
  set_tests_properties(export_${mode}_${name} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
endfunction()
ncs_export_test(golden allreduce --scenario allreduce --ranks 2 --procs 2 --iters 2)
ncs_export_test(golden sendrecv --scenario sendrecv --ranks 2 --procs 2 --iters 3)
ncs_export_test(golden graph --scenario graph --ranks 2 --procs 2)
ncs_export_test(golden alltoall --scenario alltoall --ranks 4 --procs 4 --iters 3)
ncs_export_test(golden mixed --scenario mixed --ranks 8 --procs 8 --iters 20)
# several ranks in one process, 3 communicators, socket and IB net events
ncs_export_test(golden mixed_multirank --scenario mixed --ranks 6 --procs 3 --threads 3 --nodes 3
                --iters 30 --comms 3 --net mix)
ncs_export_test(golden pxn --scenario pxn --ranks 4)
ncs_export_test(golden reload --scenario reload --ranks 2 --procs 2)
ncs_export_test(golden abort --scenario abort --ranks 2 --procs 2)
ncs_export_test(golden neverstop --scenario neverstop --ranks 2 --procs 2)
ncs_export_test(golden stale --scenario stale --ranks 2 --procs 2)
ncs_export_test(golden ce --scenario ce --ranks 2 --procs 2)
# ABI v1-v3 give no commId, rank or nranks: one process per file, nothing linked across ranks
ncs_export_test(golden-nolink abi3 --scenario mixed --abi 3 --ranks 4 --procs 4 --iters 10)
ncs_export_test(golden-nolink split --scenario split --ranks 4 --procs 2)
ncs_export_test(protoc mixed --scenario mixed --ranks 4 --procs 4 --iters 10)
ncs_export_test(protoc graph --scenario graph --ranks 2 --procs 2)
ncs_export_test(chrome mixed --scenario mixed --ranks 4 --procs 4 --iters 10)
ncs_export_test(chrome sendrecv --scenario sendrecv --ranks 2 --procs 2 --iters 3)
# the JSON's rows: 8 ranks with 4 GPU channels, proxy and network events, send/recv; and
# several ranks per process with 3 communicators and both net kinds
function(ncs_chrome_rows name)
  add_test(NAME export_chrome_rows_${name}
           COMMAND python3 ${NCS_EXPORT_TESTS_DIR}/chrome_rows_check.py ${NCS_X_EXE} ${NCS_X_LINT}
                   $<TARGET_FILE:nccl-sim> $<TARGET_FILE:nccl-profiler-ncclscope>
                   ${NCS_X_WORK}/chrome-rows-${name} ${ARGN})
  set_tests_properties(export_chrome_rows_${name} PROPERTIES TIMEOUT 300)
endfunction()
ncs_chrome_rows(mixed8 -- --scenario mixed --ranks 8 --procs 8 --iters 20 --channels 4 --nodes 8)
ncs_chrome_rows(multirank -- --scenario mixed --ranks 6 --procs 3 --threads 3 --nodes 3 --iters 20
                --comms 3 --net mix --channels 4)
# NCCLSCOPE_CHROME_HOLD=1: every slice with something nested takes its row before it ends
ncs_chrome_rows(hold --hold 1 -- --scenario mixed --ranks 8 --procs 8 --iters 10 --channels 4 --nodes 8)
# filtered: two ranks over a window (events of no operation held back until they reach into it)
ncs_chrome_rows(filtered --xargs "--rank 2,5 --from 1ms" -- --scenario mixed --ranks 8 --procs 8 --iters 20
                --channels 4 --nodes 8)
# events never stopped, PXN proxy operations, and a recording of real NCCL on 2 GPUs
ncs_chrome_rows(neverstop -- --scenario neverstop --ranks 2 --procs 2)
ncs_chrome_rows(pxn -- --scenario pxn --ranks 4)
ncs_chrome_rows(gpu_socket --trace ${NCS_EXPORT_TESTS_DIR}/fixtures/gpu/collectives-socket)

# ---- the shared filters (docs/cli.md "Filters"): one nccl-sim job with two communicators,
# exported with --comm, --rank and --from/--to; exactly the operations that pass, all their
# pieces, nothing of the others, the events of no operation of those ranks and that window, what
# the file says it covers; --from 0 as unfiltered, nothing passing, an unknown --comm
# (tests/export_filter_check.py; the otf2 case is in otf2.cmake)
foreach(m timeline sqlite)
  add_test(NAME export_filter_${m}
           COMMAND python3 ${NCS_EXPORT_TESTS_DIR}/export_filter_check.py ${m}
                   ${NCS_X_WORK}/filter-${m} ${NCS_X_EXE} ${NCS_X_LINT} $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope>)
  set_tests_properties(export_filter_${m} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                       PASS_REGULAR_EXPRESSION "export_filter_check: ok")
endforeach()

# ---- crafted traces (reader.cmake writes them) and real-GPU traces, when there are any
add_test(NAME export_fixtures_crafted
         COMMAND ${NCS_X_CHECK} files ${NCS_X_WORK}/crafted ${NCS_X_ARGS} -- ${NCS_X_FIX}/valid
                 ${NCS_X_FIX}/crashed ${NCS_X_FIX}/damaged ${NCS_X_FIX}/escape)
set_tests_properties(export_fixtures_crafted PROPERTIES FIXTURES_REQUIRED ncs_traces
                     SKIP_RETURN_CODE 77)
file(GLOB NCS_X_GPU_FIXTURES LIST_DIRECTORIES true ${NCS_EXPORT_TESTS_DIR}/fixtures/*
     ${NCS_EXPORT_TESTS_DIR}/fixtures/*/*)
add_test(NAME export_fixtures_gpu
         COMMAND ${NCS_X_CHECK} files ${NCS_X_WORK}/gpu ${NCS_X_ARGS} -- ${NCS_X_GPU_FIXTURES})
set_tests_properties(export_fixtures_gpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)

# ---- the command line
function(ncs_export_cli name rc)
  add_test(NAME export_cli_${name} COMMAND ${NCS_X_CLI} ${rc} ${ARGN})
endfunction()
ncs_export_cli(help 0 "usage: ncclscope export" "--format" "--jobs" -- ${NCS_X_EXE} export --help)
ncs_export_cli(help_filters 0 "--comm C" "--rank LIST" "--from T, --to T" -- ${NCS_X_EXE} export --help)
ncs_export_cli(bad_rank 2 "--rank needs ranks such as 0,2,4-7, not '1-'" -- ${NCS_X_EXE} export --rank 1- x)
ncs_export_cli(bad_comm_syntax 2 "--comm needs a communicator's label [(]c0[)], index [(]0[)] or commId" -- ${NCS_X_EXE} export --comm x12 x)
ncs_export_cli(to_before_from 2 "--to is before --from" -- ${NCS_X_EXE} export --from 2s --to 1s x)
ncs_export_cli(unknown_comm 2 "--comm 0x00000000000000ab: no such communicator in the job"
               "!wrote" -- ${NCS_X_EXE} export --force --comm 0xab ${NCS_X_FIX}/valid
               -o ${NCS_X_WORK}-unknown-comm.pftrace)
ncs_export_cli(filter_summary 0 "filter: ranks 0: kept [0-9]+ collective instances"
               "wrote .*filter-summary.pftrace"
               -- ${NCS_X_EXE} export --force --rank 0 ${NCS_X_FIX}/valid -o ${NCS_X_WORK}-filter-summary.pftrace)
ncs_export_cli(in_verbs 0 "export +write a trace as Perfetto, Chrome JSON, SQLite or OTF2" -- ${NCS_X_EXE} --help)
ncs_export_cli(no_path 2 "which traces[?]" -- ${NCS_X_EXE} export)
ncs_export_cli(bad_format 2 "--format must be perfetto, chrome, sqlite or otf2, not 'svg'"
               -- ${NCS_X_EXE} export -f svg /nonexistent)
ncs_export_cli(bad_jobs 2 "--jobs needs a number from 1 to 64" -- ${NCS_X_EXE} export --jobs 0 x)
ncs_export_cli(short_j_is_json 2 "-j is short for --json" -- ${NCS_X_EXE} export -j 2 x)
ncs_export_cli(bad_events 2 "unknown event type 'colll'" -- ${NCS_X_EXE} export -e colll x)
ncs_export_cli(two_inputs 2 "several inputs: name the output with -o FILE"
               -- ${NCS_X_EXE} export /a /b)
ncs_export_cli(missing_dir 3 "cannot open /nonexistent" -- ${NCS_X_EXE} export /nonexistent)
ncs_export_cli(bad_output 5 "cannot write /nonexistent/x.pftrace"
               -- ${NCS_X_EXE} export ${NCS_X_FIX}/valid -o /nonexistent/x.pftrace)
ncs_export_cli(damaged 4 "warning: .*node1-400.nstrace: checksum mismatch" "wrote .*damaged.pftrace"
               -- ${NCS_X_EXE} export --force ${NCS_X_FIX}/damaged -o ${NCS_X_WORK}-damaged.pftrace)
ncs_export_cli(summary 0 "wrote .*valid.pftrace [(][0-9.]+ MB, Perfetto protobuf[)]: 2 processes"
               "records from 2 files" "open it at https://ui.perfetto.dev"
               -- ${NCS_X_EXE} export --force ${NCS_X_FIX}/valid -o ${NCS_X_WORK}-valid.pftrace)
ncs_export_cli(quiet 0 "!wrote" -- ${NCS_X_EXE} export -q --force ${NCS_X_FIX}/valid -o ${NCS_X_WORK}-q.json -f chrome)
# the size warning: over NCCLSCOPE_EXPORT_WARN_SIZE a written Chrome JSON is said to be large,
# with -q too; a value that is not a size is said and ignored
ncs_export_cli(warn_size 0 "warning: the Chrome JSON is [0-9.]+ MB [(][0-9]+ bytes; the warning size is 1 KiB[)]: chrome://tracing and the Perfetto UI"
               "--format perfetto" -- env NCCLSCOPE_EXPORT_WARN_SIZE=1K ${NCS_X_EXE} export -q --force
               ${NCS_X_FIX}/valid -o ${NCS_X_WORK}-warn.json -f chrome)
ncs_export_cli(warn_size_none 0 "!warning" -- ${NCS_X_EXE} export -q --force ${NCS_X_FIX}/valid
               -o ${NCS_X_WORK}-nowarn.json -f chrome)
ncs_export_cli(warn_size_bad 0 "ignoring NCCLSCOPE_EXPORT_WARN_SIZE='12X': not a size" "!the Chrome JSON is"
               -- env NCCLSCOPE_EXPORT_WARN_SIZE=12X ${NCS_X_EXE} export -q --force ${NCS_X_FIX}/valid
               -o ${NCS_X_WORK}-badwarn.json -f chrome)
ncs_export_cli(only_coll 0 "[0-9]+ slices" -- ${NCS_X_EXE} export --force -e coll ${NCS_X_FIX}/valid -o ${NCS_X_WORK}-coll.pftrace)
# operations the model could not place (the crafted traces' Coll/P2p without a communicator):
# under a filter they are left out and counted, never guessed to pass
ncs_export_cli(filter_cannot_tell 0 "among them [1-9][0-9]* operations the job model could not place"
               -- ${NCS_X_EXE} export --force --from 0 ${NCS_X_FIX}/valid -o ${NCS_X_WORK}-cannot-tell.pftrace)
set_tests_properties(export_cli_bad_output export_cli_damaged export_cli_summary export_cli_quiet
                     export_cli_only_coll export_cli_warn_size export_cli_warn_size_none
                     export_cli_warn_size_bad export_cli_unknown_comm export_cli_filter_summary
                     export_cli_filter_cannot_tell PROPERTIES FIXTURES_REQUIRED ncs_traces)
# the demo writes its timeline beside the trace, and says how to open it
add_test(NAME export_demo
         COMMAND ${NCS_X_CLI} 0 "^files +D=.*export-demo$" "[$]D[.]pftrace +timeline"
                 "open it at https://ui.perfetto.dev" -- sh -c
                 "rm -rf '${NCS_X_WORK}-demo' '${NCS_X_WORK}-demo.pftrace' '${NCS_X_WORK}-demo.html' '${NCS_X_WORK}-demo.nccl-sim.log' && '${NCS_X_EXE}' demo -o '${NCS_X_WORK}-demo' \
--ranks 2 --iters 5 && '${NCS_X_LINT}' '${NCS_X_WORK}-demo.pftrace'")
