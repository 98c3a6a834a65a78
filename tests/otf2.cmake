# otf2.cmake - tests of `ncclscope export --format otf2` (docs/otf2.md), built only with OTF2
# (src/export/CMakeLists.txt). Included by tests/CMakeLists.txt.
#
# otf2_demo      the demo's job: otf2-print reads the archive; otf2_read (the OTF2 reader API)
#                checks its counts and times against the job model
# otf2_errors    an existing output is refused (--force replaces an archive, never another
#                directory or file), an output inside the input, '-', --events; nothing is left
# otf2_fixtures  crafted traces (valid, crashed, damaged, escape): an archive otf2-print and
#                otf2_read accept, or a refusal, never a partial archive
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
set(NCS_OX_FIX ${CMAKE_CURRENT_BINARY_DIR}/generated/fixtures) # written by reader.cmake
add_test(NAME otf2_fixtures
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/otf2_check.sh fixtures
                 ${CMAKE_CURRENT_BINARY_DIR}/otf2-fixtures ${NCS_OX_ARGS} ${NCS_OX_FIX}/valid
                 ${NCS_OX_FIX}/crashed ${NCS_OX_FIX}/damaged ${NCS_OX_FIX}/escape)
set_tests_properties(otf2_fixtures PROPERTIES FIXTURES_REQUIRED ncs_traces SKIP_RETURN_CODE 77
                     TIMEOUT 120 PASS_REGULAR_EXPRESSION "otf2_check: ok")
