/* A metatune plugin written in plain C (compiled as C99): two schedule rules that use the host
 * API table directly. "test.c.SplitBy4" splits the outermost loop of the block by 4 in place;
 * "test.c.ForkSplitBy4" keeps the schedule as it is and adds a copy with that split. */
#include <metatune/plugin_api.h>

static const mt_host_api* g_api;

static mt_status fail(const char* message, mt_status status) {
  mt_str s;
  s.data = message;
  s.size = 0;
  while (message[s.size])
    s.size++;
  g_api->set_last_error(s);
  return status;
}

/* Splits the outermost loop of `block` into (-1, 4); a block without loops is left alone. */
static mt_status split_outer_by_4(mt_schedule* sch, mt_block_rv block) {
  mt_loop_rv loops[16];
  size_t n = 0;
  mt_status st = g_api->get_loops(sch, block, loops, 16, &n);
  mt_factor factors[2];
  mt_loop_rv out[2];
  if (st != MT_OK) return st;
  if (n == 0) return MT_OK;
  factors[0].is_rv = 0;
  factors[0].rv.id = -1;
  factors[0].constant = -1;
  factors[1].is_rv = 0;
  factors[1].rv.id = -1;
  factors[1].constant = 4;
  return g_api->split(sch, loops[0], factors, 2, out);
}

static mt_status rule_create(const mt_host_api* api, mt_str config, void** out_self) {
  (void)api;
  if (config.size != 0)
    return fail("test.c rules take no configuration", MT_ERROR_INVALID_ARGUMENT);
  *out_self = NULL; /* stateless */
  return MT_OK;
}

static void rule_release(void* self) {
  (void)self;
}

static mt_status split_apply(void* self, mt_schedule* sch, mt_block_rv block,
                             mt_schedule_list* out) {
  mt_status st = split_outer_by_4(sch, block);
  (void)self;
  if (st != MT_OK) return st;
  return g_api->schedule_list_push(out, sch);
}

static mt_status fork_apply(void* self, mt_schedule* sch, mt_block_rv block,
                            mt_schedule_list* out) {
  mt_schedule* copy = NULL;
  mt_status st = g_api->schedule_copy(sch, &copy);
  (void)self;
  if (st != MT_OK) return st;
  st = split_outer_by_4(copy, block);
  if (st == MT_OK) st = g_api->schedule_list_push(out, sch);
  if (st == MT_OK) st = g_api->schedule_list_push(out, copy);
  g_api->schedule_release(copy); /* the list holds its own reference */
  return st;
}

static const mt_schedule_rule_vtable split_vtable = {sizeof(mt_schedule_rule_vtable), 1,
                                                     rule_release, NULL, split_apply};
static const mt_schedule_rule_vtable fork_vtable = {sizeof(mt_schedule_rule_vtable), 1,
                                                    rule_release, NULL, fork_apply};

static mt_component_desc split_desc;
static mt_component_desc fork_desc;
static const mt_component_desc* components[2];

MT_PLUGIN_MARKER;

MT_PLUGIN_EXPORT mt_status metatune_plugin_entry(mt_plugin_negotiation* neg) {
  if (!MT_HAS_FIELD(neg, mt_plugin_negotiation, unload)) return MT_ERROR_VERSION;
  g_api = neg->host_api;
  neg->plugin_abi_version = MT_PLUGIN_ABI_VERSION;
  neg->plugin_name = "test_c_split_rule";
  neg->plugin_version = "1.0";
  neg->plugin_description = "schedule rules written in C";

  split_desc.struct_size = sizeof split_desc;
  split_desc.struct_version = 1;
  split_desc.kind = MT_COMPONENT_SCHEDULE_RULE;
  split_desc.name = "test.c.SplitBy4";
  split_desc.description = "splits the outermost loop of a block by 4";
  split_desc.create = rule_create;
  split_desc.vtable.schedule_rule = &split_vtable;

  fork_desc = split_desc;
  fork_desc.name = "test.c.ForkSplitBy4";
  fork_desc.description = "keeps the schedule and adds a copy split by 4";
  fork_desc.vtable.schedule_rule = &fork_vtable;

  components[0] = &split_desc;
  components[1] = &fork_desc;
  neg->components = components;
  neg->num_components = 2;
  return MT_OK;
}
