# `cmake --install BUILD --prefix P` lays out:
#   P/bin/privrace, privrace-experiment, privrace-audit
#   P/lib/libprivrace_{engine,ldp,tasks,baselines,audit}.a, P/include/privrace/**.hpp
#   P/lib/cmake/privrace/   find_package(privrace) -> imported targets privrace::engine, ::ldp,
#                           ::tasks, ::baselines, ::audit
#   P/lib/privrace/libprivrace_dp_wgan.so   DP-WGAN's libtorch module, loaded on first use
#   P/<PRIVRACE_PYTHON_INSTALL_DIR>/privrace/   the Python package (python/CMakeLists.txt)
#   P/share/privrace/datasets/registry.json, P/share/privrace/configs/   what the commands look up
#   P/lib/pkgconfig/privrace.pc   pkg-config --cflags --libs privrace
# Install components, one Debian package each (`cpack -G DEB` in the build folder, below):
#   commands  the three commands, DP-WGAN's module, share/privrace       -> privrace
#   dev       the layer archives, headers, CMake package, privrace.pc    -> libprivrace-dev
#   python    the Python package (python/CMakeLists.txt)                 -> python3-privrace
include(CMakePackageConfigHelpers)

foreach(layer engine ldp tasks baselines audit)
  set_target_properties(privrace_${layer} PROPERTIES EXPORT_NAME ${layer})
endforeach()
install(TARGETS privrace_engine privrace_ldp privrace_tasks privrace_baselines privrace_audit EXPORT privraceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/src/privrace DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
        FILES_MATCHING PATTERN "*.hpp")
install(TARGETS privrace_cli privrace_audit_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT commands)
if(TARGET privrace_experiment)
  install(TARGETS privrace_experiment RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT commands)
endif()
if(TARGET privrace_dp_wgan)
  install(TARGETS privrace_dp_wgan LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/privrace COMPONENT commands)
endif()

set(PRIVRACE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/privrace)
install(EXPORT privraceTargets NAMESPACE privrace:: DESTINATION ${PRIVRACE_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/privraceConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/privraceConfig.cmake INSTALL_DESTINATION ${PRIVRACE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/privraceConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/privraceConfig.cmake ${CMAKE_BINARY_DIR}/privraceConfigVersion.cmake
        DESTINATION ${PRIVRACE_CMAKE_DIR} COMPONENT dev)

# pkg-config: privrace.pc names the prefix it is installed under, so it is written at install
# time (`cmake --install --prefix P`, and cpack's /usr); the version and directories come from here.
configure_file(${CMAKE_SOURCE_DIR}/cmake/privrace.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/privrace.pc.in @ONLY)
install(CODE "
  file(READ \"${CMAKE_BINARY_DIR}/pkgconfig/privrace.pc.in\" privrace_pc)
  string(REPLACE \"%PREFIX%\" \"\${CMAKE_INSTALL_PREFIX}\" privrace_pc \"\${privrace_pc}\")
  set(privrace_pc_file \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/privrace.pc\")
  message(STATUS \"Installing: \$ENV{DESTDIR}\${privrace_pc_file}\")
  file(WRITE \"\$ENV{DESTDIR}\${privrace_pc_file}\" \"\${privrace_pc}\")
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${privrace_pc_file}\")" COMPONENT dev)

# The registry and the shipped configs: found by the installed commands through
# <prefix>/share/privrace (experiments/data/home.hpp). Data sets themselves are never installed.
install(FILES ${CMAKE_SOURCE_DIR}/datasets/registry.json DESTINATION ${CMAKE_INSTALL_DATADIR}/privrace/datasets
        COMPONENT commands)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/configs DESTINATION ${CMAKE_INSTALL_DATADIR}/privrace COMPONENT commands
        FILES_MATCHING PATTERN "*.json" PATTERN "*.md")

# ctest install_consumer: `cmake --install` into a temporary prefix outside the checkout, a
# find_package(privrace) consumer project built against it, the installed commands' --version
# and registry lookup, and `import privrace` from the installed Python package.
# (Not in sanitizer builds: the consumer is built without the sanitizer runtime.)
if(PRIVRACE_TESTS AND PRIVRACE_SANITIZE STREQUAL "" AND NOT PRIVRACE_FUZZ)
  string(MD5 privrace_build_hash ${CMAKE_BINARY_DIR})
  set(privrace_python_check "")
  if(PRIVRACE_PYTHON)
    set(privrace_python_check -DPYTHON=${PRIVRACE_PYTHON_EXECUTABLE} -DPYTHON_DIR=${PRIVRACE_PYTHON_INSTALL_DIR})
  endif()
  add_test(NAME install_consumer
           COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
                   -DWORK=/tmp/privrace-install-${privrace_build_hash} -DVERSION=${PROJECT_VERSION}
                   -DCXX=${CMAKE_CXX_COMPILER} ${privrace_python_check} -P ${CMAKE_SOURCE_DIR}/tests/install_test.cmake)
  set_tests_properties(install_consumer PROPERTIES TIMEOUT 300 LABELS integration RESOURCE_LOCK privrace_install)

  # ctest packaging_deb (tests/packaging/deb_test.cmake): cpack -G DEB on this built tree, the
  # .debs unpacked with dpkg-deb -x, tests/consumer built against them with find_package and with
  # pkg-config. Needs dpkg-dev (dpkg-shlibdeps) and pkg-config.
  find_program(PRIVRACE_DPKG_SHLIBDEPS dpkg-shlibdeps)
  find_program(PRIVRACE_PKG_CONFIG NAMES pkg-config pkgconf)
  if(PRIVRACE_DPKG_SHLIBDEPS AND PRIVRACE_PKG_CONFIG)
    add_test(NAME packaging_deb
             COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
                     -DWORK=/tmp/privrace-deb-${privrace_build_hash} -DVERSION=${PROJECT_VERSION}
                     -DCXX=${CMAKE_CXX_COMPILER} ${privrace_python_check} -P ${CMAKE_SOURCE_DIR}/tests/packaging/deb_test.cmake)
    set_tests_properties(packaging_deb PROPERTIES TIMEOUT 300 LABELS "integration;packaging"
                         RESOURCE_LOCK privrace_install)
  endif()
  # ctest packaging_wheel (tests/packaging/wheel_test.sh): a wheel from this built tree
  # (PRIVRACE_CMAKE_BUILD_DIR), installed into a venv, a sketch fitted outside the source tree.
  if(PRIVRACE_PYTHON)
    add_test(NAME packaging_wheel
             COMMAND ${CMAKE_SOURCE_DIR}/tests/packaging/wheel_test.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                     ${PRIVRACE_PYTHON_EXECUTABLE} /tmp/privrace-wheel-${privrace_build_hash})
    set_tests_properties(packaging_wheel PROPERTIES TIMEOUT 300 LABELS "integration;packaging;python"
                         SKIP_RETURN_CODE 77 RESOURCE_LOCK privrace_install)
  endif()
endif()
