// Registration of the std_rules components: each component file defines its class and one
// register_* function; register_all adds them all (names "std.<Name>").
#pragma once

#include "metatune/sdk/plugin.hpp"

namespace mt::std_rules {

// Schedule rules.
void register_auto_inline(sdk::Registry& r);
void register_multi_level_tiling(sdk::Registry& r);
void register_multi_level_tiling_tensor_core(sdk::Registry& r);
void register_multi_level_tiling_amx(sdk::Registry& r);
void register_parallel_vectorize_unroll(sdk::Registry& r);
void register_add_rfactor(sdk::Registry& r);
void register_vector_rfactor(sdk::Registry& r);
void register_cross_thread_reduction(sdk::Registry& r);
void register_random_compute_location(sdk::Registry& r);
void register_auto_bind(sdk::Registry& r);
// Mutators.
void register_mutate_tile_size(sdk::Registry& r);
void register_mutate_compute_location(sdk::Registry& r);
void register_mutate_unroll(sdk::Registry& r);
void register_mutate_parallel(sdk::Registry& r);
void register_mutate_thread_binding(sdk::Registry& r);
void register_mutate_pipeline_stages(sdk::Registry& r);
// Postprocessors.
void register_disallow_dynamic_loop(sdk::Registry& r);
void register_rewrite_parallel_vectorize_unroll(sdk::Registry& r);
void register_rewrite_reduction_block(sdk::Registry& r);
void register_rewrite_cooperative_fetch(sdk::Registry& r);
void register_rewrite_unbound_block(sdk::Registry& r);
void register_rewrite_software_pipeline(sdk::Registry& r);
void register_verify_gpu_code(sdk::Registry& r);

void register_all(sdk::Registry& registry);

} // namespace mt::std_rules
