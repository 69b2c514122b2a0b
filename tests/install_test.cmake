# ctest install_consumer: installs the build into a fresh prefix, builds tests/consumer against
# it with find_package(privrace), runs it, and runs the installed commands from a directory
# outside any checkout, where the registry can only come from PREFIX/share/privrace.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK=... -P tests/install_test.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/elsewhere)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f bin/privrace bin/privrace-experiment bin/privrace-audit lib/libprivrace_engine.a
          include/privrace/sketch/race_sketch.hpp lib/cmake/privrace/privraceConfig.cmake
          share/privrace/datasets/registry.json share/privrace/configs/kde_skin.json)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()

# The commands, run from a directory that is no checkout, with no PRIVRACE_HOME.
unset(ENV{PRIVRACE_HOME})
execute_process(COMMAND ${prefix}/bin/privrace --version WORKING_DIRECTORY ${WORK}/elsewhere
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^privrace ${VERSION} ")
  message(FATAL_ERROR "privrace --version printed '${out}' (exit ${rc}), expected 'privrace ${VERSION} ...'")
endif()
execute_process(COMMAND ${prefix}/bin/privrace-experiment --version WORKING_DIRECTORY ${WORK}/elsewhere
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^privrace-experiment ${VERSION} ")
  message(FATAL_ERROR "privrace-experiment --version printed '${out}' (exit ${rc})")
endif()
execute_process(COMMAND ${prefix}/bin/privrace-experiment --which-registry WORKING_DIRECTORY ${WORK}/elsewhere
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REAL_PATH ${prefix}/share/privrace/datasets/registry.json expected)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "${expected} (install)\n")
  message(FATAL_ERROR "installed privrace-experiment --which-registry printed '${out}${err}' (exit ${rc}), "
                      "expected '${expected} (install)'")
endif()
# A copy of the command elsewhere finds the registry through PRIVRACE_HOME.
set(ENV{PRIVRACE_HOME} ${prefix}/share/privrace)
file(COPY ${prefix}/bin/privrace-experiment DESTINATION ${WORK}/elsewhere)
execute_process(COMMAND ${WORK}/elsewhere/privrace-experiment --which-registry WORKING_DIRECTORY ${WORK}/elsewhere
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "registry.json \\(PRIVRACE_HOME\\)\n$")
  message(FATAL_ERROR "copied privrace-experiment with PRIVRACE_HOME printed '${out}${err}' (exit ${rc})")
endif()
unset(ENV{PRIVRACE_HOME})

# The installed Python package, imported from outside the checkout.
if(PYTHON)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${prefix}/${PYTHON_DIR} PYTHONDONTWRITEBYTECODE=1
                          ${PYTHON} -c "import privrace; print(privrace.__version__, privrace.__file__)"
                  WORKING_DIRECTORY ${WORK}/elsewhere RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "^${VERSION} ${prefix}/")
    message(FATAL_ERROR "import privrace from ${prefix}/${PYTHON_DIR}: '${out}${err}' (exit ${rc})")
  endif()
endif()

# A downstream CMake project.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK}/consumer -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX})
run(${CMAKE_COMMAND} --build ${WORK}/consumer)
run(${WORK}/consumer/consumer)
message(STATUS "consumer: ${out}")
file(REMOVE_RECURSE ${WORK})
