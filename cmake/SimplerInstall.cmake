# Install: what `cmake --install build --prefix P` (and `make install
# PREFIX=P`) puts under P, and the names other projects build against.
#
#   P/include/simpler/*.h              the public headers
#   P/lib/libsimpler.so -> .so.<ABI> -> .so.<version>
#   P/lib/simpler/libsimpler_<rt>_<platform>.so, libsimpler_platform_<p>.so
#                                      the runtime modules (RUNPATH $ORIGIN),
#                                      found beside the installed libsimpler
#   P/lib/simpler/simpler-load-probe   registration's throw-away process
#   P/bin/simpler                      the command (RUNPATH $ORIGIN/../lib)
#   P/lib/cmake/simpler/               simplerConfig.cmake (+ version file,
#                                      SimplerCallable.cmake)
#   P/lib/pkgconfig/simpler.pc
#   P/share/simpler/examples/<name>.spc  the examples' callables (component
#                                      "examples"), for `simpler run <name>`
#   P/share/simpler/smoke/             the smoke kernel and orchestration
#                                      `simpler smoke` packs
# The command finds the last two through sp__data_path (src/common/paths.c).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The names a project uses inside this tree are the installed ones:
# simpler::simpler (libsimpler and its headers) and simpler::headers (the
# headers alone: orchestrations and kernels link nothing).
add_library(simpler_headers INTERFACE)
target_include_directories(simpler_headers INTERFACE ${PROJECT_SOURCE_DIR}/include)
add_library(simpler::headers ALIAS simpler_headers)
add_library(simpler::simpler ALIAS simpler_lib)

# libsimpler.so.<SIMPLER_ABI_VERSION>: the SONAME a program records.
set_target_properties(simpler_lib PROPERTIES VERSION ${PROJECT_VERSION}
                                             SOVERSION ${SIMPLER_ABI_VERSION})

set(SIMPLER_INSTALL_MODULEDIR ${CMAKE_INSTALL_LIBDIR}/simpler)
set(SIMPLER_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/simpler)
set(SIMPLER_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/simpler)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/simpler DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS simpler_lib LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The modules and the platform library they share find each other beside
# themselves, wherever the prefix is.
get_directory_property(_sp_runtimes DIRECTORY ${PROJECT_SOURCE_DIR}/src DEFINITION SIMPLER_RUNTIMES)
foreach(platform ${SIMPLER_PLATFORMS})
  set(targets simpler_platform_${platform})
  foreach(rt ${_sp_runtimes})
    list(APPEND targets simpler_${rt}_${platform})
  endforeach()
  set_target_properties(${targets} PROPERTIES INSTALL_RPATH "$ORIGIN")
  install(TARGETS ${targets} LIBRARY DESTINATION ${SIMPLER_INSTALL_MODULEDIR})
endforeach()
# Registration's load probe, beside the platform library that starts it.
set_target_properties(simpler_load_probe PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS simpler_load_probe RUNTIME DESTINATION ${SIMPLER_INSTALL_MODULEDIR})

file(RELATIVE_PATH _sp_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
set_target_properties(simpler PROPERTIES INSTALL_RPATH "$ORIGIN/${_sp_bin_to_lib}")
install(TARGETS simpler RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(TARGETS sp_smoke_kernel sp_smoke_orch LIBRARY DESTINATION ${SIMPLER_INSTALL_DATADIR}/smoke)
get_directory_property(_sp_examples DIRECTORY ${PROJECT_SOURCE_DIR}/examples
                       DEFINITION SP_EXAMPLE_NAMES)
foreach(name ${_sp_examples})
  get_target_property(spc ${name} SIMPLER_CALLABLE_FILE)
  install(FILES ${spc} DESTINATION ${SIMPLER_INSTALL_DATADIR}/examples COMPONENT examples)
endforeach()

# find_package(simpler): relocatable (paths relative to the config file).
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/simplerConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/simplerConfig.cmake
  INSTALL_DESTINATION ${SIMPLER_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR
            SIMPLER_INSTALL_MODULEDIR SIMPLER_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/simplerConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/simplerConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/simplerConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/SimplerCallable.cmake
        DESTINATION ${SIMPLER_INSTALL_CMAKEDIR})

# pkg-config: prefix relative to the .pc file (${pcfiledir}), so the
# prefix given to `cmake --install --prefix` is the one it names.
file(RELATIVE_PATH SIMPLER_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" SIMPLER_PC_TO_PREFIX "${SIMPLER_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/simpler.pc.in ${PROJECT_BINARY_DIR}/simpler.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/simpler.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
