# How jobs are launched and measured (issue 32): no silent fallbacks, the pip
# wheel, Slurm on the emulated cluster and the PMIx / PMI-2 bootstrap.

# Commands that would measure something other than what was asked refuse.
add_test(NAME no_fallback COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_no_fallback.sh $<TARGET_FILE:railcoll_cli>)
set_tests_properties(no_fallback PROPERTIES TIMEOUT 300)

