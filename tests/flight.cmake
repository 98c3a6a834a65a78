# The flight recorder (docs/flight.md): NCCLSCOPE_MODE=flight on nccl-sim. Ring reuse and
# keyframes, kill -9 survival, dumps on a signal, on the request file and by `ncclscope trigger`, reloads; and the
# signal handler's manners towards the application's own handler (test_flight_signal.c).
foreach(c wrap kill9 signal request trigger reload)
  add_test(NAME flight_${c}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/flight_check.sh $<TARGET_FILE:nccl-sim>
                   $<TARGET_FILE:nccl-profiler-ncclscope> $<TARGET_FILE:ncclscope>
                   ${CMAKE_CURRENT_BINARY_DIR}/flight-${c} ${c})
  set_tests_properties(flight_${c} PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "flight check ${c}: ok")
endforeach()
add_executable(test_flight_signal test_flight_signal.c)
target_link_libraries(test_flight_signal PRIVATE ncs_trace ${CMAKE_DL_LIBS})
add_test(NAME flight_signal_chain COMMAND test_flight_signal $<TARGET_FILE:nccl-profiler-ncclscope>
                                          ${CMAKE_CURRENT_BINARY_DIR}/flight-chain)
