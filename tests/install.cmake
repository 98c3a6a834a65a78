# install.cmake - the installed tree and the Debian package work on their own (install_check.sh),
# and the CLI is one CLI across its verbs (cli_consistency.sh)
add_test(NAME install_tree COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/install_check.sh tree
         ${CMAKE_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/install-tree)
add_test(NAME install_deb COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/install_check.sh deb
         ${CMAKE_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/install-deb)
set_tests_properties(install_tree install_deb PROPERTIES TIMEOUT 300 RESOURCE_LOCK ncs_install)
set_tests_properties(install_deb PROPERTIES SKIP_RETURN_CODE 77)

# one CLI: exit statuses, short options, the overwrite rule and the commId format across verbs
add_test(NAME cli_consistency COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cli_consistency.sh
         $<TARGET_FILE:ncclscope> ${CMAKE_CURRENT_BINARY_DIR}/cli-consistency)
set_tests_properties(cli_consistency PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "cli consistency: ok")
# one convention for every verb's help and usage errors: every option of its getopt table in its
# --help (80 columns, examples, exit statuses), one error format, never getopt's messages
add_test(NAME cli_help_every_verb COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/cli_help_check.py
         $<TARGET_FILE:ncclscope> ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_help_every_verb PROPERTIES TIMEOUT 120 PASS_REGULAR_EXPRESSION "cli help check: ok")

# the demo as a new user runs it: one screen, nothing left in the current directory, next commands
# that run as printed, a second run that replaces the first, a hang and a desync injected and
# shown; and (timing: their showing rests on injected sleeps) a straggler, a stall and a slow link
add_test(NAME demo_one_screen COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/demo_check.sh
         $<TARGET_FILE:ncclscope> ${CMAKE_CURRENT_BINARY_DIR}/demo-check screen)
add_test(NAME demo_scenarios COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/demo_check.sh
         $<TARGET_FILE:ncclscope> ${CMAKE_CURRENT_BINARY_DIR}/demo-scenarios scenarios)
set_tests_properties(demo_one_screen demo_scenarios PROPERTIES TIMEOUT 300
                     PASS_REGULAR_EXPRESSION "demo check: ok")

# the terminal: every verb fits 80 and 120 columns (--wide: full lines); colour, pager, sorted
# rows with units, "N more rows", progress bars (tty_check.py)
add_test(NAME report_tty COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/tty_check.py
         $<TARGET_FILE:ncclscope> $<TARGET_FILE:nccl-sim> ${CMAKE_CURRENT_BINARY_DIR}/tty-check)
set_tests_properties(report_tty PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "tty check: ok")
