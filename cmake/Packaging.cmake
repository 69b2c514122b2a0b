# Debian packages of the install components (cmake/install.cmake), made in the build folder by
#   cpack -G DEB                      -> privrace_V-1_ARCH.deb, libprivrace-dev_..., python3-privrace_...
#   cpack -G DEB -B DIR               (the packages in DIR; the staging tree in DIR/_CPack_Packages)
# Files go under /usr. The shared-library dependencies of the commands and the Python module are
# computed by dpkg-shlibdeps (dpkg-dev); the development package depends on the -dev packages of
# what the exported targets and privrace.pc name. ctest packaging_deb builds tests/consumer
# against the unpacked packages.
set(CPACK_PACKAGE_NAME privrace)
set(CPACK_PACKAGE_VENDOR "privrace developers")
set(CPACK_PACKAGE_CONTACT "privrace developers <privrace@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "differentially private RACE sketches of kernel sums")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)  # install with DESTDIR and prefix /usr: privrace.pc names /usr, not the staging tree
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL commands dev)
if(PRIVRACE_PYTHON)
  list(APPEND CPACK_COMPONENTS_ALL python)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_COMMANDS_PACKAGE_NAME privrace)
set(CPACK_DEBIAN_COMMANDS_PACKAGE_SECTION science)
set(CPACK_COMPONENT_COMMANDS_DESCRIPTION
    "differentially private sketches: the privrace, privrace-audit and privrace-experiment commands")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libprivrace-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)  # static archives: the -dev packages below instead
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libeigen3-dev (>= 3.4), nlohmann-json3-dev, libssl-dev (>= 3), zlib1g-dev, libzstd-dev, libmpfr-dev, libgmp-dev, libnlopt-dev, libnlopt-cxx-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "pkg-config, cmake (>= 3.25)")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "differentially private sketches: C++20 library (static), headers, CMake package and privrace.pc")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-privrace)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
if(PRIVRACE_PYTHON)
  # The module is built for one Python minor version (its _core.cpython-3X-... name).
  execute_process(COMMAND ${PRIVRACE_PYTHON_EXECUTABLE} -c "import sys; print(sys.version_info[0], sys.version_info[1], sys.version_info[1] + 1)"
                  OUTPUT_VARIABLE privrace_pyver OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REPLACE " " ";" privrace_pyver "${privrace_pyver}")
  list(GET privrace_pyver 0 privrace_py_major)
  list(GET privrace_pyver 1 privrace_py_minor)
  list(GET privrace_pyver 2 privrace_py_next)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
      "python3 (>= ${privrace_py_major}.${privrace_py_minor}), python3 (<< ${privrace_py_major}.${privrace_py_next}), python3-numpy")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "python3-pandas, python3-dask, python3-distributed")
endif()
set(CPACK_COMPONENT_PYTHON_DESCRIPTION "differentially private sketches: the Python package privrace")

include(CPack)
