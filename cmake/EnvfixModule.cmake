# envfix_module(NAME SOURCES a.cpp b.cpp DEPS envfix_util ... [PUBLIC_LIBS ...])
# Each module is one static library; its link list is the enforced dependency direction.
function(envfix_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;LIBS" ${ARGN})
  if(NOT M_SOURCES)
    # A module with no code yet: keep the target so dependants can link it.
    add_library(envfix_${name} INTERFACE)
    target_include_directories(envfix_${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(envfix_${name} INTERFACE ${M_DEPS} ${M_LIBS})
    return()
  endif()
  add_library(envfix_${name} STATIC ${M_SOURCES})
  set_target_properties(envfix_${name} PROPERTIES UNITY_BUILD ${ENVFIX_UNITY})
  target_include_directories(envfix_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(envfix_${name} PUBLIC ${M_DEPS} ${M_LIBS})
  envfix_warnings(envfix_${name})
endfunction()

function(envfix_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wno-missing-field-initializers)
  # In a unity batch every file but the first reads as a header to GCC, so a class of one .cpp that
  # holds a type of that file's anonymous namespace is flagged; it is not shared with another file.
  if(ENVFIX_UNITY AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
  if(ENVFIX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# envfix_test(MODULE SOURCES ... DEPS ... LABELS ... [SPLIT file.cpp [SPLIT_AT n]] [COST c] [NO_UNITY]): one doctest
# binary per module, run by ctest. SPLIT: each label runs as two ctest tests, that source file's cases
# and the others', so that `ctest -j` (scripts/test.sh) is not held up by one long binary; SPLIT_AT n
# runs the file's cases as two tests more, its first n (in file order, doctest --first/--last) and the
# rest. COST: ctest starts costlier tests first; a clean clone has no timings of earlier runs, and
# without it the longest test would start last, in number order.
# Suites are named by subject under their label, TEST_SUITE("unit/probe/installed"): each label's ctest
# test runs the label's suites (--test-suite=unit/*), and one subject runs alone with its full name.
function(envfix_test module)
  cmake_parse_arguments(T "NO_UNITY" "SPLIT;SPLIT_AT;COST" "SOURCES;DEPS;LABELS" ${ARGN})
  set(t test_${module})
  add_executable(${t} ${T_SOURCES})
  # A test file whose file-local helpers share names with another's wraps what follows its #includes in a
  # namespace of its own (tests/apply/test_extensions.cpp: apply_extensions_test), so that both share a
  # unity batch. NO_UNITY builds a binary file by file all the same; no binary uses it now.
  if(ENVFIX_UNITY AND NOT T_NO_UNITY)
    set_target_properties(${t} PROPERTIES UNITY_BUILD ON)
  endif()
  target_link_libraries(${t} PRIVATE envfix_doctest_main ${T_DEPS})
  target_compile_definitions(${t} PRIVATE
    ENVFIX_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    ENVFIX_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures"
    ENVFIX_BINARY_DIR="${PROJECT_BINARY_DIR}")
  envfix_warnings(${t})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  foreach(label IN LISTS T_LABELS)
    set(names ${module}.${label})
    if(T_SPLIT AND T_SPLIT_AT)
      math(EXPR after "${T_SPLIT_AT} + 1")
      add_test(NAME ${module}.${label} COMMAND ${t} --test-suite=${label}/* --force-colors=0 --source-file=*${T_SPLIT}
        --first=1 --last=${T_SPLIT_AT})
      add_test(NAME ${module}.${label}-2 COMMAND ${t} --test-suite=${label}/* --force-colors=0 --source-file=*${T_SPLIT}
        --first=${after})
      add_test(NAME ${module}.${label}-rest COMMAND ${t} --test-suite=${label}/* --force-colors=0
        --source-file-exclude=*${T_SPLIT})
      list(APPEND names ${module}.${label}-2 ${module}.${label}-rest)
    elseif(T_SPLIT)
      add_test(NAME ${module}.${label} COMMAND ${t} --test-suite=${label}/* --force-colors=0 --source-file=*${T_SPLIT})
      add_test(NAME ${module}.${label}-rest COMMAND ${t} --test-suite=${label}/* --force-colors=0
        --source-file-exclude=*${T_SPLIT})
      list(APPEND names ${module}.${label}-rest)
    else()
      add_test(NAME ${module}.${label} COMMAND ${t} --test-suite=${label}/* --force-colors=0)
    endif()
    # envfix's messages in English whatever the developer's locale (i18n/: LC_MESSAGES=C wins over
    # LANG once LC_ALL and LANGUAGE are gone); the tests of other languages set their own.
    set_tests_properties(${names} PROPERTIES LABELS ${label} SKIP_RETURN_CODE 77
      ENVIRONMENT "ENVFIX_BIN=$<TARGET_FILE:envfix>"
      ENVIRONMENT_MODIFICATION "LC_ALL=unset:;LANGUAGE=unset:;LC_MESSAGES=set:C")
    if(T_COST)
      set_tests_properties(${names} PROPERTIES COST ${T_COST})
    endif()
  endforeach()
  # A case in no label's suite runs under no ctest test above (ten such once ran nowhere): this one
  # fails while the binary has any, naming them.
  set(suites ${T_LABELS})
  list(TRANSFORM suites APPEND "/*")
  list(JOIN suites "," excluded)
  add_test(NAME ${module}.suites COMMAND ${t} --list-test-cases --test-suite-exclude=${excluded} --no-version)
  set_tests_properties(${module}.suites PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "unskipped test cases passing the current filters: 0\n"
    FAIL_REGULAR_EXPRESSION "unskipped test cases passing the current filters: [1-9]")
endfunction()
