/* The metatune plugin ABI: the one entry point a plugin exports and the negotiation through
 * which it learns the host's API table and answers with what it registers. Plain C99, no
 * code to link: a plugin needs only these headers.
 *
 * Loading, as the host does it:
 * 1. Without loading the file, the host checks that it is a shared library carrying the
 *    entry symbol or the MT_PLUGIN_SECTION marker (which survives `strip`).
 * 2. It loads the library and calls metatune_plugin_entry(&negotiation) with its version
 *    range [host_abi_min, host_abi_max] and its API table.
 * 3. The plugin writes plugin_abi_version (MT_PLUGIN_ABI_VERSION of its build) and its
 *    components, and returns MT_OK -- or a failure status with set_last_error.
 * 4. The host refuses the plugin if the majors differ, if the plugin needs a newer minor than
 *    the host provides, if the entry failed, or if a component name is already taken; it
 *    records the path and the reason and carries on. */
#ifndef METATUNE_PLUGIN_API_H
#define METATUNE_PLUGIN_API_H

#include "metatune/plugin_api/components.h"
#include "metatune/plugin_api/host_api.h"
#include "metatune/plugin_api/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_PLUGIN_ENTRY_SYMBOL "metatune_plugin_entry"
#define MT_PLUGIN_SECTION "metatune_plugin"

typedef struct mt_plugin_negotiation {
  uint32_t struct_size; /* sizeof in the host's build: check MT_HAS_FIELD before writing */
  uint32_t struct_version;

  /* host -> plugin */
  uint32_t host_abi_min; /* the oldest ABI the host accepts: MT_MAKE_ABI_VERSION(major, 0) */
  uint32_t host_abi_max; /* the host's own ABI version */
  const mt_host_api* host_api;

  /* plugin -> host */
  uint32_t plugin_abi_version; /* MT_PLUGIN_ABI_VERSION of the plugin's build */
  const char* plugin_name;     /* static strings */
  const char* plugin_version;
  const char* plugin_description;
  const mt_component_desc* const* components; /* static array of num_components pointers */
  size_t num_components;
  /* Called once before the host unloads the library (after every instance is released). */
  void (*unload)(void); /* optional */
  /* End of version 1 - DO NOT MODIFY ABOVE */
} mt_plugin_negotiation;
MT_STATIC_ASSERT(offsetof(mt_plugin_negotiation, host_api) / sizeof(void*) == 2, negotiation_v1_a);
MT_STATIC_ASSERT(offsetof(mt_plugin_negotiation, unload) / sizeof(void*) == 9, negotiation_v1_b);

typedef mt_status (*mt_plugin_entry_fn)(mt_plugin_negotiation* negotiation);

/* The entry point every plugin defines (extern "C", exported). */
MT_PLUGIN_EXPORT mt_status metatune_plugin_entry(mt_plugin_negotiation* negotiation);

/* Marks a library as a metatune plugin in a named section, so that discovery finds it without
 * loading it even when `strip` has removed the symbol table. Use once per plugin, at file
 * scope, next to the entry point. */
#define MT_PLUGIN_STRINGIFY_(x) #x
#define MT_PLUGIN_STRINGIFY(x) MT_PLUGIN_STRINGIFY_(x)
#if defined(__GNUC__) || defined(__clang__)
#define MT_PLUGIN_MARKER                                                                           \
  __attribute__((section(MT_PLUGIN_SECTION), used)) static const char mt_plugin_marker_[] =        \
      "metatune-plugin-abi " MT_PLUGIN_STRINGIFY(                                                  \
          MT_PLUGIN_ABI_VERSION_MAJOR) "." MT_PLUGIN_STRINGIFY(MT_PLUGIN_ABI_VERSION_MINOR)
#else
#define MT_PLUGIN_MARKER static const char mt_plugin_marker_[] = "metatune-plugin"
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* METATUNE_PLUGIN_API_H */
