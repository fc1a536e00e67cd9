# IOTAPE_STATIC=ON: the iotape executable depends on no shared library, not
# even the C library, so one file runs on any x86-64 Linux whatever its
# distribution and glibc (the kernel features each subcommand needs aside).
# Included before the dependencies are looked for: every find_library of
# this build then takes the static archive (lib*.a) that Debian's -dev
# packages ship, and fmt, which ships none, is used header-only.
# Tests and benchmarks built with it (IOTAPE_TESTS, IOTAPE_BENCH) link the
# same archives but stay dynamic executables.

set(CMAKE_FIND_LIBRARY_SUFFIXES .a)
set(Protobuf_USE_STATIC_LIBS ON)
set(OPENSSL_USE_STATIC_LIBS ON)
set(ZLIB_USE_STATIC_LIBS ON)

include(${CMAKE_CURRENT_LIST_DIR}/fmt_header_only.cmake)

# A static archive does not name the archives it needs (libbpf.a needs
# libelf.a, which needs libz.a; libcrypto.a needs libdl): pkg-config --static
# does. They go last on every link line (CMAKE_CXX_STANDARD_LIBRARIES), after
# the archives that need them.
find_package(PkgConfig REQUIRED)
pkg_check_modules(IOTAPE_STATIC_DEPS REQUIRED libbpf libelf liburing libzstd liblzma zlib libcrypto protobuf)
string(JOIN " " CMAKE_CXX_STANDARD_LIBRARIES ${CMAKE_CXX_STANDARD_LIBRARIES} ${IOTAPE_STATIC_DEPS_STATIC_LDFLAGS})

# iotape_link_static(TARGET): links the executable TARGET with -static.
function(iotape_link_static target)
  target_link_options(${target} PRIVATE -static)
endfunction()
