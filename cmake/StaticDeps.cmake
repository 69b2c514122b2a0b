# Start-up of the command-line tools. Loading and relocating libcrypto, libstdc++, Boost and the
# compression libraries cost `privrace --version` about 5 of its 12 ms (docs/architecture.md,
# "Start-up"). An executable with the target property
# PRIVRACE_STATIC_DEPS links the static archives of those libraries, where Debian installs them,
# in the same place of its link line as the shared ones; every other consumer of the layers (the
# Python module, whose shared object cannot take Debian's non-PIC archives, the tests, an
# installed package's users) links the shared libraries as before.
option(PRIVRACE_STATIC_DEPS "link the command-line tools with static archives of their C and C++ dependencies" ON)

# privrace_dependency(OUT SHARED ARCHIVE INSTALLED): OUT is a link item: in the build tree SHARED
# (a target or a path) for ordinary consumers, the static archive libARCHIVE.a for
# PRIVRACE_STATIC_DEPS executables; in the exported targets (find_package(privrace) of an
# install) the target INSTALLED, which names the library and no path of this machine:
# ZLIB::ZLIB, OpenSSL::Crypto through find_dependency, privrace::mpfr, ::gmp, ::zstd made by
# privraceConfig.cmake (cmake/privraceConfig.cmake.in).
function(privrace_dependency out shared archive installed)
  set(item ${shared})
  if(PRIVRACE_STATIC_DEPS AND NOT PRIVRACE_FUZZ)
    find_library(PRIVRACE_ARCHIVE_${archive} NAMES lib${archive}.a)
    if(PRIVRACE_ARCHIVE_${archive})
      set(item "$<IF:$<BOOL:$<TARGET_PROPERTY:PRIVRACE_STATIC_DEPS>>,${PRIVRACE_ARCHIVE_${archive}},${shared}>")
    endif()
  endif()
  set(${out} "$<BUILD_INTERFACE:${item}>" "$<INSTALL_INTERFACE:${installed}>" PARENT_SCOPE)
endfunction()

# Marks a command-line executable. libstdc++ and libgcc go in statically too, except in the MPI
# build, whose C++ bindings bring the shared libstdc++ anyway (two copies in one process).
function(privrace_static_executable target)
  if(NOT PRIVRACE_STATIC_DEPS OR PRIVRACE_FUZZ)
    return()
  endif()
  set_target_properties(${target} PROPERTIES PRIVRACE_STATIC_DEPS ON)
  target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})  # libcrypto.a's dlopen
  if(NOT PRIVRACE_MPI AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
endfunction()

privrace_dependency(PRIVRACE_DEP_ZLIB ZLIB::ZLIB z ZLIB::ZLIB)
privrace_dependency(PRIVRACE_DEP_CRYPTO OpenSSL::Crypto crypto OpenSSL::Crypto)
privrace_dependency(PRIVRACE_DEP_MPFR "${MPFR_LIBRARY}" mpfr privrace::mpfr)
privrace_dependency(PRIVRACE_DEP_GMP "${GMP_LIBRARY}" gmp privrace::gmp)
privrace_dependency(PRIVRACE_DEP_ZSTD "${ZSTD_LIBRARY}" zstd privrace::zstd)
privrace_dependency(PRIVRACE_DEP_PROGRAM_OPTIONS Boost::program_options boost_program_options Boost::program_options)
