/* One source, many broken plugins: compiled once per refusal the host must report. Each
 * variant is selected with a preprocessor flag:
 *   REPORT_MAJOR_PLUS_ONE  claims the next major ABI version
 *   REPORT_MINOR_PLUS_ONE  claims a newer minor ABI version than the host's
 *   FAIL_INIT              the entry point fails with a message
 *   NO_VERSION             answers MT_OK without an ABI version
 *   HIDE_ENTRY             carries the marker section but exports no entry point
 *   COMPONENT_NAME="..."   registers one schedule rule of that name (for duplicates)
 *   JOINS_DEFAULTS="..."   the rule declares that it joins targets' defaults (ABI 1.3): the
 *                          host refuses a malformed declaration and keeps a valid one
 *   DESC_V1_SIZE           ...with a descriptor of version 1's size: the host must not read
 *                          the declaration past it */
#include <metatune/plugin_api.h>

static const mt_host_api* g_api;

static mt_status create(const mt_host_api* api, mt_str config, void** out_self) {
  (void)api;
  (void)config;
  *out_self = NULL;
  return MT_OK;
}
static void release(void* self) {
  (void)self;
}
static mt_status apply(void* self, mt_schedule* sch, mt_block_rv block, mt_schedule_list* out) {
  (void)self;
  (void)block;
  return g_api->schedule_list_push(out, sch);
}
static const mt_schedule_rule_vtable vtable = {sizeof(mt_schedule_rule_vtable), 1, release, NULL,
                                               apply};
static mt_component_desc desc;
static const mt_component_desc* components[1];

MT_PLUGIN_MARKER;

#ifdef HIDE_ENTRY
/* The entry under another name (a typo, or a C++ name without extern "C"). */
#define ENTRY_NAME metatune_plugin_entry_with_a_typo
MT_PLUGIN_EXPORT mt_status ENTRY_NAME(mt_plugin_negotiation* neg);
#else
#define ENTRY_NAME metatune_plugin_entry
#endif
MT_PLUGIN_EXPORT mt_status ENTRY_NAME(mt_plugin_negotiation* neg) {
  g_api = neg->host_api;
  neg->plugin_name = "test_refused";
  neg->plugin_version = "0.0";
#if defined(REPORT_MAJOR_PLUS_ONE)
  neg->plugin_abi_version = MT_MAKE_ABI_VERSION(MT_PLUGIN_ABI_VERSION_MAJOR + 1, 0);
#elif defined(REPORT_MINOR_PLUS_ONE)
  neg->plugin_abi_version =
      MT_MAKE_ABI_VERSION(MT_PLUGIN_ABI_VERSION_MAJOR, MT_PLUGIN_ABI_VERSION_MINOR + 1);
#elif !defined(NO_VERSION)
  neg->plugin_abi_version = MT_PLUGIN_ABI_VERSION;
#endif
#ifdef FAIL_INIT
  g_api->set_last_error(MT_STR("deliberate failure: the device is missing"));
  return MT_ERROR_UNKNOWN;
#endif
  desc.struct_size = sizeof desc;
  desc.struct_version = 1;
  desc.kind = MT_COMPONENT_SCHEDULE_RULE;
#ifdef COMPONENT_NAME
  desc.name = COMPONENT_NAME;
#else
  desc.name = "test.refused.Rule";
#endif
  desc.description = "a rule from a plugin the host should refuse";
  desc.create = create;
  desc.vtable.schedule_rule = &vtable;
#ifdef JOINS_DEFAULTS
  desc.joins_defaults = JOINS_DEFAULTS;
#endif
#ifdef DESC_V1_SIZE
  desc.struct_size = offsetof(mt_component_desc, joins_defaults);
#endif
  components[0] = &desc;
  neg->components = components;
  neg->num_components = 1;
  return MT_OK;
}
