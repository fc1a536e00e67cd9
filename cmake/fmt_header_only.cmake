# fmt::fmt for static links: libfmt-dev ships no libfmt.a, so fmt's
# header-only mode (FMT_HEADER_ONLY) compiles the formatting code into each
# user instead.
find_path(IOTAPE_FMT_INCLUDE_DIR fmt/format.h REQUIRED)
add_library(fmt::fmt INTERFACE IMPORTED)
set_target_properties(fmt::fmt PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES ${IOTAPE_FMT_INCLUDE_DIR}
  INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
