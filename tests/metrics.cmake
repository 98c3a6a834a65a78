# metrics.cmake - the live metrics (docs/metrics.md) against the real consumers: Debian's
# prometheus and node_exporter, an OTLP/HTTP receiver, hostile clients; the dashboard and the
# docs against what the plugin exports. Included by tests/CMakeLists.txt; each case of
# tests/metrics_check.py runs in its own directory. scripts/deps.sh test installs prometheus
# and prometheus-node-exporter.
# A build without libmicrohttpd's or libcurl's headers (see CMakeLists.txt) has no endpoint or no
# pushes to test: these tests need both.
if(NOT NCS_HAVE_MHD_H OR NOT NCS_HAVE_CURL_H)
  message(STATUS "live metrics tests left out: this build has no HTTP endpoint or no OTLP pushes")
  return()
endif()
set(NCS_MX_CHECK python3 ${CMAKE_CURRENT_SOURCE_DIR}/metrics_check.py)
foreach(c prometheus procs otlp scenarios collector hostile missing ports caps dashboard docs)
  add_test(NAME metrics_${c}
           COMMAND ${NCS_MX_CHECK} ${c} ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/metrics/${c})
  set_tests_properties(metrics_${c} PROPERTIES TIMEOUT 300)
endforeach()

# the endpoint's request path (libmicrohttpd + src/metrics/http.c) over the HTTP corpus in every
# build; with -DNCS_FUZZ=ON also the libFuzzer target (scripts/fuzz.sh runs it)
set(NCS_HTTP_FUZZ_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_http.c ${CMAKE_SOURCE_DIR}/src/metrics/http.c
                      ${CMAKE_SOURCE_DIR}/src/core/clock.c)
add_executable(fuzz_http_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/replay_main.c ${NCS_HTTP_FUZZ_SRC})
target_link_libraries(fuzz_http_replay PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
target_compile_definitions(fuzz_http_replay PRIVATE NCS_HAVE_MHD)
add_test(NAME fuzz_http_replay COMMAND fuzz_http_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/http_corpus)
if(NCS_FUZZ)
  add_executable(fuzz_http ${NCS_HTTP_FUZZ_SRC})
  target_compile_options(fuzz_http PRIVATE -fsanitize=fuzzer,address,undefined
                                           -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(fuzz_http PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_http PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  target_compile_definitions(fuzz_http PRIVATE NCS_HAVE_MHD)
  set_target_properties(fuzz_http PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  add_test(NAME fuzz_http_smoke COMMAND fuzz_http -runs=2000 -seed=1 ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/http_corpus)
endif()
