/* A plugin that cannot be loaded: it needs a symbol nothing provides (linked without -z defs
 * on purpose), so dlopen with RTLD_NOW fails. */
#include <metatune/plugin_api.h>

extern int metatune_test_symbol_that_does_not_exist(void);

MT_PLUGIN_MARKER;

MT_PLUGIN_EXPORT mt_status metatune_plugin_entry(mt_plugin_negotiation* neg) {
  neg->plugin_abi_version = (uint32_t)metatune_test_symbol_that_does_not_exist();
  return MT_OK;
}
