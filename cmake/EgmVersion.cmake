# Bakes the git commit and project version into a generated header that every
# run row and checkpoint records, and the source modification of a dirty tree
# into a generated unit of egm_util (util/source_state.h). Re-run at build time
# so a new commit or edit shows up without re-configuring.
set(EGM_VERSION_HEADER "${CMAKE_BINARY_DIR}/generated/egm/version_info.h")
set(EGM_SOURCE_STATE_CPP "${CMAKE_BINARY_DIR}/generated/egm/source_state.cpp")
add_custom_target(egm_version_header
  COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
    -DOUTPUT=${EGM_VERSION_HEADER}
    -DSOURCE_OUTPUT=${EGM_SOURCE_STATE_CPP}
    -DEGM_VERSION=${PROJECT_VERSION}
    -P ${CMAKE_SOURCE_DIR}/cmake/WriteVersionHeader.cmake
  BYPRODUCTS ${EGM_VERSION_HEADER} ${EGM_SOURCE_STATE_CPP}
  COMMENT "Recording the git commit and source state")
