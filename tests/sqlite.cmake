# sqlite.cmake - tests of `ncclscope export --format sqlite` (docs/sqlite.md), with the sqlite3
# CLI (tests/sqlite_check.sh; skipped without it). Included by tests/CMakeLists.txt.
#
# sqlite_slowrank   nccl-sim job with an injected slow rank: row counts match dump --stats,
#                   every example query of docs/sqlite.md runs, the last-arrival query names the
#                   slow rank and the database agrees with report --json
# sqlite_errors     unwritable outputs fail with status 1 and leave no file; --force; usage
# sqlite_scenarios  reloads, a crash, events that never stop, ABI v3, several ranks per
#                   process: a sound database whose event tables match dump --stats
# sqlite_fixtures   crafted traces (valid, crashed, damaged, escape) export to a sound database
# sqlite_v7         ABI v7 columns and kernel_phases; NULL through v6 and in format 1.1 fixtures
set(NCS_SQ_ARGS $<TARGET_FILE:ncclscope> $<TARGET_FILE:nccl-sim>
    $<TARGET_FILE:nccl-profiler-ncclscope> ${CMAKE_CURRENT_LIST_DIR}/../docs/sqlite.md)
foreach(c slowrank errors scenarios)
  add_test(NAME sqlite_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/sqlite_check.sh ${c}
                   ${CMAKE_CURRENT_BINARY_DIR}/sqlite-${c} ${NCS_SQ_ARGS})
  set_tests_properties(sqlite_${c} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
endforeach()
set(NCS_SQ_FIX ${CMAKE_CURRENT_BINARY_DIR}/generated/fixtures) # written by reader.cmake
add_test(NAME sqlite_fixtures
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/sqlite_check.sh fixtures
                 ${CMAKE_CURRENT_BINARY_DIR}/sqlite-fixtures ${NCS_SQ_ARGS} ${NCS_SQ_FIX}/valid
                 ${NCS_SQ_FIX}/crashed ${NCS_SQ_FIX}/damaged ${NCS_SQ_FIX}/escape)
set_tests_properties(sqlite_fixtures PROPERTIES FIXTURES_REQUIRED ncs_traces SKIP_RETURN_CODE 77
                     TIMEOUT 120)
add_test(NAME sqlite_v7
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/sqlite_check.sh v7 ${CMAKE_CURRENT_BINARY_DIR}/sqlite-v7
                 ${NCS_SQ_ARGS} ${CMAKE_CURRENT_LIST_DIR}/fixtures/gpu/collectives-nvlink
                 ${CMAKE_CURRENT_LIST_DIR}/fixtures/gpu/graph-nvlink)
set_tests_properties(sqlite_v7 PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
