// The rotary position embedding plugin: registration of its layers (docs/rope.md).
#include "metatune/sdk/plugin.hpp"

#include "rotary_qkv_linear.hpp"
#include "rotary_table.hpp"

METATUNE_PLUGIN("rope", "0.1", "Rotary position embeddings (RoPE) around a QKV projection") {
  using namespace mt::rope;
  registry.add<RotaryTable>("rope.RotaryTable", "cos and sin of rotary angles per position");
  registry.add<RotaryQKVLinear>("rope.RotaryQKVLinear",
                                "a QKV projection with q and k rotated by position (RoPE)");
}
