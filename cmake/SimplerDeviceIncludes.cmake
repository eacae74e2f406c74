# The include path of device-side runtime code: a generated tree of links
# to only what code running on the chip may include — the public types,
# tensor, kernel, orchestration, status and trace headers (and the ones
# they include), src/common, the platform's chip interface
# (src/platform/chip.h), src/runtime/device and the runtime's own device/
# folder. Device sources compile with this tree as their only project
# include path, so an include of a host-side header (loaded_callable.h,
# platform/device.h, a runtime's host/ folder) does not compile.

# Headers of include/simpler/ the device side may see.
set(SIMPLER_DEVICE_PUBLIC_HEADERS types tensor kernel orchestration status trace export log
    device_info host_api)

set(SIMPLER_DEVICE_INCLUDE_ROOT ${CMAKE_BINARY_DIR}/include-device CACHE INTERNAL
    "the generated include trees of device-side runtime code")

function(simpler_device_link target link)
  get_filename_component(dir ${link} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  if(IS_SYMLINK ${link} OR EXISTS ${link})
    file(REMOVE ${link})
  endif()
  file(CREATE_LINK ${target} ${link} SYMBOLIC)
endfunction()

# ${SIMPLER_DEVICE_INCLUDE_ROOT}/shared: what every runtime's device code sees.
function(simpler_device_include_shared)
  set(root ${SIMPLER_DEVICE_INCLUDE_ROOT}/shared)
  file(REMOVE_RECURSE ${root})
  foreach(h ${SIMPLER_DEVICE_PUBLIC_HEADERS})
    simpler_device_link(${PROJECT_SOURCE_DIR}/include/simpler/${h}.h ${root}/simpler/${h}.h)
  endforeach()
  simpler_device_link(${PROJECT_SOURCE_DIR}/src/common ${root}/common)
  simpler_device_link(${PROJECT_SOURCE_DIR}/src/platform/chip.h ${root}/platform/chip.h)
  simpler_device_link(${PROJECT_SOURCE_DIR}/src/runtime/device ${root}/runtime/device)
endfunction()

# ${SIMPLER_DEVICE_INCLUDE_ROOT}/<runtime_dir>: that runtime's device/ folder.
function(simpler_device_include_runtime runtime_dir)
  set(root ${SIMPLER_DEVICE_INCLUDE_ROOT}/${runtime_dir})
  file(REMOVE_RECURSE ${root})
  simpler_device_link(${PROJECT_SOURCE_DIR}/src/runtime/${runtime_dir}/device
                      ${root}/runtime/${runtime_dir}/device)
endfunction()

# Compile `target`'s sources as device code: the generated tree (shared, plus
# runtime_dir's when given) is its only project include path.
function(simpler_device_target target)
  target_include_directories(${target} PRIVATE ${SIMPLER_DEVICE_INCLUDE_ROOT}/shared)
  if(ARGC GREATER 1)
    target_include_directories(${target} PRIVATE ${SIMPLER_DEVICE_INCLUDE_ROOT}/${ARGV1})
  endif()
endfunction()
