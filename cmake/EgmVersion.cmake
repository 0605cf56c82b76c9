# Bakes the git commit and project version into a generated header that every
# run row and checkpoint records. Re-run at build time so a new commit shows up
# without re-configuring.
set(EGM_VERSION_HEADER "${CMAKE_BINARY_DIR}/generated/egm/version_info.h")
add_custom_target(egm_version_header
  COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
    -DOUTPUT=${EGM_VERSION_HEADER}
    -DEGM_VERSION=${PROJECT_VERSION}
    -P ${CMAKE_SOURCE_DIR}/cmake/WriteVersionHeader.cmake
  BYPRODUCTS ${EGM_VERSION_HEADER}
  COMMENT "Recording git commit in version_info.h")
