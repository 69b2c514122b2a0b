# `cmake --install BUILD --prefix P` lays out:
#   P/bin/privrace, privrace-experiment, privrace-audit
#   P/lib/libprivrace_{engine,ldp,tasks,baselines,audit}.a, P/include/privrace/**.hpp
#   P/lib/cmake/privrace/   find_package(privrace) -> imported targets privrace::engine, ::ldp,
#                           ::tasks, ::baselines, ::audit
#   P/lib/privrace/libprivrace_dp_wgan.so   DP-WGAN's libtorch module, loaded on first use
#   P/<PRIVRACE_PYTHON_INSTALL_DIR>/privrace/   the Python package (python/CMakeLists.txt)
#   P/share/privrace/datasets/registry.json, P/share/privrace/configs/   what the commands look up
include(CMakePackageConfigHelpers)

foreach(layer engine ldp tasks baselines audit)
  set_target_properties(privrace_${layer} PROPERTIES EXPORT_NAME ${layer})
endforeach()
install(TARGETS privrace_engine privrace_ldp privrace_tasks privrace_baselines privrace_audit EXPORT privraceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/src/privrace DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(TARGETS privrace_cli privrace_audit_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET privrace_experiment)
  install(TARGETS privrace_experiment RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET privrace_dp_wgan)
  install(TARGETS privrace_dp_wgan LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/privrace)
endif()

set(PRIVRACE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/privrace)
install(EXPORT privraceTargets NAMESPACE privrace:: DESTINATION ${PRIVRACE_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/privraceConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/privraceConfig.cmake INSTALL_DESTINATION ${PRIVRACE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/privraceConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/privraceConfig.cmake ${CMAKE_BINARY_DIR}/privraceConfigVersion.cmake
        DESTINATION ${PRIVRACE_CMAKE_DIR})

# The registry and the shipped configs: found by the installed commands through
# <prefix>/share/privrace (experiments/data/home.hpp). Data sets themselves are never installed.
install(FILES ${CMAKE_SOURCE_DIR}/datasets/registry.json DESTINATION ${CMAKE_INSTALL_DATADIR}/privrace/datasets)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/configs DESTINATION ${CMAKE_INSTALL_DATADIR}/privrace
        FILES_MATCHING PATTERN "*.json" PATTERN "*.md")

# ctest install_consumer: `cmake --install` into a temporary prefix outside the checkout, a
# find_package(privrace) consumer project built against it, the installed commands' --version
# and registry lookup, and `import privrace` from the installed Python package.
# (Not in sanitizer builds: the consumer is built without the sanitizer runtime.)
if(PRIVRACE_TESTS AND PRIVRACE_SANITIZE STREQUAL "" AND NOT PRIVRACE_FUZZ)
  string(MD5 privrace_build_hash ${CMAKE_BINARY_DIR})
  set(privrace_python_check "")
  if(PRIVRACE_PYTHON)
    set(privrace_python_check -DPYTHON=${Python_EXECUTABLE} -DPYTHON_DIR=${PRIVRACE_PYTHON_INSTALL_DIR})
  endif()
  add_test(NAME install_consumer
           COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
                   -DWORK=/tmp/privrace-install-${privrace_build_hash} -DVERSION=${PROJECT_VERSION}
                   -DCXX=${CMAKE_CXX_COMPILER} ${privrace_python_check} -P ${CMAKE_SOURCE_DIR}/tests/install_test.cmake)
  set_tests_properties(install_consumer PROPERTIES TIMEOUT 300 LABELS integration)
endif()
