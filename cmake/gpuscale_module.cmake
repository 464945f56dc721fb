# gpuscale_module(NAME [DEPS targets...] [PRIVATE_DEPS targets...])
# One static library per domain module (one CMake target per component, as prometheus-cpp
# does), built from every *.cc in the module folder except *_test.cc, *_fuzz.cc and *_main.cc.
# Tests (*_test.cc) become one GoogleTest executable `<name>_test` registered with CTest.
# Third-party libraries go in PRIVATE_DEPS so that the pure core cannot include them.
#
# Include paths are per module, so the build enforces the layering: a module's headers are
# reachable only through its own include root, build/include/<name>/, which holds one link
# `<name>` -> src/<name>. A target sees its own root and the roots of what it links (DEPS
# propagate to dependants, PRIVATE_DEPS do not), so `#include "net/http_get.h"` in a module
# that does not link gpuscale_net fails to compile instead of only failing a review.
function(gpuscale_include_root target name dir)
  set(root ${PROJECT_BINARY_DIR}/include/${name})
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${dir} ${root}/${name} SYMBOLIC)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE ${root})
  else()
    target_include_directories(${target} PUBLIC ${root})
  endif()
endfunction()

function(gpuscale_module name)
  cmake_parse_arguments(ARG "" "" "DEPS;PRIVATE_DEPS;TEST_DEPS" ${ARGN})
  file(GLOB all_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  set(sources)
  set(tests)
  foreach(src ${all_sources})
    if(src MATCHES "_test\\.cc$")
      list(APPEND tests ${src})
    elseif(NOT src MATCHES "_(fuzz|main)\\.cc$")
      list(APPEND sources ${src})
    endif()
  endforeach()
  if(sources)
    add_library(gpuscale_${name} STATIC ${sources})
    target_link_libraries(gpuscale_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  else()
    # A header-only (or not yet populated) module.
    add_library(gpuscale_${name} INTERFACE)
    target_link_libraries(gpuscale_${name} INTERFACE ${ARG_DEPS})
  endif()
  gpuscale_include_root(gpuscale_${name} ${name} ${CMAKE_CURRENT_SOURCE_DIR})
  if(tests)
    gpuscale_test(${name}_test SOURCES ${tests}
                  DEPS gpuscale_${name} ${ARG_PRIVATE_DEPS} ${ARG_TEST_DEPS})
  endif()
endfunction()

# gpuscale_test(NAME SOURCES a_test.cc DEPS targets...)
# A GoogleTest executable registered with CTest. Tests run with the project root as working
# directory, so relative paths such as data/traces resolve as documented.
function(gpuscale_test name)
  if(NOT GPUSCALE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} gpuscale_testing
                        GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    GPUSCALE_DATA_DIR="${GPUSCALE_DATA_DIR}"
    GPUSCALE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    GPUSCALE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  # Test code itself is compiled without optimization: gtest's macros make -O2 cost more than
  # twice -O0 per file (requirements_test.cc: 6.4 s vs 2.8 s), and test code is not what we
  # time. The code under test keeps the tree's flags (it lives in the module libraries).
  target_compile_options(${name} PRIVATE -O0)
  if(CMAKE_CXX_FLAGS MATCHES "sanitize=thread")
    # Orders cpp-httplib's lazily built statics before the tests' threads (see the file).
    set(warmup ${PROJECT_SOURCE_DIR}/src/testing/httplib_tsan_warmup.cc)
    target_sources(${name} PRIVATE ${warmup})
    set_source_files_properties(${warmup} TARGET_DIRECTORY ${name}
                                PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    target_link_libraries(${name} PRIVATE PkgConfig::HTTPLIB)
  endif()
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
endfunction()
