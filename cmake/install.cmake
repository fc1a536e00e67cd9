# What `cmake --install` and the Debian package put where: the binary, the
# recorder's systemd unit, bash completion, manual pages and the docs.
include(GNUInstallDirs)

# Relative: under the install prefix, so that `cmake --install --prefix` and the
# package (prefix /usr) keep the unit beside the binary it starts.
set(IOTAPE_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE PATH
  "Where the systemd unit is installed (relative paths: under the install prefix)")

# Completion and manual pages come from the built binary's --help, so they
# follow its options.
set(iotape_completion ${CMAKE_BINARY_DIR}/iotape.bash-completion)
add_custom_command(OUTPUT ${iotape_completion}
  COMMAND ${CMAKE_SOURCE_DIR}/cmake/gen_completion.sh $<TARGET_FILE:iotape> ${iotape_completion}
  DEPENDS iotape ${CMAKE_SOURCE_DIR}/cmake/gen_completion.sh
  COMMENT "Generating bash completion from iotape --help")
set(iotape_man_dir ${CMAKE_BINARY_DIR}/man)
add_custom_command(OUTPUT ${iotape_man_dir}.stamp
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/cmake/gen_man.py $<TARGET_FILE:iotape> ${iotape_man_dir}
  COMMAND ${CMAKE_COMMAND} -E touch ${iotape_man_dir}.stamp
  DEPENDS iotape ${CMAKE_SOURCE_DIR}/cmake/gen_man.py
  COMMENT "Generating manual pages from iotape --help")
add_custom_target(iotape_help_files ALL DEPENDS ${iotape_completion} ${iotape_man_dir}.stamp)

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

install(FILES ${iotape_completion}
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME iotape)
install(DIRECTORY ${iotape_man_dir}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")

include(cmake/package.cmake)
