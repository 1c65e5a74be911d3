// Weights whose copies are made once (MetaSchedule's RewriteLayout, done by the target): a
// tiled schedule often copies a weight whole into a buffer of its own -- transposed, and under
// -fpmath=bf16 on an AMX CPU laid out in bf16 pairs for the tile products -- inside every call.
// Where the host packs its params (a model's weights, sdk::Module::packed_layout), that buffer
// is the weight's packed layout instead: a small pack program writes it once from the weight,
// and the kernel reads it in place of its copy, which it no longer makes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "amx_tile.h"
#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu {

struct PrepackedWeight {
  // The buffer the kernel copies the weight into (allocated under some loops), and how its
  // copies lay it out for AMX tile products, if they do.
  sdk::program::Buffer buffer;
  std::optional<AmxRole> amx_role;
  // The packed layout: that buffer (laid out) for each iteration of the loops around its
  // allocation that the copies move with -- `outer`, their variables, outermost first --
  // those loops' dimensions first.
  sdk::program::Buffer packed;
  std::vector<sdk::program::Expr> outer;
  // Params (the weight as declared, `packed`): writes the packed bytes with the kernel's own
  // copies.
  sdk::program::Program pack;
  // Names the layout (the loops and the copies' indices): equal keys, equal packed bytes for
  // equal weights.
  std::string key;
};

// Per param of `p`: how it may be handed over packed, where the program reads the param only
// in copy nests (loops around one store `buffer[..] = param[..]`) at the top of the
// allocation of one buffer, before anything reads it, and nothing else writes the buffer --
// each iteration of the loops around the allocation then reads what its copies wrote, a
// function of the param alone. An allocation under a
// condition, a copy under one, a gathered or converted copy is not taken. `amx`: the program is
// compiled with AMX tile products (amx_tile.h), so the copy is laid out as they read it where
// they do.
std::vector<std::optional<PrepackedWeight>> prepackable_weights(const sdk::program::Program& p,
                                                                bool amx);

// `p` with each param flagged in `which` (and prepackable) given packed: its copies no longer
// made, the loads of the buffer reading the param at the loops' iteration.
sdk::program::Program
with_prepacked_weights(const sdk::program::Program& p,
                       const std::vector<std::optional<PrepackedWeight>>& weights,
                       const std::vector<uint8_t>& which);

} // namespace mt::llvm_cpu
