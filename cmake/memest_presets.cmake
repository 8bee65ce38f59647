# memest_embed_presets(<out-var> <data-dir> <generated-dir>): custom commands that turn the preset
# files (models.json, gpus.json) into C++ sources holding them as strings (embed_text.cmake), so
# the library needs no file access at run time. Sets <out-var> to the generated sources.
# Used by libmemest/CMakeLists.txt and wasm/CMakeLists.txt.
set(MEMEST_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_text.cmake)

function(memest_embed_presets out_var data_dir generated_dir)
  set(sources)
  foreach(pair "models.json;kModelsJson" "gpus.json;kGpusJson")
    list(GET pair 0 file)
    list(GET pair 1 symbol)
    string(REPLACE ".json" "_json.cpp" out ${file})
    add_custom_command(
      OUTPUT ${generated_dir}/${out}
      COMMAND ${CMAKE_COMMAND} -DINPUT=${data_dir}/${file} -DOUTPUT=${generated_dir}/${out}
              -DSYMBOL=${symbol} -P ${MEMEST_EMBED_SCRIPT}
      DEPENDS ${data_dir}/${file} ${MEMEST_EMBED_SCRIPT}
      COMMENT "Embedding ${file}")
    list(APPEND sources ${generated_dir}/${out})
  endforeach()
  set(${out_var} ${sources} PARENT_SCOPE)
endfunction()
