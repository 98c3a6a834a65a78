# reader.cmake - tests of the trace reader, the ncclscope CLI and the fuzz corpus.
# Included by tests/CMakeLists.txt. Needs cmocka for the unit tests (libcmocka-dev).
#
#   -DNCS_FUZZ=ON   (clang only) also build the libFuzzer target fuzz_reader; scripts/fuzz.sh
#                   builds and runs it.

set(NCS_TESTS_DIR ${CMAKE_CURRENT_LIST_DIR})
set(NCS_SRC_DIR ${CMAKE_CURRENT_LIST_DIR}/../src)
# NCS_FUZZ: the top-level CMakeLists.txt

# crafting trace files: shared by the unit tests, the fixture generator and the seed corpus
add_library(ncs_tracegen STATIC ${NCS_TESTS_DIR}/tracegen.c)
target_include_directories(ncs_tracegen PUBLIC ${NCS_TESTS_DIR} ${NCS_SRC_DIR})
target_link_libraries(ncs_tracegen PUBLIC ncs_format)
add_executable(ncs-tracegen ${NCS_TESTS_DIR}/tracegen_main.c)
target_link_libraries(ncs-tracegen PRIVATE ncs_tracegen)

# ---- unit tests (cmocka)
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(CMOCKA QUIET IMPORTED_TARGET cmocka)
endif()
if(CMOCKA_FOUND)
  add_executable(test_reader ${NCS_TESTS_DIR}/test_reader.c)
  target_link_libraries(test_reader PRIVATE ncs_trace ncs_tracegen PkgConfig::CMOCKA)
  add_test(NAME reader_unit COMMAND test_reader)
else()
  message(WARNING "cmocka not found (apt-get install libcmocka-dev pkg-config): reader unit tests skipped")
endif()

# damaged copies of traces: the CLI tests below and scripts/hostile.sh
add_executable(ncs-damage ${NCS_TESTS_DIR}/damage.c)
target_include_directories(ncs-damage PRIVATE ${NCS_SRC_DIR})
target_link_libraries(ncs-damage PRIVATE ncs_trace)

# ---- the fuzz target, replayed over the corpus in every build
add_executable(fuzz_replay ${NCS_TESTS_DIR}/fuzz/replay_main.c ${NCS_TESTS_DIR}/fuzz/fuzz_reader.c)
target_link_libraries(fuzz_replay PRIVATE ncs_trace)
set(NCS_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated)
add_test(NAME tracegen_files
         COMMAND sh -c "rm -rf '${NCS_GEN_DIR}' && mkdir -p '${NCS_GEN_DIR}' && \
'$<TARGET_FILE:ncs-tracegen>' fixtures '${NCS_GEN_DIR}/fixtures' && \
'$<TARGET_FILE:ncs-tracegen>' corpus '${NCS_GEN_DIR}/seeds'")
set_tests_properties(tracegen_files PROPERTIES FIXTURES_SETUP ncs_traces)
add_test(NAME fuzz_corpus_replay
         COMMAND fuzz_replay ${NCS_TESTS_DIR}/fuzz/corpus ${NCS_GEN_DIR}/seeds
                 ${NCS_GEN_DIR}/fixtures/valid ${NCS_GEN_DIR}/fixtures/crashed
                 ${NCS_GEN_DIR}/fixtures/damaged ${NCS_GEN_DIR}/fixtures/escape)
set_tests_properties(fuzz_corpus_replay PROPERTIES FIXTURES_REQUIRED ncs_traces)

if(NCS_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "NCS_FUZZ=ON needs clang (CC=clang)")
  endif()
  # the reader is compiled into the target so the fuzzer's coverage instrumentation sees it
  add_executable(fuzz_reader ${NCS_TESTS_DIR}/fuzz/fuzz_reader.c ${NCS_SRC_DIR}/trace/reader.c
                             ${NCS_SRC_DIR}/trace/flight.c
                             ${NCS_SRC_DIR}/trace/format.c)
  target_include_directories(fuzz_reader PRIVATE ${NCS_SRC_DIR})
  target_compile_options(fuzz_reader PRIVATE -fsanitize=fuzzer,address,undefined
                                             -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(fuzz_reader PRIVATE -fsanitize=fuzzer,address,undefined)
  set_target_properties(fuzz_reader PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  add_test(NAME fuzz_reader_smoke COMMAND fuzz_reader -runs=5000 -seed=1 ${NCS_TESTS_DIR}/fuzz/corpus)
endif()

# ---- the CLI: run it on crafted traces and check status and output
set(NCS_CLI sh ${NCS_TESTS_DIR}/cli_check.sh)
set(NCS_FIX ${NCS_GEN_DIR}/fixtures)
set(NCS_EXE $<TARGET_FILE:ncclscope>)
function(ncs_cli_test name rc)
  # ncs_cli_test(NAME RC PATTERN... -- CMD...)
  add_test(NAME cli_${name} COMMAND ${NCS_CLI} ${rc} ${ARGN})
  set_tests_properties(cli_${name} PROPERTIES FIXTURES_REQUIRED ncs_traces)
endfunction()

ncs_cli_test(help 0 "verbs:" "dump" -- ${NCS_EXE} --help)
ncs_cli_test(version 0 "^ncclscope [0-9]+[.][0-9]+" -- ${NCS_EXE} --version)
ncs_cli_test(no_verb 2 "usage:" -- ${NCS_EXE})
ncs_cli_test(unknown_verb 2 "unknown verb 'frobnicate'" -- ${NCS_EXE} frobnicate)
ncs_cli_test(unknown_global_flag 2 "unknown option '--frob'" -- ${NCS_EXE} --frob)
ncs_cli_test(dump_help 0 "usage: ncclscope dump" "--stats" -- ${NCS_EXE} dump --help)
ncs_cli_test(record_help 0 "usage: ncclscope record" "--buffer-size" -- ${NCS_EXE} record --help)
ncs_cli_test(demo_help 0 "usage: ncclscope demo" "--ranks" -- ${NCS_EXE} demo --help)
ncs_cli_test(dump_unknown_flag 2 "unknown option '--nope'" -- ${NCS_EXE} dump --nope ${NCS_FIX}/valid)
ncs_cli_test(dump_missing_value 2 "option '--limit' needs a value" -- ${NCS_EXE} dump ${NCS_FIX}/valid --limit)
ncs_cli_test(dump_bad_limit 2 "--limit needs a positive number" -- ${NCS_EXE} dump --limit 0 ${NCS_FIX}/valid)
ncs_cli_test(dump_bad_type 2 "unknown event type 'colll'" -- ${NCS_EXE} dump --type coll,colll ${NCS_FIX}/valid)
ncs_cli_test(dump_no_path 2 "which trace" -- ${NCS_EXE} dump)
ncs_cli_test(dump_no_traces 3 "no trace files found" -- ${NCS_EXE} dump ${NCS_FIX}/empty)
ncs_cli_test(dump_missing_dir 3 "cannot open /nonexistent" -- ${NCS_EXE} dump /nonexistent)
ncs_cli_test(stats_no_traces 3 "no [*][.]nstrace or [*][.]nsflight files" -- ${NCS_EXE} dump --stats ${NCS_FIX}/empty)
ncs_cli_test(dump_valid 0
  "^node1-100 seg=0 t=0[.]000000000 SEGMENT version=1 plugin=0[.]1[.]0 host=node1 pid=100 epoch=0 mode=trace"
  "node1-100 seg=0 t=0[.]000000000 CLOCK mono=1000000000 realtime=1700000000000000000"
  "COMM index=0 commId=0xabcdef0123456789 name=\"my comm\" rank=3 nranks=8 nNodes=2 abi=6"
  "THREAD index=1 tid=5001 name=nccl-proxy"
  "seg=0 t=0[.]000005000 START Coll id=2 thr=1 ctx=foreign:4242[.]1 parent=stale:0x1 rank=0 flags=0x2[(]v1[)] seqNumber=1200 func=ncclFloat32 sendBuff=0x7f0000001002"
  " parentGroup=(none|local|foreign|stale)"
  "STATE ProxyOp id=4 thr=0 state=ProxyOpRecvDone[(]7[)] arg0=4100 arg1=12"
  "STOP KernelCh id=7 thr=0"
  "COMPLETE Coll id=2 flags=0x2[(]proxy[)] end=0[.]000007500 firstChild=0[.]000007010 gpuStart=5000000002 gpuStop=5000000902 kernelCh=8 proxyOp=2 open=0"
  "EXPIRED P2p id=3 reason=timeout start=0[.]000009900"
  "START NetPlugin id=8 .* net[.]id=-1 data=0x7f0000001001"
  "COUNTERS starts[.]Group=1 stops[.]Group=1"
  "drops[.]Coll=5 no_thread_slot=2 bad_handles=3 completions=2 threads=3 end_ns=9000000000 0x7777=52"
  "FOOTER "
  "COMM_END index=0"
  "node1-100 seg=1 t=0[.]000000000 SEGMENT"
  "^node2-200 seg=0"
  -- ${NCS_EXE} dump ${NCS_FIX}/valid)
ncs_cli_test(dump_file 0 "^node2-200 seg=0" "!node1-100" -- ${NCS_EXE} dump ${NCS_FIX}/valid/node2-200.nstrace)
ncs_cli_test(dump_type 0 "START Coll" "STOP P2p" "!START ProxyOp" "!SEGMENT" "!CLOCK"
  -- ${NCS_EXE} dump --type coll,p2p ${NCS_FIX}/valid)
ncs_cli_test(dump_limit 0 "SEGMENT" "CLOCK" "!COMM" -- ${NCS_EXE} dump --limit 2 ${NCS_FIX}/valid)
ncs_cli_test(dump_abs 0 "^node1-100 seg=0 t=1000000000 SEGMENT" "t=1000005000 START Coll id=2"
  -- ${NCS_EXE} dump --abs ${NCS_FIX}/valid)
ncs_cli_test(dump_escape 0 "host=\"evil[\\]nhost[\\]x1b.31m[\\]xff[\\]xc0end\"" "cmd=\"a [\\]\"quoted[\\]\" arg\""
  -- ${NCS_EXE} dump ${NCS_FIX}/escape)
ncs_cli_test(dump_crashed 0 "warning: .*node1-300.nstrace: truncated chunk at offset [0-9]+.*died while writing"
  "EXPIRED P2p" -- ${NCS_EXE} dump ${NCS_FIX}/crashed)
ncs_cli_test(dump_damaged 4 "warning: .*node1-400.nstrace: checksum mismatch in the THREAD chunk at offset [0-9]+"
  -- ${NCS_EXE} dump ${NCS_FIX}/damaged)
ncs_cli_test(stats_valid 0
  "== .*node1-100[.]nstrace" "host node1, pid 100, plugin 0[.]1[.]0, 2 segments"
  "segment 0: load 0, mode trace, events all,-kernelphase, started 2023-11-14 22:13:20 UTC, [0-9.]+ s, clean"
  "NCCL ABI: v6"
  "commId 0xabcdef0123456789  name \"my comm\"  rank 3/8  nNodes 2  abi v6  seg 0"
  "Coll +4 +2 +2 +10 +0"
  "drops 14 [(]buffer pool full 10, no thread slot 4[)]"
  "handles: bad 6, stale 0, NULL 0. contexts: foreign 0, NULL 0"
  "completions 4 [(]kernel 4, proxy 6, revised 4, forced 0, no children 0, from group 0[)], threads 6"
  "== job: 2 files, 3 segments [(]0 without footer[)], 0 damaged, 0 truncated"
  "commId 0xabcdef0123456789: 1 of 8 ranks recorded"
  "completions 6 "
  -- ${NCS_EXE} dump --stats ${NCS_FIX}/valid)
ncs_cli_test(stats_crashed 0 "no footer: crashed/killed"
  "counts computed from the records [(]no footer[)]. drops and handles from the last counter snapshot"
  "truncated: truncated chunk at offset" "Coll +2 +2 +2 +5 +2"
  "== job: 1 file, 1 segment [(]1 without footer[)], 0 damaged, 1 truncated"
  -- ${NCS_EXE} dump --stats ${NCS_FIX}/crashed)
ncs_cli_test(stats_damaged 4 "DAMAGED: checksum mismatch" "footer read; DAMAGED: 1 damaged range skipped inside it"
  "0 without footer[)], 1 damaged"
  -- ${NCS_EXE} dump --stats ${NCS_FIX}/damaged)
ncs_cli_test(stats_mixed 4 "== job: 4 files" -- ${NCS_EXE} dump --stats ${NCS_FIX}/valid ${NCS_FIX}/crashed ${NCS_FIX}/damaged)
# a flight file whose oldest ring slot holds a damaged chunk: skipped, the slots after it read
ncs_cli_test(dump_flight_damaged_slot 4 "GAP offset=[0-9]+ bytes=[0-9]+ chunks=1 why=.*checksum mismatch"
  "FOOTER" "linearized ring" -- ${NCS_EXE} dump ${NCS_GEN_DIR}/seeds/flight-damaged-slot)
ncs_cli_test(dump_resync_segment 4 "GAP offset=[0-9]+ .*zero bytes" "startRealtime=0 startMono=0"
  "1 segment lost its SEGMENT chunk" -- ${NCS_EXE} dump ${NCS_GEN_DIR}/seeds/zeroed-resync)

ncs_cli_test(record_bad_events 2 "--events: unknown event type 'bogus' in 'coll,bogus'"
  -- ${NCS_EXE} record --events coll,bogus -- true)
ncs_cli_test(record_flight 3 "MODE=flight"
  -- ${CMAKE_COMMAND} -E env NCCLSCOPE_PLUGIN=${NCS_TESTS_DIR}/cli_check.sh
     ${NCS_EXE} record -o ${NCS_GEN_DIR}/rec-flight --mode flight --
     sh -c "echo MODE=$NCCLSCOPE_MODE && exit 3")
ncs_cli_test(record_bad_mode 2 "--mode must be trace or flight" -- ${NCS_EXE} record --mode fast -- true)
ncs_cli_test(record_bad_size 2 "--buffer-size: bad size '12Q'" -- ${NCS_EXE} record --buffer-size 12Q -- true)
ncs_cli_test(record_small_size 2 "--buffer-size must be from 1M to 16G" -- ${NCS_EXE} record --buffer-size 4K -- true)
ncs_cli_test(record_no_command 2 "no command to run" -- ${NCS_EXE} record -o ${NCS_GEN_DIR}/rec-none)
ncs_cli_test(record_unknown_flag 2 "unknown option '--bogus'" -- ${NCS_EXE} record --bogus -- true)
set(NCS_REC ${NCS_GEN_DIR}/rec-out)
ncs_cli_test(record_env 3
  "PLUGIN=/.*cli_check[.]sh DIR=${NCS_REC} EV=coll,-p2p MODE=trace BUF=16777216 ARG=x y"
  "!trace written" "ncclscope record: warning: no trace file was written to ${NCS_REC}"
  -- ${CMAKE_COMMAND} -E env NCCLSCOPE_PLUGIN=${NCS_TESTS_DIR}/cli_check.sh
     ${NCS_EXE} record -o ${NCS_REC} --events coll,-p2p --buffer-size 16M --
     sh -c "echo PLUGIN=$NCCL_PROFILER_PLUGIN DIR=$NCCLSCOPE_DIR EV=$NCCLSCOPE_EVENTS MODE=$NCCLSCOPE_MODE BUF=$NCCLSCOPE_BUFFER_SIZE ARG=$1 && exit 3" sh "x y")
ncs_cli_test(record_killed 143 "" -- ${CMAKE_COMMAND} -E env NCCLSCOPE_PLUGIN=${NCS_TESTS_DIR}/cli_check.sh
  ${NCS_EXE} record -o ${NCS_REC}-k -- sh -c "kill -TERM $$")
# SIGTERM sent to record reaches the command; record survives, reports and returns 128+15
ncs_cli_test(record_forwards_sigterm 0 "no trace file was written to .*rec-out-t" "rc=143"
  -- ${CMAKE_COMMAND} -E env NCCLSCOPE_PLUGIN=${NCS_TESTS_DIR}/cli_check.sh sh -c
     "'${NCS_EXE}' record -o '${NCS_REC}-t' -- sleep 20 & p=$! && sleep 1 && kill -TERM $p && wait $p || echo rc=$?")
ncs_cli_test(record_exec_fails 127 "cannot run /nonexistent/cmd" -- ${CMAKE_COMMAND} -E env
  NCCLSCOPE_PLUGIN=${NCS_TESTS_DIR}/cli_check.sh ${NCS_EXE} record -o ${NCS_REC}-x -- /nonexistent/cmd)
ncs_cli_test(record_no_plugin 6 "NCCLSCOPE_PLUGIN=/nonexistent/plugin.so" -- ${CMAKE_COMMAND} -E env
  NCCLSCOPE_PLUGIN=/nonexistent/plugin.so ${NCS_EXE} record -o ${NCS_REC}-p -- true)
ncs_cli_test(demo_fake_sim 0 "running nccl-sim .*: scenario healthy, 2 ranks in 2 processes, 5 operations per rank" "!nccl-sim [(]fake[)]"
  "^files +D=.*demo-out$" "[$]D/ +trace" "recorded +1 processes on 1 host" "[$]D[.]html +report" "^next .* report [$]D"
  -- ${CMAKE_COMMAND} -E env NCCLSCOPE_PLUGIN=${NCS_TESTS_DIR}/cli_check.sh NCCLSCOPE_SIM=${NCS_TESTS_DIR}/fake_sim.sh
     NCS_FAKE_TRACE=${NCS_FIX}/valid/node2-200.nstrace
     ${NCS_EXE} demo -o ${NCS_GEN_DIR}/demo-out --ranks 2 --iters 5)
ncs_cli_test(demo_bad_ranks 2 "--ranks needs a number" -- ${NCS_EXE} demo --ranks 0)
if(TARGET nccl-sim AND TARGET nccl-profiler-ncclscope)
  ncs_cli_test(demo_sim 0 "recorded +2 processes on 1 host" "coverage +2 of 2 files read" "[$]D[.]pftrace +timeline"
    -- ${NCS_EXE} demo -o ${NCS_GEN_DIR}/demo-sim --ranks 2 --iters 5)
endif()

# ---- damage and hostile inputs as users see them, on a trace nccl-sim recorded with the plugin
# (tests/damage_check.sh): a torn chunk and a flipped bit in the middle are read past, a cut tail
# stays a truncation, a FIFO does not block, a 100 GB sparse file is classified at once,
# permission denied is not damage, a header-only file is no host, one file twice is read once.
if(TARGET nccl-sim AND TARGET nccl-profiler-ncclscope)
  set(NCS_DMG_SIM ${CMAKE_CURRENT_BINARY_DIR}/damage-gen/sim)
  add_test(NAME damage_sim_trace
           COMMAND sh -c "rm -rf '${NCS_DMG_SIM}' && NCCLSCOPE_DIR='${NCS_DMG_SIM}' \
'$<TARGET_FILE:nccl-sim>' --plugin '$<TARGET_FILE:nccl-profiler-ncclscope>' --scenario mixed \
--ranks 4 --iters 1500 >/dev/null")
  set_tests_properties(damage_sim_trace PROPERTIES FIXTURES_SETUP ncs_damage_sim)
  foreach(c torn flip cut fifo sparse perm header twice)
    add_test(NAME damage_${c}
             COMMAND sh ${NCS_TESTS_DIR}/damage_check.sh ${c} $<TARGET_FILE:ncclscope>
                     $<TARGET_FILE:ncs-damage> ${NCS_DMG_SIM} ${CMAKE_CURRENT_BINARY_DIR}/damage-gen)
    set_tests_properties(damage_${c} PROPERTIES FIXTURES_REQUIRED ncs_damage_sim
                         SKIP_RETURN_CODE 77 TIMEOUT 300)
  endforeach()
  # scripts/hostile.sh's bounded slice (issue 32) with this build's binaries: a dead process, a
  # file cut before its first event chunk, a STRINGS chunk swapped with the EVENTS after it,
  # another recording's segment spliced in, the whole-file cases; the loss, the limits of
  # NCCLSCOPE_MAX_COMMS and NCCLSCOPE_TRACK_MAX in every output; every spelling of the plugin's
  # settings and NCCLSCOPE_CHAIN naming ncclscope; ulimit -f and /dev/full on every verb and
  # format, an output hard-linked to an input, no readable file, two unreadable files, diff of an
  # empty job. Any crash, false verdict or wrong exit code fails it (the table is printed).
  add_test(NAME hostile_slice
           COMMAND bash ${NCS_TESTS_DIR}/../scripts/hostile.sh --build ${CMAKE_BINARY_DIR} --slice
                   --jobs 2 --timeout 120 --fail)
  set_tests_properties(hostile_slice PROPERTIES TIMEOUT 1200 RUN_SERIAL TRUE)
endif()
