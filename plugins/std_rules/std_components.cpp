#include "std_components.hpp"

namespace mt::std_rules {

void register_all(sdk::Registry& r) {
  register_auto_inline(r);
  register_multi_level_tiling(r);
  register_multi_level_tiling_tensor_core(r);
  register_multi_level_tiling_amx(r);
  register_parallel_vectorize_unroll(r);
  register_add_rfactor(r);
  register_vector_rfactor(r);
  register_cross_thread_reduction(r);
  register_random_compute_location(r);
  register_auto_bind(r);
  register_mutate_tile_size(r);
  register_mutate_compute_location(r);
  register_mutate_unroll(r);
  register_mutate_parallel(r);
  register_mutate_thread_binding(r);
  register_mutate_pipeline_stages(r);
  register_disallow_dynamic_loop(r);
  register_rewrite_parallel_vectorize_unroll(r);
  register_rewrite_reduction_block(r);
  register_rewrite_cooperative_fetch(r);
  register_rewrite_software_pipeline(r);
  register_rewrite_unbound_block(r);
  register_verify_gpu_code(r);
}

} // namespace mt::std_rules
