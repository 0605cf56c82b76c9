# Every third-party package in one place. All come from Debian 12 on the CPU
# build; on a GPU node Torch comes from a PyTorch wheel via CMAKE_PREFIX_PATH.
find_package(Torch REQUIRED)
# What `egm --version` says it was built against (src/cli/version.cpp), recorded
# here so the torch-free `egm` prints it without loading LibTorch: LibTorch's
# version from its CMake package, and the CUDA toolkit its CUDA code compiles
# with (found by the package itself; "none" for a CPU-only LibTorch).
set(EGM_BUILT_TORCH_VERSION "${Torch_VERSION}")
if(EGM_BUILT_TORCH_VERSION STREQUAL "")
  set(EGM_BUILT_TORCH_VERSION "unknown")
endif()
if(NOT TARGET torch_cuda)
  set(EGM_BUILT_CUDA_VERSION "none (CPU-only LibTorch)")
elseif(CUDAToolkit_VERSION)
  set(EGM_BUILT_CUDA_VERSION "${CUDAToolkit_VERSION}")
elseif(CUDA_VERSION)
  set(EGM_BUILT_CUDA_VERSION "${CUDA_VERSION}")
else()
  set(EGM_BUILT_CUDA_VERSION "unknown")
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/build_info.h.in ${CMAKE_BINARY_DIR}/generated/egm/build_info.h @ONLY)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(fmt REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(CLI11 REQUIRED)
find_package(valijson REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(Threads REQUIRED)
# cpp-httplib (egm serve): Debian ships it as a shared library, and its class
# layout depends on the feature macros (OpenSSL, zlib, brotli) in its .pc file.
find_package(PkgConfig REQUIRED)
pkg_check_modules(EGM_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)

# Torch's imported target carries its include dirs as non-SYSTEM on some
# versions; re-expose it through a SYSTEM interface so -Wshadow etc. stay ours.
add_library(egm_torch INTERFACE)
add_library(egm::torch ALIAS egm_torch)
# libstdc++ before LibTorch in every binary's load order: PyPI's libtorch.so
# exports its own copies of newer libstdc++ symbols (64 std::filesystem ones,
# from the toolchain that built it), which would otherwise win symbol lookup
# over the system libstdc++ our code was compiled against; std::filesystem::
# remove_all then ran LibTorch's copy on our directory iterators and crashed.
target_link_libraries(egm_torch INTERFACE "-Wl,--push-state,--no-as-needed" stdc++ "-Wl,--pop-state"
                                          ${TORCH_LIBRARIES})
get_target_property(_torch_inc torch INTERFACE_INCLUDE_DIRECTORIES)
# PyPI's LibTorch bundles its own {fmt} headers (v12) in torch/include, which
# would shadow the fmt egm links (Debian's libfmt, v9) in every unit that sees
# torch: those units would then call libfmt v12 symbols nobody provides. A
# folder holding only the linked fmt's headers goes first, so each unit sees
# the fmt it links (LibTorch's headers compile against it; its libraries keep
# their own fmt inside).
foreach(_dir IN LISTS _torch_inc)
  if(EXISTS "${_dir}/fmt/format.h")
    find_path(EGM_FMT_INCLUDE_DIR fmt/format.h PATHS /usr/include /usr/local/include NO_DEFAULT_PATH)
    if(EGM_FMT_INCLUDE_DIR)
      set(_fmt_shadow "${CMAKE_BINARY_DIR}/fmt-before-torch")
      file(MAKE_DIRECTORY "${_fmt_shadow}")
      file(CREATE_LINK "${EGM_FMT_INCLUDE_DIR}/fmt" "${_fmt_shadow}/fmt" SYMBOLIC)
      target_include_directories(egm_torch SYSTEM BEFORE INTERFACE "${_fmt_shadow}")
    endif()
    break()
  endif()
endforeach()
if(_torch_inc)
  target_include_directories(egm_torch SYSTEM INTERFACE ${_torch_inc})
endif()
if(TORCH_CXX_FLAGS)
  target_compile_options(egm_torch INTERFACE ${TORCH_CXX_FLAGS})
endif()
# One precompiled <torch/torch.h> for the whole build. Parsing it costs 20-28 s
# of CPU per translation unit (Release, LibTorch 2.11, Clang 14 or GCC 12);
# from a precompiled header a unit pays ~1.5 s with Clang (CMake passes
# -fpch-instantiate-templates, so the header's template instantiations are
# done once) and ~7 s with GCC (it defers them to the end of every unit), plus
# its own code. egm_torch_pch builds the header once (Clang ~20 s and 150 MB,
# GCC ~90 s and 700 MB) and every torch-heavy target reuses it (REUSE_FROM):
# their flags match it (same build type, same torch/fmt definitions; warning
# flags and include paths may differ, and -Winvalid-pch says when a unit
# falls back to parsing). egm_torch_pch(TARGET [ONLY src...]) applies it to a
# target, or to the named sources only (the others do not need torch).
# Measurements: results/BENCHMARKS.md, "Compile cost".
option(EGM_TORCH_PCH "Precompile <torch/torch.h> once and reuse it in every torch-heavy target" ON)
if(EGM_TORCH_PCH)
  add_library(egm_torch_pch STATIC "${CMAKE_CURRENT_LIST_DIR}/torch_pch.cpp")
  # fmt for FMT_SHARED (LibTorch's headers include fmt) and the warnings for -Wpedantic (it
  # undefines __cpp_runtime_arrays): the predefined macros must match the users'.
  target_link_libraries(egm_torch_pch PRIVATE egm::torch fmt::fmt nlohmann_json::nlohmann_json egm::warnings)
  target_precompile_headers(egm_torch_pch PRIVATE <torch/torch.h>)
  if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # ccache's preprocessor mode must see the header the unit was compiled with
    # (the launcher sets the sloppiness ccache needs for precompiled headers).
    target_compile_options(egm_torch_pch PRIVATE -fpch-preprocess)
  elseif(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache" AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # Clang stamps a precompiled header with its mtime and refuses it once the
    # file is newer; ccache restores files with new mtimes, so no stamp.
    target_compile_options(egm_torch_pch PRIVATE -Xclang -fno-pch-timestamp)
  endif()
endif()
function(egm_torch_pch target)
  if(NOT EGM_TORCH_PCH)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "ONLY" ${ARGN})
  target_precompile_headers(${target} REUSE_FROM egm_torch_pch)
  if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -fpch-preprocess)
  endif()
  if(ARG_ONLY)
    get_target_property(_sources ${target} SOURCES)
    foreach(_src IN LISTS _sources)
      if(NOT _src IN_LIST ARG_ONLY)
        set_source_files_properties(${_src} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
    endforeach()
  endif()
endfunction()

# tcmalloc for the user binaries. glibc's malloc hands every freed block above 32 MB
# straight back to the kernel (munmap), and a training step allocates and frees several
# [B, H, T, T] tensors per layer (128 MiB each at the paper preset), so every step
# page-faulted gigabytes of freshly zeroed pages. tcmalloc keeps and reuses them: the
# paper-preset base step went from 7.8-8.3 s to 5.4-5.6 s on the 2-core CPU machine
# (results/BENCHMARKS.md, "Allocator"). Only the runtime library (libtcmalloc-minimal4)
# is needed. --no-as-needed because nothing calls it by name: it replaces malloc.
option(EGM_TCMALLOC "Link egm, egm-worker and egm-coordinator against tcmalloc_minimal" ON)
add_library(egm_malloc INTERFACE)
add_library(egm::malloc ALIAS egm_malloc)
if(EGM_TCMALLOC)
  find_library(TCMALLOC_LIBRARY NAMES tcmalloc_minimal libtcmalloc_minimal.so.4)
  if(TCMALLOC_LIBRARY)
    target_link_libraries(egm_malloc INTERFACE "-Wl,--push-state,--no-as-needed" ${TCMALLOC_LIBRARY}
                                               "-Wl,--pop-state")
  else()
    message(WARNING "tcmalloc_minimal not found (apt-get install libtcmalloc-minimal4): "
                    "training steps will be ~1.4x slower with glibc's malloc")
  endif()
endif()

# NCCL: AUTO builds it when nccl.h, libnccl and the CUDA runtime are all found.
set(EGM_HAVE_NCCL OFF)
if(NOT EGM_WITH_NCCL STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{NCCL_HOME}/include /usr/local/cuda/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{NCCL_HOME}/lib /usr/local/cuda/lib64)
  if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(EGM_HAVE_NCCL ON)
    add_library(egm_nccl INTERFACE)
    add_library(egm::nccl ALIAS egm_nccl)
    target_include_directories(egm_nccl SYSTEM INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(egm_nccl INTERFACE ${NCCL_LIBRARY} CUDA::cudart)
    message(STATUS "egm: NCCL backend ON (${NCCL_LIBRARY})")
  elseif(EGM_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "EGM_WITH_NCCL=ON but nccl.h/libnccl/CUDA runtime were not all found")
  else()
    message(STATUS "egm: NCCL backend OFF (nccl.h, libnccl or CUDA runtime not found)")
  endif()
endif()

# sha256 for the corpus and checkpoint checksums; libcurl for `egm data fetch`.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(CURL REQUIRED)

# egm export: TensorBoard event files through protobuf (Debian's libprotobuf-dev
# and protoc), and Parquet through Apache Arrow's C++ Parquet writer from the
# pinned pyarrow wheel (scripts/arrow_env.sh passes EGM_ARROW_DIR, the wheel's
# pyarrow/ folder: include/, libarrow.so.2600, libparquet.so.2600). Arrow is
# linked only into the module egm-parquet.so (src/export/parquet_plugin.h).
# Debian's protobuf, not the copy in the torch wheel that CMAKE_PREFIX_PATH names
# first (its protoc and 3.13 headers do not match Debian's library). Only egm
# links it: libtorch_cpu exports its own protobuf symbols, so egm-torch must not.
set(CMAKE_FIND_USE_CMAKE_PATH FALSE)
find_package(Protobuf REQUIRED)
unset(CMAKE_FIND_USE_CMAKE_PATH)
set(EGM_ARROW_DIR "" CACHE PATH "pyarrow's folder in the wheel's environment (scripts/arrow_env.sh sets it)")
set(EGM_ARROW_SO_VERSION 2600)
find_path(EGM_ARROW_INCLUDE_DIR parquet/arrow/writer.h HINTS "${EGM_ARROW_DIR}/include" NO_DEFAULT_PATH)
find_library(EGM_ARROW_LIBRARY NAMES libarrow.so.${EGM_ARROW_SO_VERSION} HINTS "${EGM_ARROW_DIR}" NO_DEFAULT_PATH)
find_library(EGM_PARQUET_LIBRARY NAMES libparquet.so.${EGM_ARROW_SO_VERSION} HINTS "${EGM_ARROW_DIR}" NO_DEFAULT_PATH)
if(NOT EGM_ARROW_INCLUDE_DIR OR NOT EGM_ARROW_LIBRARY OR NOT EGM_PARQUET_LIBRARY)
  message(FATAL_ERROR "Apache Arrow ${EGM_ARROW_SO_VERSION} (headers, libarrow, libparquet) not found in "
                      "EGM_ARROW_DIR='${EGM_ARROW_DIR}': scripts/setup.sh installs the pinned pyarrow wheel and "
                      "passes it (scripts/arrow_env.sh)")
endif()
add_library(egm_arrow INTERFACE)
add_library(egm::arrow ALIAS egm_arrow)
target_include_directories(egm_arrow SYSTEM INTERFACE "${EGM_ARROW_INCLUDE_DIR}")
target_link_libraries(egm_arrow INTERFACE "${EGM_PARQUET_LIBRARY}" "${EGM_ARROW_LIBRARY}")
# The notebook and export tests' python (pandas, Polars, DuckDB, TensorBoard's reader).
set(EGM_NOTEBOOK_PYTHON "" CACHE FILEPATH "python3 with the notebook test packages (scripts/arrow_env.sh sets it)")
