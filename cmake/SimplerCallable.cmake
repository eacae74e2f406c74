# simpler_add_callable: build an orchestration and its kernels as shared
# objects and pack them into one callable blob with `simpler pack`.
#
#   simpler_add_callable(<name>
#       ORCHESTRATION <source.c> [ENTRY <symbol>] [CONFIG <symbol>]
#       [KERNEL <func_id> <aic|aiv> <source.c> <entry> [SIG <signature>]]...)
#
# ENTRY defaults to "orchestration"; CONFIG (the SP_ORCH_CONFIG function) is
# optional. Each KERNEL names a func_id (>= 0, unique), the core type, the
# source defining the SP_KERNEL and its symbol, and optionally the argument
# signature (one of i o x e n s per argument; see simpler/callable.h).
# Kernels that share a source share one shared object.
#
# Produces ${CMAKE_CURRENT_BINARY_DIR}/<name>.spc, built by the custom target
# <name> (part of ALL). Its path is in the variable <name>_CALLABLE_FILE and
# in the target property SIMPLER_CALLABLE_FILE; the shared-object targets are
# in SIMPLER_CALLABLE_ORCH_TARGET and SIMPLER_CALLABLE_KERNEL_TARGETS (add
# include directories or definitions to them as to any library).
#
# Outside the simpler tree, set SIMPLER_INCLUDE_DIR and SIMPLER_EXECUTABLE if
# they are not found next to this file / on PATH.
#
# Example:
#   simpler_add_callable(vector_add ORCHESTRATION orch.c ENTRY build_graph
#                        KERNEL 0 aiv add.c kernel_add SIG iio)

set(_SIMPLER_CALLABLE_LIST_DIR ${CMAKE_CURRENT_LIST_DIR})

function(_simpler_callable_module name source out_dir include_dir)
  add_library(${name} MODULE ${source})
  target_include_directories(${name} PRIVATE ${include_dir})
  # Hidden by default: SP_KERNEL / SP_ORCHESTRATION export their symbols.
  set_target_properties(${name} PROPERTIES
    PREFIX "" OUTPUT_NAME ${name} LIBRARY_OUTPUT_DIRECTORY ${out_dir}
    C_STANDARD 11 C_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ON)
endfunction()

function(simpler_add_callable name)
  set(orch_source "")
  set(orch_entry "orchestration")
  set(orch_config "")
  set(kernel_args "")
  set(kernel_targets "")
  set(kernel_ids "")
  set(sources_seen "")

  # Where the public headers and the `simpler` command are.
  if(DEFINED SIMPLER_INCLUDE_DIR)
    set(include_dir ${SIMPLER_INCLUDE_DIR})
  elseif(EXISTS ${_SIMPLER_CALLABLE_LIST_DIR}/../include/simpler/kernel.h)
    get_filename_component(include_dir ${_SIMPLER_CALLABLE_LIST_DIR}/../include ABSOLUTE)
  else() # installed: <prefix>/lib/cmake/simpler/SimplerCallable.cmake
    get_filename_component(include_dir ${_SIMPLER_CALLABLE_LIST_DIR}/../../../include ABSOLUTE)
  endif()
  if(TARGET simpler)
    set(pack_exe $<TARGET_FILE:simpler>)
    set(pack_dep simpler)
  else()
    if(NOT SIMPLER_EXECUTABLE)
      find_program(SIMPLER_EXECUTABLE simpler REQUIRED)
    endif()
    set(pack_exe ${SIMPLER_EXECUTABLE})
    set(pack_dep "")
  endif()
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${name}_modules)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${name}.spc)

  list(LENGTH ARGN argc)
  set(i 0)
  while(i LESS argc)
    list(GET ARGN ${i} word)
    math(EXPR i "${i} + 1")
    if(word STREQUAL "ORCHESTRATION" OR word STREQUAL "ENTRY" OR word STREQUAL "CONFIG")
      if(NOT i LESS argc)
        message(FATAL_ERROR "simpler_add_callable(${name}): ${word} needs a value")
      endif()
      list(GET ARGN ${i} value)
      math(EXPR i "${i} + 1")
      if(word STREQUAL "ORCHESTRATION")
        set(orch_source ${value})
      elseif(word STREQUAL "ENTRY")
        set(orch_entry ${value})
      else()
        set(orch_config ${value})
      endif()
    elseif(word STREQUAL "KERNEL")
      math(EXPR last "${i} + 3")
      if(NOT last LESS argc)
        message(FATAL_ERROR "simpler_add_callable(${name}): KERNEL needs <func_id> <aic|aiv> <source.c> <entry>")
      endif()
      list(SUBLIST ARGN ${i} 4 group)
      list(GET group 0 func_id)
      list(GET group 1 core)
      list(GET group 2 source)
      list(GET group 3 entry)
      math(EXPR i "${i} + 4")
      set(sig "")
      set(has_sig FALSE)
      if(i LESS argc)
        list(GET ARGN ${i} maybe_sig)
        if(maybe_sig STREQUAL "SIG")
          math(EXPR i "${i} + 1")
          if(NOT i LESS argc)
            message(FATAL_ERROR "simpler_add_callable(${name}): SIG needs a value (kernel ${func_id})")
          endif()
          list(GET ARGN ${i} sig)
          math(EXPR i "${i} + 1")
          set(has_sig TRUE)
        endif()
      endif()
      if(NOT func_id MATCHES "^[0-9]+$")
        message(FATAL_ERROR "simpler_add_callable(${name}): func_id '${func_id}' is not a number >= 0")
      endif()
      if(NOT core MATCHES "^(aic|aiv)$")
        message(FATAL_ERROR "simpler_add_callable(${name}): kernel ${func_id} core type '${core}' is not aic or aiv")
      endif()
      if(func_id IN_LIST kernel_ids)
        message(FATAL_ERROR "simpler_add_callable(${name}): func_id ${func_id} is given twice")
      endif()
      list(APPEND kernel_ids ${func_id})
      # One shared object per source, however many kernels it defines.
      get_filename_component(abs ${source} ABSOLUTE)
      list(FIND sources_seen ${abs} seen)
      if(seen EQUAL -1)
        list(LENGTH sources_seen seen)
        list(APPEND sources_seen ${abs})
        get_filename_component(base ${source} NAME_WE)
        string(MAKE_C_IDENTIFIER "${name}_k${seen}_${base}" target)
        _simpler_callable_module(${target} ${abs} ${out_dir} ${include_dir})
        list(APPEND kernel_targets ${target})
      else()
        list(GET kernel_targets ${seen} target)
      endif()
      set(spec "${func_id}:${core}:$<TARGET_FILE:${target}>:${entry}")
      if(has_sig)
        string(APPEND spec ":${sig}")
      endif()
      list(APPEND kernel_args --kernel "${spec}")
    else()
      message(FATAL_ERROR "simpler_add_callable(${name}): unexpected argument '${word}' (expected ORCHESTRATION, ENTRY, CONFIG or KERNEL)")
    endif()
  endwhile()

  if(NOT orch_source)
    message(FATAL_ERROR "simpler_add_callable(${name}): ORCHESTRATION <source.c> is required")
  endif()
  string(MAKE_C_IDENTIFIER "${name}_orch" orch_target)
  get_filename_component(orch_abs ${orch_source} ABSOLUTE)
  _simpler_callable_module(${orch_target} ${orch_abs} ${out_dir} ${include_dir})
  set(config_args "")
  if(orch_config)
    set(config_args --config ${orch_config})
  endif()

  add_custom_command(
    OUTPUT ${out}
    COMMAND ${pack_exe} pack -o ${out} --orch $<TARGET_FILE:${orch_target}> --entry ${orch_entry}
            ${config_args} ${kernel_args}
    DEPENDS ${orch_target} ${kernel_targets} ${pack_dep}
    COMMENT "Packing callable ${name}"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${out})
  set_target_properties(${name} PROPERTIES
    SIMPLER_CALLABLE_FILE ${out}
    SIMPLER_CALLABLE_ORCH_TARGET ${orch_target}
    SIMPLER_CALLABLE_KERNEL_TARGETS "${kernel_targets}")
  set(${name}_CALLABLE_FILE ${out} PARENT_SCOPE)
endfunction()
