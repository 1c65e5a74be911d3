// Dimension push-down (internal to core/model): a parent's shared dimensions written into the
// fields of its children that its schema names (FieldSpec::push_to). Config::resolve() is the
// public entry point; the JSON loader uses adopt_pushed_values().
#pragma once

#include "core/model/config.h"

namespace mt {

// After loading, every value is marked Set. A value at a push-down target that equals what its
// parent pushes is indistinguishable from a pushed one, so it is marked Pushed again: then a
// loaded model whose shared dimension is changed and resolved again updates its children
// instead of reporting conflicts. Never throws on a tree that resolve() would reject.
void adopt_pushed_values(Config& root);

} // namespace mt
