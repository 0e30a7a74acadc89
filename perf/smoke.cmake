# The perf smoke test: `spindle-perf --quick` must succeed and write the
# expected number of JSON rows. Timing is never checked.
# cmake -DPERF=<spindle-perf> -DJSON=<file> -DROWS=<n> [-DSPINDLE_HTTP=<spindle-http>] -P smoke.cmake
# ROWS counts every row but the eight that spindle-perf writes only where what
# they run is there, which is looked up here the same way: fio's file_randread
# row (fio on PATH), cp's file_copy row (cp takes --reflink=never), the two
# http_static rows (wrk on PATH, and SPINDLE_HTTP built or nginx on PATH or at
# /usr/sbin/nginx), and the four https rows (those, openssl on PATH, and an
# nginx whose -V lists --with-http_ssl_module).
file(REMOVE "${JSON}")
execute_process(COMMAND "${PERF}" --quick --json "${JSON}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "spindle-perf --quick failed: ${rc}")
endif()
if(NOT EXISTS "${JSON}")
  message(FATAL_ERROR "spindle-perf --quick wrote no ${JSON}")
endif()

find_program(FIO fio PATHS ENV PATH NO_DEFAULT_PATH NO_CACHE)
find_program(WRK wrk PATHS ENV PATH NO_DEFAULT_PATH NO_CACHE)
find_program(NGINX nginx PATHS ENV PATH /usr/sbin NO_DEFAULT_PATH NO_CACHE)
find_program(CP cp PATHS ENV PATH NO_DEFAULT_PATH NO_CACHE)
find_program(OPENSSL openssl PATHS ENV PATH NO_DEFAULT_PATH NO_CACHE)
set(cp_never FALSE)
if(CP)
  execute_process(COMMAND "${CP}" --reflink=never --version RESULT_VARIABLE cp_rc
                  OUTPUT_QUIET ERROR_QUIET)
  if(cp_rc EQUAL 0)
    set(cp_never TRUE)
  endif()
endif()
set(spindle_http_built FALSE)
if(SPINDLE_HTTP AND EXISTS "${SPINDLE_HTTP}")
  set(spindle_http_built TRUE)
endif()

file(STRINGS "${JSON}" lines REGEX "^{\"workload\":")
list(LENGTH lines count)
set(other_count ${count})
set(errors "")
# One optional row: `workload` by `impl`, expected exactly when `present`.
function(expect_optional workload impl present why)
  file(STRINGS "${JSON}" found REGEX "^{\"workload\":\"${workload}\",\"impl\":\"${impl}\"")
  list(LENGTH found n)
  if(${present})
    set(want 1)
  else()
    set(want 0)
  endif()
  if(NOT n EQUAL want)
    set(errors "${errors} ${workload}/${impl}: ${n} rows, expected ${want} (${why});" PARENT_SCOPE)
  endif()
  math(EXPR left "${other_count} - ${n}")
  set(other_count ${left} PARENT_SCOPE)
endfunction()

expect_optional(file_randread fio FIO "fio: '${FIO}'")
expect_optional(file_copy cp cp_never "cp takes --reflink=never: ${cp_never}")
# Sets `var` to TRUE when the condition in the other arguments holds, else FALSE.
macro(set_if var)
  if(${ARGN})
    set(${var} TRUE)
  else()
    set(${var} FALSE)
  endif()
endmacro()

set_if(http_spindle WRK AND spindle_http_built)
set_if(http_nginx WRK AND NGINX)
expect_optional(http_static spindle http_spindle
                "wrk: '${WRK}', spindle-http: '${SPINDLE_HTTP}'")
expect_optional(http_static nginx http_nginx "wrk: '${WRK}', nginx: '${NGINX}'")
set(nginx_v "")
if(NGINX)
  # nginx -V prints its configure arguments on stderr.
  execute_process(COMMAND "${NGINX}" -V ERROR_VARIABLE nginx_v OUTPUT_QUIET)
endif()
string(FIND "${nginx_v}" "--with-http_ssl_module" ssl_at)
set_if(https_spindle http_spindle AND OPENSSL)
set_if(https_nginx http_nginx AND OPENSSL AND NOT ssl_at EQUAL -1)
foreach(workload https https_handshake)
  expect_optional(${workload} spindle https_spindle
                  "wrk: '${WRK}', spindle-http: '${SPINDLE_HTTP}', openssl: '${OPENSSL}'")
  expect_optional(${workload} nginx https_nginx
                  "wrk: '${WRK}', nginx: '${NGINX}' with its SSL module, openssl: '${OPENSSL}'")
endforeach()

# Each row is one (workload, impl): a measurement shared by two rows (echo on
# either backend) must still come out under each row's own name.
set(keys "")
foreach(line IN LISTS lines)
  string(REGEX MATCH "^{\"workload\":\"[^\"]*\",\"impl\":\"[^\"]*\"" key "${line}")
  list(APPEND keys "${key}")
endforeach()
set(unique_keys ${keys})
list(REMOVE_DUPLICATES unique_keys)
list(LENGTH unique_keys unique_count)
if(NOT unique_count EQUAL count)
  set(errors "${errors} ${count} rows but ${unique_count} distinct (workload, impl) pairs;")
endif()

if(NOT other_count EQUAL ROWS)
  set(errors "${errors} ${other_count} other rows, expected ${ROWS};")
endif()
if(errors)
  message(FATAL_ERROR "${JSON}:${errors}")
endif()
message(STATUS "spindle-perf --quick: ${count} rows")
