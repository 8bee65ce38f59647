# The built memest-calibrate, without using a GPU (cmake -P; TOOL, FIXTURES, WORK set by CTest):
#   --help                      exit 0, usage on stdout
#   no device                   CUDA_VISIBLE_DEVICES=-1 hides every GPU: exit 1, exactly one
#                               line on stderr, nothing on stdout, no output file
#   --replay FIXTURE -o FILE    exit 0, a profile in FILE
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(fail what)
  message(FATAL_ERROR "memest-calibrate ${what}")
endfunction()

execute_process(COMMAND ${TOOL} --help RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^Usage: memest-calibrate" OR NOT err STREQUAL "")
  fail("--help: rc ${rc}, stdout '${out}', stderr '${err}'")
endif()

set(ENV{CUDA_VISIBLE_DEVICES} -1)
execute_process(COMMAND ${TOOL} --output ${WORK}/profile.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX MATCHALL "\n" newlines "${err}")
list(LENGTH newlines lines)
if(NOT rc EQUAL 1)
  fail("without a device: exit code ${rc} (expected 1); stderr '${err}'")
endif()
if(NOT lines EQUAL 1 OR NOT err MATCHES "^memest-calibrate: no CUDA device found \\(cudaGetDeviceCount: [^\n]+\\)\n$")
  fail("without a device: stderr should be one line, got '${err}'")
endif()
if(NOT out STREQUAL "" OR EXISTS ${WORK}/profile.json)
  fail("without a device: wrote something (stdout '${out}')")
endif()
message(STATUS "no device: ${err}")

execute_process(COMMAND ${TOOL} --replay ${FIXTURES}/h100-sxm-80gb.synthetic.json -o ${WORK}/replayed.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK}/replayed.json)
  fail("--replay: rc ${rc}, stderr '${err}'")
endif()
file(READ ${WORK}/replayed.json profile)
string(JSON context GET "${profile}" context_mib)
string(JSON half GET "${profile}" gemm_half_tokens)
if(NOT context EQUAL 1170 OR NOT half EQUAL 384)
  fail("--replay: context_mib ${context}, gemm_half_tokens ${half}")
endif()

# The real H100 measurement (examples/, 2026-11-22) replays to the profile written on the device:
# context = CUDA context 548,995,072 + cuBLAS 71,303,168 + NCCL 612,368,384 bytes = 1175.5625 MiB.
execute_process(COMMAND ${TOOL} --replay ${FIXTURES}/../../examples/h100-80gb-hbm3.calibrated.json
                -o ${WORK}/replayed-h100.json RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  fail("--replay of the measured H100: rc ${rc}, stderr '${err}'")
endif()
file(READ ${WORK}/replayed-h100.json profile)
string(JSON context GET "${profile}" context_mib)
string(JSON half GET "${profile}" gemm_half_tokens)
string(JSON eff GET "${profile}" gemm_efficiency)
if(NOT context STREQUAL "1175.5625" OR NOT half MATCHES "^139\\.(1|09999)" OR NOT eff MATCHES "^0\\.750(4|39999)")
  fail("--replay of the measured H100: context_mib ${context}, gemm_half_tokens ${half}, efficiency ${eff}")
endif()
