# Runs one CLI golden case: ${CASE}.args (one argument per line), optional ${CASE}.stdin;
# compares stdout with ${CASE}.out, the exit code with ${CASE}.rc and, where ${CASE}.err
# exists, stderr with it (error cases pin their one-line message that way).
# The command runs in tests/cli, so arguments name fixtures as data/FILE.
# With the environment variable MEMEST_UPDATE_GOLDEN=1 it rewrites .out and .rc instead, and
# .err where one exists (create an empty NAME.err first to start checking a case's stderr).
file(STRINGS "${CASE}.args" args)
get_filename_component(golden_dir "${CASE}" DIRECTORY)
get_filename_component(cli_dir "${golden_dir}" DIRECTORY)
set(input_args)
if(EXISTS "${CASE}.stdin")
  set(input_args INPUT_FILE "${CASE}.stdin")
endif()
execute_process(COMMAND "${MEMEST}" ${args} ${input_args}
  WORKING_DIRECTORY "${cli_dir}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if("$ENV{MEMEST_UPDATE_GOLDEN}" STREQUAL "1")
  file(WRITE "${CASE}.out" "${out}")
  file(WRITE "${CASE}.rc" "${rc}\n")
  if(EXISTS "${CASE}.err")
    file(WRITE "${CASE}.err" "${err}")
  endif()
  return()
endif()
file(READ "${CASE}.out" expected_out)
file(STRINGS "${CASE}.rc" expected_rc)
if(NOT rc STREQUAL expected_rc)
  message(FATAL_ERROR "exit code ${rc}, expected ${expected_rc}\nstderr: ${err}\nstdout: ${out}")
endif()
if(NOT out STREQUAL expected_out)
  file(WRITE "${CASE}.actual" "${out}")
  message(FATAL_ERROR "stdout differs from ${CASE}.out (written to ${CASE}.actual)\nstderr: ${err}")
endif()
if(EXISTS "${CASE}.err")
  file(READ "${CASE}.err" expected_err)
  if(NOT err STREQUAL expected_err)
    message(FATAL_ERROR "stderr differs from ${CASE}.err\nstderr:   ${err}expected: ${expected_err}")
  endif()
endif()
if(NOT rc EQUAL 0 AND err STREQUAL "")
  message(FATAL_ERROR "failed without a message on stderr")
endif()
