// The annotation keys the standard components leave on blocks and loops. Rules write them,
// postprocessors turn them into transformations and remove them (names follow MetaSchedule).
#pragma once

namespace mt::std_rules::keys {

// Block: the structure a block was tiled with by MultiLevelTiling ("SSRSRS", ...).
inline constexpr const char* kTilingStructure = "meta_schedule.tiling_structure";
// Block (leading block of a root loop nest): ParallelVectorizeUnroll's requests.
inline constexpr const char* kParallel = "meta_schedule.parallel";
inline constexpr const char* kVectorize = "meta_schedule.vectorize";
inline constexpr const char* kUnrollExplicit = "meta_schedule.unroll_explicit";
inline constexpr const char* kUnrollImplicit = "meta_schedule.unroll_implicit";
// Block: a cache_read copy that RewriteCooperativeFetch spreads over the thread block; the value
// is the vector length of each thread's fetch.
inline constexpr const char* kCooperativeFetch = "meta_schedule.cooperative_fetch";
// Block, with kCooperativeFetch: the copy sits in a kernel whose threads run as whole warps
// (tensor cores): threadIdx.x is the warp's 32 lanes even where no loop above binds it, and the
// warps are the enclosing threadIdx.y loop.
inline constexpr const char* kWarpExecution = "meta_schedule.warp_execution";
// Block: RandomComputeLocation moves this block's producer (the rfactor block AddRFactor made)
// instead of the block itself.
inline constexpr const char* kRandomComputeProducer = "meta_schedule.random_compute_producer";

// Loop annotations of the unroll request, as MetaSchedule's lowering reads them.
inline constexpr const char* kPragmaAutoUnroll = "pragma_auto_unroll_max_step";
inline constexpr const char* kPragmaUnrollExplicit = "pragma_unroll_explicit";

// Suffix of the companion annotation holding the trace index of the sample_categorical
// instruction that decides a value (see sampled_annotation.hpp).
inline constexpr const char* kSampleIndexSuffix = ".sample_index";

} // namespace mt::std_rules::keys
