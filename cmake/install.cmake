# What `cmake --install` puts where: the binary, the recorder's systemd unit
# and the docs.
include(GNUInstallDirs)

# Relative: under the install prefix, so that `cmake --install --prefix` and the
# package (prefix /usr) keep the unit beside the binary it starts.
set(IOTAPE_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE PATH
  "Where the systemd unit is installed (relative paths: under the install prefix)")

install(TARGETS iotape RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The unit starts the binary by its installed path, which only the install
# knows (--prefix, DESTDIR, CPack): it is filled in where it was installed.
install(FILES contrib/iotape-record.service.in
  DESTINATION ${IOTAPE_SYSTEMD_UNIT_DIR} RENAME iotape-record.service)
string(CONFIGURE [[
  set(CMAKE_INSTALL_FULL_BINDIR "@CMAKE_INSTALL_BINDIR@")
  set(unit "@IOTAPE_SYSTEMD_UNIT_DIR@/iotape-record.service")
  cmake_path(ABSOLUTE_PATH CMAKE_INSTALL_FULL_BINDIR BASE_DIRECTORY "${CMAKE_INSTALL_PREFIX}" NORMALIZE)
  cmake_path(ABSOLUTE_PATH unit BASE_DIRECTORY "${CMAKE_INSTALL_PREFIX}" NORMALIZE)
  file(READ "$ENV{DESTDIR}${unit}" text)
  string(CONFIGURE "${text}" text @ONLY)
  file(WRITE "$ENV{DESTDIR}${unit}" "${text}")
]] configure_unit @ONLY)
install(CODE "${configure_unit}")

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")
