# otf2.cmake - tests of `ncclscope export --format otf2` (docs/otf2.md), built only with OTF2
# (src/export/CMakeLists.txt). Included by tests/CMakeLists.txt.
#
# otf2_demo      the demo's job: otf2-print reads the archive; otf2_read (the OTF2 reader API)
#                checks its counts and times against the job model
# otf2_errors    an existing output is refused (--force replaces an archive, never another
#                directory or file), an output inside the input, '-', --events; nothing is left
# otf2_fixtures  crafted traces (valid, crashed, damaged, escape): an archive otf2-print and
#                otf2_read accept, or a refusal, never a partial archive
# otf2_filter    the shared filters (--comm, --rank, --from/--to): tests/export_filter_check.py
# otf2_missing   an ncclscope without OTF2 (this build's with -DNCS_OTF2=OFF or without the
#                library; else one linked with otf2_missing.c in place of the exporter): the
#                format says so, exit status 2, nothing written
if(NCS_HAVE_OTF2)
  # otf2_missing.c defines ncs_export_otf2, so otf2.c is never taken from libncs_export.a
  add_executable(ncclscope_no_otf2 ${CMAKE_SOURCE_DIR}/src/cli/main.c
                                   ${CMAKE_SOURCE_DIR}/src/export/otf2_missing.c)
  target_link_libraries(ncclscope_no_otf2 PRIVATE ncs_cli)
  set(NCS_OX_MISSING $<TARGET_FILE:ncclscope_no_otf2>)
else()
  set(NCS_OX_MISSING $<TARGET_FILE:ncclscope>)
endif()
add_test(NAME otf2_missing
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/otf2_check.sh missing
                 ${CMAKE_CURRENT_BINARY_DIR}/otf2-missing ${NCS_OX_MISSING} none
                 ${CMAKE_CURRENT_BINARY_DIR}/generated/fixtures/valid)
set_tests_properties(otf2_missing PROPERTIES FIXTURES_REQUIRED ncs_traces TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "otf2_check: ok")
if(NOT NCS_HAVE_OTF2)
  return()
endif()
add_executable(otf2_read otf2_read.c)
target_link_libraries(otf2_read PRIVATE ncs_export)
set(NCS_OX_ARGS $<TARGET_FILE:ncclscope> $<TARGET_FILE:otf2_read>)
foreach(c demo errors)
  add_test(NAME otf2_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/otf2_check.sh ${c}
                   ${CMAKE_CURRENT_BINARY_DIR}/otf2-${c} ${NCS_OX_ARGS})
  set_tests_properties(otf2_${c} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
                       PASS_REGULAR_EXPRESSION "otf2_check: ok")
endforeach()
# the shared filters (--comm, --rank, --from/--to) in the archive: tests/export_filter_check.py
add_test(NAME otf2_filter
         COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/export_filter_check.py otf2
                 ${CMAKE_CURRENT_BINARY_DIR}/otf2-filter $<TARGET_FILE:ncclscope>
                 $<TARGET_FILE:ncs-pftrace-lint> $<TARGET_FILE:nccl-sim>
                 $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:otf2_read>)
set_tests_properties(otf2_filter PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                     PASS_REGULAR_EXPRESSION "export_filter_check: ok")
set(NCS_OX_FIX ${CMAKE_CURRENT_BINARY_DIR}/generated/fixtures) # written by reader.cmake
add_test(NAME otf2_fixtures
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/otf2_check.sh fixtures
                 ${CMAKE_CURRENT_BINARY_DIR}/otf2-fixtures ${NCS_OX_ARGS} ${NCS_OX_FIX}/valid
                 ${NCS_OX_FIX}/crashed ${NCS_OX_FIX}/damaged ${NCS_OX_FIX}/escape)
set_tests_properties(otf2_fixtures PROPERTIES FIXTURES_REQUIRED ncs_traces SKIP_RETURN_CODE 77
                     TIMEOUT 120 PASS_REGULAR_EXPRESSION "otf2_check: ok")
