# Writes a C++ source that holds a text file as a string constant, so the library needs no
# file access at run time (WASM included). Run as:
#   cmake -DINPUT=file.json -DOUTPUT=file.cpp -DSYMBOL=kName -P embed_text.cmake
file(READ "${INPUT}" content)
set(delim "memest_embedded")
string(FIND "${content}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_text.cmake; do not edit.\n"
  "namespace memest::data {\n"
  "extern const char ${SYMBOL}[];\n"
  "const char ${SYMBOL}[] = R\"${delim}(${content})${delim}\";\n"
  "}  // namespace memest::data\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
