// Runs a schedule primitive as a transaction: on any exception the function and symbol
// tables are restored, so a refused primitive leaves the schedule exactly as it was.
#pragma once

#include <exception>

#include "core/schedule/schedule_impl.h"

namespace mt {

template <typename F> auto transact(Schedule::Impl& impl, F&& f) -> decltype(f()) {
  Function saved = impl.func();
  size_t nb = impl.blocks.size(), nl = impl.loops.size(), nv = impl.values.size();
  ++impl.recording_depth;
  // Recording happens inside f() through impl.record(), which only records at depth 1.
  struct Depth {
    Schedule::Impl& i;
    ~Depth() { --i.recording_depth; }
  } depth{impl};
  try {
    return f();
  } catch (...) {
    impl.func() = std::move(saved);
    impl.blocks.resize(nb);
    impl.loops.resize(nl);
    impl.values.resize(nv);
    throw;
  }
}

} // namespace mt
