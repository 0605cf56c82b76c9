# The two steps of every file CMake generates with embedded bytes: at configure
# time (egm_embed_file, cmake/EgmEmbed.cmake) and in the build-time script
# cmake/WriteVersionHeader.cmake (cmake -P), so they use nothing but CMake.

# egm_c_bytes(VAR PATH [LIMIT]): the bytes of PATH (its first LIMIT bytes when
# given) as the elements of a C char array, "0x41,0x42,"; bytes above 0x7f
# (UTF-8 text) do not fit a char as literals, so they are cast.
function(egm_c_bytes var path)
  if(ARGC GREATER 2)
    file(READ "${path}" hex HEX LIMIT ${ARGV2})
  else()
    file(READ "${path}" hex HEX)
  endif()
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "0x([89a-f][0-9a-f])," "char(0x\\1)," bytes "${bytes}")
  set(${var} "${bytes}" PARENT_SCOPE)
endfunction()

# egm_write_if_changed(PATH CONTENT): writes CONTENT to PATH only when it differs
# from what is there, so a rerun that changes nothing recompiles nothing.
function(egm_write_if_changed path content)
  set(old "")
  if(EXISTS "${path}")
    file(READ "${path}" old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE "${path}" "${content}")
  endif()
endfunction()
