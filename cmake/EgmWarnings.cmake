# Warnings live on an interface target that every egm target links privately,
# so third-party headers (marked SYSTEM by their imported targets) stay quiet.
add_library(egm_warnings INTERFACE)
add_library(egm::warnings ALIAS egm_warnings)
target_compile_options(egm_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wnon-virtual-dtor -Wno-unused-parameter
  # GCC's local-only shadowing warning; Clang has no such level (its -Wshadow also flags members).
  $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>)
