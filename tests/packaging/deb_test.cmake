# ctest packaging_deb: `cpack -G DEB` on the built tree, the packages unpacked with dpkg-deb -x
# into a temporary root (nothing is installed on this machine), then tests/consumer built against
# that copy twice, with find_package(privrace) and with pkg-config, and the packaged command and
# Python package run from it.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK=... -DVERSION=... -DCXX=... [-DPYTHON=...] -P deb_test.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/root ${WORK}/elsewhere)
run(cpack -G DEB -B ${WORK}/debs WORKING_DIRECTORY ${BUILD_DIR})
file(GLOB debs ${WORK}/debs/*.deb)
set(expected privrace libprivrace-dev)
if(PYTHON)
  list(APPEND expected python3-privrace)
endif()
foreach(name ${expected})
  if(NOT debs MATCHES "/${name}_${VERSION}-1_[a-z0-9]+\\.deb")
    message(FATAL_ERROR "cpack made no ${name}_${VERSION}-1_ARCH.deb: ${debs}")
  endif()
endforeach()
foreach(deb ${debs})
  run(dpkg-deb -x ${deb} ${WORK}/root)
  run(dpkg-deb -f ${deb} Package Depends)
  message(STATUS "${out}")
endforeach()
set(usr ${WORK}/root/usr)
foreach(f bin/privrace bin/privrace-audit lib/libprivrace_engine.a include/privrace/sketch/race_sketch.hpp
          lib/cmake/privrace/privraceConfig.cmake lib/pkgconfig/privrace.pc share/privrace/datasets/registry.json)
  if(NOT EXISTS ${usr}/${f})
    message(FATAL_ERROR "not in the packages: /usr/${f}")
  endif()
endforeach()

# The exported targets name libraries (targets), never a path of the machine that built them.
file(GLOB exported ${usr}/lib/cmake/privrace/privraceTargets*.cmake)
foreach(f ${exported})
  file(STRINGS ${f} lines REGEX "INTERFACE_LINK_LIBRARIES")
  if(lines MATCHES "/usr/lib|/lib/x86_64|\\.a[;\"]|\\.so")
    message(FATAL_ERROR "${f} links by path: ${lines}")
  endif()
endforeach()
file(READ ${usr}/lib/pkgconfig/privrace.pc pc)
if(NOT pc MATCHES "prefix=/usr\n")
  message(FATAL_ERROR "privrace.pc does not name /usr as its prefix:\n${pc}")
endif()

unset(ENV{PRIVRACE_HOME})
run(${usr}/bin/privrace --version WORKING_DIRECTORY ${WORK}/elsewhere)
if(NOT out MATCHES "^privrace ${VERSION} ")
  message(FATAL_ERROR "packaged privrace --version printed '${out}'")
endif()
if(PYTHON)
  file(GLOB pydirs ${usr}/lib/python3*/dist-packages)
  file(WRITE ${WORK}/elsewhere/check.py [[
import pathlib
import privrace
d = pathlib.Path(privrace.__file__).parent
assert (d / "py.typed").exists() and (d / "_core.pyi").exists(), d
print(privrace.__version__, d)
]])
  run(${CMAKE_COMMAND} -E env PYTHONPATH=${pydirs} PYTHONDONTWRITEBYTECODE=1 ${PYTHON} check.py
      WORKING_DIRECTORY ${WORK}/elsewhere)
  if(NOT out MATCHES "^${VERSION} ${usr}/")
    message(FATAL_ERROR "import privrace from the package: '${out}'")
  endif()
endif()

# tests/consumer with the CMake package of the unpacked copy.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK}/consumer -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${usr} -DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON -DCMAKE_CXX_COMPILER=${CXX})
run(${CMAKE_COMMAND} --build ${WORK}/consumer)
run(${WORK}/consumer/consumer)
message(STATUS "consumer (CMake package): ${out}")
file(STRINGS ${WORK}/consumer/CMakeCache.txt found REGEX "^privrace_DIR:")
if(NOT found MATCHES "${usr}/lib/cmake/privrace")
  message(FATAL_ERROR "the consumer did not use the unpacked package: ${found}")
endif()

# The same program with pkg-config (--define-prefix: the prefix is where the .pc file lies).
set(ENV{PKG_CONFIG_PATH} ${usr}/lib/pkgconfig)
run(pkg-config --define-prefix --cflags --libs privrace)
string(STRIP "${out}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
if(NOT flags MATCHES "-I${usr}/include")
  message(FATAL_ERROR "pkg-config --define-prefix gave ${flags}")
endif()
run(${CXX} -std=c++20 -O1 ${SOURCE_DIR}/tests/consumer/main.cpp ${flags} -o ${WORK}/consumer_pc)
run(${WORK}/consumer_pc)
message(STATUS "consumer (pkg-config): ${out}")
file(REMOVE_RECURSE ${WORK})
