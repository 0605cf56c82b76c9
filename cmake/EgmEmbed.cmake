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
function(egm_embed_file)
  cmake_parse_arguments(E "" "TARGET;FILE;HEADER;NAMESPACE;SYMBOL" "" ${ARGN})
  foreach(arg TARGET FILE HEADER NAMESPACE SYMBOL)
    if(NOT E_${arg})
      message(FATAL_ERROR "egm_embed_file: ${arg} is required")
    endif()
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${E_FILE}")
  file(READ "${E_FILE}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # Bytes above 0x7f (UTF-8 text) do not fit a char as literals: cast them.
  string(REGEX REPLACE "0x([89a-f][0-9a-f])," "char(0x\\1)," bytes "${bytes}")
  file(RELATIVE_PATH source "${CMAKE_SOURCE_DIR}" "${E_FILE}")
  set(text "// Generated from ${source} by egm_embed_file (cmake/EgmEmbed.cmake); do not edit.
#pragma once
namespace ${E_NAMESPACE} {
// NUL-terminated; the length is sizeof - 1.
inline constexpr char ${E_SYMBOL}[] = {${bytes}0x00};
}  // namespace ${E_NAMESPACE}
")
  set(out "${CMAKE_BINARY_DIR}/generated/${E_HEADER}")
  set(old "")
  if(EXISTS "${out}")
    file(READ "${out}" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${out}" "${text}")
  endif()
  target_include_directories(${E_TARGET} PRIVATE "${CMAKE_BINARY_DIR}/generated")
endfunction()
