# egm_add_gtest(NAME SOURCES ... LIBS ... [LABELS ...] [FIXTURES ...])
# One GoogleTest executable registered with CTest through gtest_discover_tests.
find_package(GTest REQUIRED)
include(GoogleTest)
function(egm_add_gtest name)
  cmake_parse_arguments(ARG "SEEDED_TORCH" "" "SOURCES;LIBS;LABELS;FIXTURES" ${ARGN})
  # SEEDED_TORCH: LibTorch's default generator starts each test at one fixed seed
  # (tests/support/fixed_torch_seed.cpp), for binaries that draw from it.
  if(ARG_SEEDED_TORCH)
    list(APPEND ARG_SOURCES "${CMAKE_SOURCE_DIR}/tests/support/fixed_torch_seed.cpp")
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main egm::warnings)
  target_compile_definitions(${name} PRIVATE
    EGM_SOURCE_DIR="${CMAKE_SOURCE_DIR}" EGM_BINARY_DIR="${CMAKE_BINARY_DIR}")
  # gtest_discover_tests flattens PROPERTIES into one list, so a value that is
  # itself a list ("unit;serve") would lose all but its first item (and the
  # rest would be read as property names). A list property named once per
  # value appends instead: LABELS unit LABELS serve.
  set(props ENVIRONMENT "OMP_NUM_THREADS=1" ENVIRONMENT "EGM_DATA=${EGM_TEST_DATA}")
  foreach(label IN LISTS ARG_LABELS)
    list(APPEND props LABELS "${label}")
  endforeach()
  foreach(fixture IN LISTS ARG_FIXTURES)
    list(APPEND props FIXTURES_REQUIRED "${fixture}")
  endforeach()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${props})
endfunction()

# The corpus tests read: $EGM_DATA at configure time, else the shared copy
# beside the checkout (CI points EGM_DATA there too). Never a copy in the repo.
if(DEFINED ENV{EGM_DATA} AND NOT "$ENV{EGM_DATA}" STREQUAL "")
  set(EGM_TEST_DATA "$ENV{EGM_DATA}" CACHE FILEPATH "Corpus used by the tests")
else()
  get_filename_component(_egm_shared_corpus "${CMAKE_SOURCE_DIR}/../shared/data/tinyshakespeare/input.txt" ABSOLUTE)
  set(EGM_TEST_DATA "${_egm_shared_corpus}" CACHE FILEPATH "Corpus used by the tests")
endif()

# egm_python_imports(VAR PYTHON "import a, b"): VAR is ON when PYTHON is set and
# runs the import statement without an error, OFF otherwise; the tests that need
# those modules are added only when it is ON (and say why they are skipped).
function(egm_python_imports var python statement)
  set(ok OFF)
  if(python)
    execute_process(COMMAND "${python}" -c "${statement}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      set(ok ON)
    endif()
  endif()
  set(${var} ${ok} PARENT_SCOPE)
endfunction()
