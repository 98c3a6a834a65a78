# ncs_nccl.cmake - find the CUDA runtime and NCCL for the programs that run on GPUs (examples/,
# bench/ncs_perf). Defines the imported target ncs_nccl (nccl.h as a system include, so its
# `void f();` declarations do not trip -Werror) when both are found, else nothing.
#
#   -DNCCL_HOME=DIR   an NCCL with include/nccl.h and lib/libnccl.so[.2] (also $NCCL_HOME), e.g.
#                     Python's nvidia/nccl directory
if(NOT NCCL_HOME AND DEFINED ENV{NCCL_HOME})
  set(NCCL_HOME "$ENV{NCCL_HOME}")
endif()
set(NCCL_HOME "${NCCL_HOME}" CACHE PATH "NCCL installation: include/nccl.h and lib/libnccl.so" FORCE)
# a different NCCL_HOME than last time: search again
if(NOT "${NCCL_HOME}" STREQUAL "${NCS_NCCL_HOME_SEARCHED}")
  unset(NCS_NCCL_INCLUDE_DIR CACHE)
  unset(NCS_NCCL_LIBRARY CACHE)
  set(NCS_NCCL_HOME_SEARCHED "${NCCL_HOME}" CACHE INTERNAL "")
endif()

find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cudart)
  message(STATUS "ncclscope GPU programs: not built (CUDA toolkit with cudart not found; set CUDAToolkit_ROOT)")
  return()
endif()

set(_ncs_nccl_names nccl libnccl.so.2)
if(NCCL_HOME)
  # NCCL_HOME is authoritative: nothing else is looked at
  find_path(NCS_NCCL_INCLUDE_DIR nccl.h PATHS "${NCCL_HOME}/include" "${NCCL_HOME}" NO_DEFAULT_PATH)
  find_library(NCS_NCCL_LIBRARY NAMES ${_ncs_nccl_names}
               PATHS "${NCCL_HOME}/lib" "${NCCL_HOME}/lib64" "${NCCL_HOME}" NO_DEFAULT_PATH)
else()
  find_path(NCS_NCCL_INCLUDE_DIR nccl.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS}
            PATHS /usr/include /usr/local/include)
  find_library(NCS_NCCL_LIBRARY NAMES ${_ncs_nccl_names}
               HINTS ${CUDAToolkit_LIBRARY_DIR}
               PATHS /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib)
endif()
if(NOT NCS_NCCL_INCLUDE_DIR OR NOT NCS_NCCL_LIBRARY)
  message(STATUS "ncclscope GPU programs: not built (nccl.h or libnccl not found; set -DNCCL_HOME=DIR)")
  return()
endif()

file(STRINGS "${NCS_NCCL_INCLUDE_DIR}/nccl.h" _ncs_nccl_ver REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE "[^0-9;]" "" _ncs_nccl_ver "${_ncs_nccl_ver}")
string(REPLACE ";" "." _ncs_nccl_ver "${_ncs_nccl_ver}")
message(STATUS "ncclscope GPU programs: CUDA ${CUDAToolkit_VERSION}, NCCL ${_ncs_nccl_ver} "
               "(${NCS_NCCL_INCLUDE_DIR}, ${NCS_NCCL_LIBRARY})")

# an imported target: its include directory is a system one, so the warnings that -Werror turns
# into errors (nccl.h declares `void f();`) stay out of our build
add_library(ncs_nccl UNKNOWN IMPORTED)
set_target_properties(ncs_nccl PROPERTIES IMPORTED_LOCATION "${NCS_NCCL_LIBRARY}"
                                          INTERFACE_INCLUDE_DIRECTORIES "${NCS_NCCL_INCLUDE_DIR}")

