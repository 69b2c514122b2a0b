# Writes the generated version.cpp with the commit being built (run at every build, not only at
# configure time, so records and sketch headers name the commit whose code made them).
# "-dirty" marks a build from a working tree with uncommitted changes to tracked files.
# configure_file leaves the file untouched when nothing changed, so nothing recompiles.
# Inputs: SOURCE_DIR, TEMPLATE, OUTPUT, PROJECT_VERSION.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE PRIVRACE_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT PRIVRACE_GIT_COMMIT)
  set(PRIVRACE_GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    string(APPEND PRIVRACE_GIT_COMMIT "-dirty")
  endif()
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
