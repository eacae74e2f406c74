# simpler_add_callable: build an orchestration and its kernels as shared
# objects and pack them into one callable blob with `simpler pack`.
#
#   simpler_add_callable(<name>
#       ORCHESTRATION <source.c> [ENTRY <symbol>] [CONFIG <symbol>]
#       [SIGNATURE "<argument signature>"]
#       [KERNEL <kname> <aic|aiv> <source.c> [ENTRY <symbol>] [SIG <signature>]]...
#       [KERNEL <func_id> <aic|aiv> <source.c> <entry> [SIG <signature>]]...)
#
# ENTRY defaults to "orchestration"; CONFIG (the SP_ORCH_CONFIG function) is
# optional. SIGNATURE declares the orchestration's arguments (the text form
# of simpler/callable.h: "x:in:f32[n],y:in:f32[n],z:out:f32[n],tile:scalar"):
# it is packed into the callable, and every run is checked against it.
#
# Kernels are named once. `KERNEL <kname> <core> <source.c>` names a kernel:
# its SP_KERNEL symbol is <kname> unless ENTRY gives another, and its func_id
# is its position among the KERNEL lines (0, 1, ...). The older
# `KERNEL <func_id> <core> <source.c> <entry>` gives the number by hand and
# still works. SIG is the kernel's argument signature (one of i o x e n s per
# argument; see simpler/callable.h). Kernels that share a source share one
# shared object.
#
# Before the orchestration compiles, `simpler pack --header` writes
# ${CMAKE_CURRENT_BINARY_DIR}/<name>_kernels.h, on the orchestration's
# include path:
#   #define SP_FUNC_<kname> <func_id>      one per kernel
#   #define SP_ARG_<arg> <index>           one per SIGNATURE tensor
#   #define SP_SCALAR_<arg> <index>        one per SIGNATURE scalar
# so the orchestration writes sp_task_aiv(SP_FUNC_kernel_add) and
# args->tensors[SP_ARG_x], and the numbers live only in this call.
#
# Produces ${CMAKE_CURRENT_BINARY_DIR}/<name>.spc, built by the custom target
# <name> (part of ALL). Its path is in the variable <name>_CALLABLE_FILE and
# in the target property SIMPLER_CALLABLE_FILE, the header's in
# <name>_KERNELS_HEADER and SIMPLER_CALLABLE_HEADER; the shared-object
# targets are in SIMPLER_CALLABLE_ORCH_TARGET and
# SIMPLER_CALLABLE_KERNEL_TARGETS (add include directories or definitions to
# them as to any library).
#
# Outside the simpler tree, set SIMPLER_INCLUDE_DIR and SIMPLER_EXECUTABLE if
# they are not found next to this file / on PATH.
#
# Example:
#   simpler_add_callable(vector_add ORCHESTRATION orch.c ENTRY build_graph
#                        SIGNATURE "x:in:f32[n],y:in:f32[n],z:out:f32[n]"
#                        KERNEL kernel_add aiv add.c SIG iio)
#   // orch.c
#   #include "vector_add_kernels.h"
#   sp_tensor x = args->tensors[SP_ARG_x];
#   sp_task t = sp_task_aiv(SP_FUNC_kernel_add);
#   sp_task_in(&t, &x);

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
  set(kernel_names "")
  set(header_args "")
  set(orch_args "")
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
  set(header ${CMAKE_CURRENT_BINARY_DIR}/${name}_kernels.h)

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
    elseif(word STREQUAL "SIGNATURE")
      if(NOT i LESS argc)
        message(FATAL_ERROR "simpler_add_callable(${name}): SIGNATURE needs a value")
      endif()
      list(GET ARGN ${i} orch_args)
      math(EXPR i "${i} + 1")
    elseif(word STREQUAL "KERNEL")
      math(EXPR last "${i} + 2")
      if(NOT last LESS argc)
        message(FATAL_ERROR "simpler_add_callable(${name}): KERNEL needs <name> <aic|aiv> <source.c> (or <func_id> <aic|aiv> <source.c> <entry>)")
      endif()
      list(SUBLIST ARGN ${i} 3 group)
      list(GET group 0 first)
      list(GET group 1 core)
      list(GET group 2 source)
      math(EXPR i "${i} + 3")
      list(LENGTH kernel_names position)
      if(first MATCHES "^[0-9]+$")
        # The numeric form: <func_id> <core> <source> <entry>.
        if(NOT i LESS argc)
          message(FATAL_ERROR "simpler_add_callable(${name}): KERNEL ${first} needs <entry> after its source")
        endif()
        set(func_id ${first})
        list(GET ARGN ${i} entry)
        math(EXPR i "${i} + 1")
        set(kname ${entry})
      elseif(first MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
        # The named form: func_id by position, entry = name unless ENTRY.
        set(func_id ${position})
        set(kname ${first})
        set(entry ${first})
        if(i LESS argc)
          list(GET ARGN ${i} maybe)
          if(maybe STREQUAL "ENTRY")
            math(EXPR i "${i} + 1")
            if(NOT i LESS argc)
              message(FATAL_ERROR "simpler_add_callable(${name}): ENTRY needs a value (kernel ${kname})")
            endif()
            list(GET ARGN ${i} entry)
            math(EXPR i "${i} + 1")
          endif()
        endif()
      else()
        message(FATAL_ERROR "simpler_add_callable(${name}): KERNEL '${first}' is neither a kernel name (a C identifier) nor a func_id (a number >= 0)")
      endif()
      set(sig "")
      set(has_sig FALSE)
      if(i LESS argc)
        list(GET ARGN ${i} maybe_sig)
        if(maybe_sig STREQUAL "SIG")
          math(EXPR i "${i} + 1")
          if(NOT i LESS argc)
            message(FATAL_ERROR "simpler_add_callable(${name}): SIG needs a value (kernel ${kname})")
          endif()
          list(GET ARGN ${i} sig)
          math(EXPR i "${i} + 1")
          set(has_sig TRUE)
        endif()
      endif()
      if(NOT core MATCHES "^(aic|aiv)$")
        message(FATAL_ERROR "simpler_add_callable(${name}): kernel ${kname} core type '${core}' is not aic or aiv")
      endif()
      if(func_id IN_LIST kernel_ids)
        message(FATAL_ERROR "simpler_add_callable(${name}): func_id ${func_id} is given twice (kernel ${kname}; a named kernel takes its position among the KERNEL lines)")
      endif()
      set(in_header TRUE)
      if(kname IN_LIST kernel_names)
        if(NOT first MATCHES "^[0-9]+$")
          message(FATAL_ERROR "simpler_add_callable(${name}): kernel name ${kname} is given twice")
        endif()
        # The numeric form may pack one entry under two func_ids: the
        # header names the first.
        set(in_header FALSE)
      endif()
      list(APPEND kernel_ids ${func_id})
      list(APPEND kernel_names ${kname})
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
      # The header names the kernel; no shared object is read for it.
      if(in_header)
        list(APPEND header_args --kernel "${func_id}:${core}:-:${kname}")
      endif()
    else()
      message(FATAL_ERROR "simpler_add_callable(${name}): unexpected argument '${word}' (expected ORCHESTRATION, ENTRY, CONFIG, SIGNATURE or KERNEL)")
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
  set(args_args "")
  if(NOT orch_args STREQUAL "")
    set(args_args --args "${orch_args}")
  endif()

  # The kernels' and arguments' names, written before the orchestration
  # compiles (it is one of its sources, so the build orders it first).
  add_custom_command(
    OUTPUT ${header}
    COMMAND ${pack_exe} pack --header ${header} ${header_args} ${args_args}
    DEPENDS ${pack_dep}
    COMMENT "Naming the kernels of ${name} (${name}_kernels.h)"
    VERBATIM)
  target_sources(${orch_target} PRIVATE ${header})
  target_include_directories(${orch_target} PRIVATE ${CMAKE_CURRENT_BINARY_DIR})

  add_custom_command(
    OUTPUT ${out}
    COMMAND ${pack_exe} pack -o ${out} --orch $<TARGET_FILE:${orch_target}> --entry ${orch_entry}
            ${config_args} ${args_args} ${kernel_args}
    DEPENDS ${orch_target} ${kernel_targets} ${pack_dep}
    COMMENT "Packing callable ${name}"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${out})
  set_target_properties(${name} PROPERTIES
    SIMPLER_CALLABLE_HEADER ${header}
    SIMPLER_CALLABLE_FILE ${out}
    SIMPLER_CALLABLE_ORCH_TARGET ${orch_target}
    SIMPLER_CALLABLE_KERNEL_TARGETS "${kernel_targets}")
  set(${name}_CALLABLE_FILE ${out} PARENT_SCOPE)
  set(${name}_KERNELS_HEADER ${header} PARENT_SCOPE)
endfunction()
