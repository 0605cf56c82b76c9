# egm_embed_file(TARGET tgt FILE path HEADER generated/relative.h NAMESPACE ns SYMBOL name)
#
# Embeds a file of the source tree in `tgt` as a NUL-terminated byte array,
#   namespace <ns> { inline constexpr char <name>[] = {...}; }   // length: sizeof - 1
# in the header <build>/generated/<HEADER>, which `tgt` can include as
# "<HEADER>". The file is read at configure time and re-embedded when it
# changes (CMAKE_CONFIGURE_DEPENDS); the header is rewritten only when its text
# changes, so an unrelated reconfigure recompiles nothing. Installed binaries
# need no source tree: the schema, the results-database migrations and the
# sbatch template are embedded this way.
include("${CMAKE_CURRENT_LIST_DIR}/EgmGenerated.cmake")

function(egm_embed_file)
  cmake_parse_arguments(E "" "TARGET;FILE;HEADER;NAMESPACE;SYMBOL" "" ${ARGN})
  foreach(arg TARGET FILE HEADER NAMESPACE SYMBOL)
    if(NOT E_${arg})
      message(FATAL_ERROR "egm_embed_file: ${arg} is required")
    endif()
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${E_FILE}")
  egm_c_bytes(bytes "${E_FILE}")
  file(RELATIVE_PATH source "${CMAKE_SOURCE_DIR}" "${E_FILE}")
  set(text "// Generated from ${source} by egm_embed_file (cmake/EgmEmbed.cmake); do not edit.
#pragma once
namespace ${E_NAMESPACE} {
// NUL-terminated; the length is sizeof - 1.
inline constexpr char ${E_SYMBOL}[] = {${bytes}0x00};
}  // namespace ${E_NAMESPACE}
")
  egm_write_if_changed("${CMAKE_BINARY_DIR}/generated/${E_HEADER}" "${text}")
  target_include_directories(${E_TARGET} PRIVATE "${CMAKE_BINARY_DIR}/generated")
endfunction()
