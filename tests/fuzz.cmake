# fuzz.cmake - the whole read path under the fuzzer (tests/fuzz/fuzz_job.c): an input is a job
# of up to 4 trace files, run through report (text, JSON, HTML), every export, diagnose and
# dump --stats. The reader alone has its own target (reader.cmake, fuzz_reader).
#
# In every build the target runs over the corpora (the reader's, the job corpus of small
# recorded jobs, the generated seeds and fixtures); with -DNCS_FUZZ=ON (clang) fuzz_job is the
# libFuzzer target that scripts/fuzz.sh runs.
add_executable(fuzz_job_replay ${NCS_TESTS_DIR}/fuzz/replay_main.c ${NCS_TESTS_DIR}/fuzz/fuzz_job.c)
target_link_libraries(fuzz_job_replay PRIVATE ncs_cli)
add_test(NAME fuzz_job_corpus_replay
         COMMAND fuzz_job_replay ${NCS_TESTS_DIR}/fuzz/job_corpus ${NCS_TESTS_DIR}/fuzz/corpus
                 ${NCS_GEN_DIR}/seeds ${NCS_GEN_DIR}/fixtures/valid ${NCS_GEN_DIR}/fixtures/crashed
                 ${NCS_GEN_DIR}/fixtures/damaged ${NCS_GEN_DIR}/fixtures/escape)
set_tests_properties(fuzz_job_corpus_replay PROPERTIES FIXTURES_REQUIRED ncs_traces TIMEOUT 600)

if(NCS_FUZZ)
  add_executable(fuzz_job ${NCS_TESTS_DIR}/fuzz/fuzz_job.c)
  target_link_libraries(fuzz_job PRIVATE ncs_cli)
  target_link_options(fuzz_job PRIVATE -fsanitize=fuzzer)
  set_target_properties(fuzz_job PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  add_test(NAME fuzz_job_smoke COMMAND fuzz_job -runs=200 -seed=1 ${NCS_TESTS_DIR}/fuzz/job_corpus)
endif()
