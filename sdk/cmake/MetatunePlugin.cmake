# metatune_add_plugin(<name> SOURCES <src>... [LINK_LIBRARIES <lib>...]
#                     [OUTPUT_DIRECTORY <dir>] [INSTALL_DESTINATION <dir>] [NO_INSTALL])
#
# Builds a metatune plugin: a MODULE library named <name>.so (no "lib" prefix) with hidden
# visibility (only the entry point is exported) and -z defs (every symbol resolved at link
# time: a plugin never links metatune itself, it reaches the host through the API table). C++
# sources get the header-only SDK (metatune::sdk), C sources the plain ABI headers.
#
# Used in the metatune tree (plugins/, tests/) and, installed, by find_package(metatune).
include_guard(GLOBAL)
include(GNUInstallDirs)

function(metatune_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "NO_INSTALL" "OUTPUT_DIRECTORY;INSTALL_DESTINATION"
                        "SOURCES;LINK_LIBRARIES")
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "metatune_add_plugin(${name}): SOURCES is required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "metatune_add_plugin(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()

  add_library(${name} MODULE ${ARG_SOURCES})
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("CXX" IN_LIST languages)
    target_link_libraries(${name} PRIVATE metatune::sdk)
  else()
    target_link_libraries(${name} PRIVATE metatune::plugin_api)
  endif()
  if(ARG_LINK_LIBRARIES)
    target_link_libraries(${name} PRIVATE ${ARG_LINK_LIBRARIES})
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  if(NOT APPLE AND NOT WIN32)
    target_link_options(${name} PRIVATE "LINKER:-z,defs")
  endif()

  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  elseif(METATUNE_PLUGIN_OUTPUT_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${METATUNE_PLUGIN_OUTPUT_DIR})
  endif()

  if(NOT ARG_NO_INSTALL)
    if(ARG_INSTALL_DESTINATION)
      set(destination ${ARG_INSTALL_DESTINATION})
    else()
      set(destination ${CMAKE_INSTALL_LIBDIR}/metatune/plugins)
    endif()
    install(TARGETS ${name} LIBRARY DESTINATION ${destination} COMPONENT plugins)
  endif()
endfunction()
