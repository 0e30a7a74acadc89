# The perf smoke test: `spindle-perf --quick` must succeed and write the
# expected number of JSON rows. Timing is never checked.
# cmake -DPERF=<spindle-perf> -DJSON=<file> -DROWS=<n> -P smoke.cmake
# ROWS counts every row but fio's: spindle-perf adds that one exactly when fio
# is on PATH, which is looked up here the same way.
file(REMOVE "${JSON}")
execute_process(COMMAND "${PERF}" --quick --json "${JSON}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "spindle-perf --quick failed: ${rc}")
endif()
if(NOT EXISTS "${JSON}")
  message(FATAL_ERROR "spindle-perf --quick wrote no ${JSON}")
endif()
find_program(FIO fio PATHS ENV PATH NO_DEFAULT_PATH NO_CACHE)
if(FIO)
  set(fio_rows 1)
else()
  set(fio_rows 0)
endif()
file(STRINGS "${JSON}" lines REGEX "^{\"workload\":")
file(STRINGS "${JSON}" fio_lines REGEX "^{\"workload\":\"file_randread\",\"impl\":\"fio\"")
list(LENGTH lines count)
list(LENGTH fio_lines fio_count)
math(EXPR other_count "${count} - ${fio_count}")
if(NOT other_count EQUAL ROWS OR NOT fio_count EQUAL fio_rows)
  message(FATAL_ERROR "${JSON} has ${other_count} rows and ${fio_count} fio rows, expected "
                      "${ROWS} and ${fio_rows} (fio on PATH: '${FIO}')")
endif()
message(STATUS "spindle-perf --quick: ${count} rows (fio: ${fio_count})")
