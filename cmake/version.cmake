# Writes the version header (app/version.hpp.in) with the commit of the source tree, at every
# build (the minimod_version target) and at configure time: a binary built after a commit or with
# uncommitted changes says so, since its commit goes into every output, bench JSON and resumed
# run's check. configure_file rewrites the header only when its text changes, so an unchanged
# commit rebuilds nothing.
#   cmake -DSOURCE_DIR=... -DINPUT=... -DOUTPUT=... -DPROJECT_VERSION=... [-DFIXED_COMMIT=...]
#         -P cmake/version.cmake
# FIXED_COMMIT (MINIMOD_GIT_COMMIT) names the commit of a tree copied without .git.
if(FIXED_COMMIT)
  set(MINIMOD_COMMIT "${FIXED_COMMIT}")
else()
  execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_VARIABLE MINIMOD_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rev_failed ERROR_QUIET)
  if(rev_failed)
    set(MINIMOD_COMMIT "")
  elseif(MINIMOD_COMMIT)
    # Tracked files changed since the commit: the binary is not that commit's. No optional locks,
    # so that a build never holds .git/index.lock against the user's own git commands.
    execute_process(COMMAND git --no-optional-locks status --porcelain --untracked-files=no
                    WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE changes ERROR_QUIET)
    if(changes)
      string(APPEND MINIMOD_COMMIT "-dirty")
    endif()
  endif()
endif()
if(NOT MINIMOD_COMMIT)
  set(MINIMOD_COMMIT "unknown")
endif()
configure_file("${INPUT}" "${OUTPUT}" @ONLY)
