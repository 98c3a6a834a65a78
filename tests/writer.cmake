# writer.cmake - the plugin's loss records and its writer's I/O under failure (docs/testing.md).
# Included by tests/CMakeLists.txt.
#
# libncs-faultinj.so (faultinj.c) is a test-only LD_PRELOAD library that makes writes, fallocate,
# ftruncate, fsync, close and stdio under a directory fail with ENOSPC or EIO (its header comment
# lists the variables); other tests may reuse it. It is built without the sanitizers, since it is
# preloaded into sanitized programs; those then need ASAN_OPTIONS=verify_asan_link_order=0, which
# writer_check.py sets.
#
# writer_<case> (tests/writer_check.py): loss records under overload (flight and trace mode, a
# flight run killed -9, runs without loss), and writes that fail: a full disk that clears, EIO,
# a full disk that never clears, a torn chunk that cannot be cut off at first, flight mode's
# fallocate and dump failures.
add_library(ncs-faultinj SHARED ${CMAKE_CURRENT_LIST_DIR}/faultinj.c)
target_link_libraries(ncs-faultinj PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
foreach(prop COMPILE_OPTIONS LINK_OPTIONS)
  get_target_property(opts ncs-faultinj ${prop})
  if(opts)
    list(FILTER opts EXCLUDE REGEX "sanitize")
    set_target_properties(ncs-faultinj PROPERTIES ${prop} "${opts}")
  endif()
endforeach()

foreach(c loss_flight loss_flight_kill9 loss_flight_clean loss_trace io_enospc io_eio io_full
          io_torn flight_fallocate flight_dump)
  add_test(NAME writer_${c}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/writer_check.py $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   $<TARGET_FILE:ncs-faultinj> ${CMAKE_CURRENT_BINARY_DIR}/writer-${c} ${c})
  set_tests_properties(writer_${c} PROPERTIES TIMEOUT 180 PASS_REGULAR_EXPRESSION "writer check ${c}: ok")
endforeach()
