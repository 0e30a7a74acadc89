# The perf smoke test: `spindle-perf --quick` must succeed and write the
# expected number of JSON rows. Timing is never checked.
# cmake -DPERF=<spindle-perf> -DJSON=<file> -DROWS=<n> -P smoke.cmake
file(REMOVE "${JSON}")
execute_process(COMMAND "${PERF}" --quick --json "${JSON}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "spindle-perf --quick failed: ${rc}")
endif()
if(NOT EXISTS "${JSON}")
  message(FATAL_ERROR "spindle-perf --quick wrote no ${JSON}")
endif()
file(STRINGS "${JSON}" lines REGEX "^{\"workload\":")
list(LENGTH lines count)
if(NOT count EQUAL ROWS)
  message(FATAL_ERROR "${JSON} has ${count} rows, expected ${ROWS}")
endif()
message(STATUS "spindle-perf --quick: ${count} rows")
