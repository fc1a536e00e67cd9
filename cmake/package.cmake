# The Debian package: `cpack -G DEB` in the build directory writes
# iotape_VERSION_ARCH.deb, which installs under /usr.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME iotape)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "record, import, inspect, replay and analyse block-I/O traces")
set(CPACK_PACKAGE_DESCRIPTION
  "One tool for what blktrace, btreplay, fio's replay, biosnoop and btt each do
in part: record the block IOs of a machine (eBPF), import other trace formats,
replay a trace onto devices or files with its timing and queue depth, and
report busy time, data rates and latency percentiles.")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "iotape developers <dev@iotape>" CACHE STRING
  "Maintainer field of the Debian package")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Depends from the libraries the binary links (dpkg-shlibdeps, in dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The build keeps debug information (RelWithDebInfo): stripped, the package
# is about 1 MB rather than 25.
set(CPACK_STRIP_FILES ON)
include(CPack)
