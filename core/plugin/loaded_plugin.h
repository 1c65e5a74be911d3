// Private to core/plugin: a loaded plugin library and the registration of one of its
// components. Component instances hold a Registration, which holds the library: a library is
// closed only after the last object made from it is gone (its code stays mapped: see load).
#pragma once

// BOOST_DLL_USE_STD_FS is defined for the whole target (std::filesystem paths).
#include <boost/dll/shared_library.hpp>

#include <memory>
#include <string>

#include "core/plugin/plugin_components.h"
#include "metatune/plugin_api.h"

namespace mt::plugin_detail {

struct LoadedPlugin {
  boost::dll::shared_library library;
  std::string path;
  void (*unload)() = nullptr; // the plugin's optional unload hook, called before dlclose

  LoadedPlugin() = default;
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;
  ~LoadedPlugin();
};

struct Registration {
  ComponentInfo info;
  const mt_component_desc* desc = nullptr; // static data inside the library
  std::shared_ptr<LoadedPlugin> plugin;
};

} // namespace mt::plugin_detail
