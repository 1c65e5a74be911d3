// handle<T>: owns one reference to a reference-counted host object (schedule, program, trace,
// tensor-expression builder) and drops it with the host's release function -- oneDNN's
// handle<T, traits> over the C API.
#pragma once

#include <utility>

#include "metatune/sdk/error.hpp"

namespace mt::sdk {

template <typename T> struct handle_traits;

template <> struct handle_traits<mt_schedule> {
  static void retain(mt_schedule* p) { api().schedule_retain(p); }
  static void release(mt_schedule* p) { api().schedule_release(p); }
};
template <> struct handle_traits<mt_program> {
  static void retain(mt_program* p) { api().program_retain(p); }
  static void release(mt_program* p) { api().program_release(p); }
};
template <> struct handle_traits<mt_trace> {
  static void retain(mt_trace* p) { api().trace_retain(p); }
  static void release(mt_trace* p) { api().trace_release(p); }
};
template <> struct handle_traits<mt_te_builder> {
  static void retain(mt_te_builder* p) { api().te_builder_retain(p); }
  static void release(mt_te_builder* p) { api().te_builder_release(p); }
};

template <typename T, typename Traits = handle_traits<T>> class handle {
public:
  handle() = default;
  // Takes over a reference the caller owns (e.g. from an out-parameter of the host).
  static handle adopt(T* p) { return handle(p); }
  // Adds a reference to a borrowed pointer (e.g. a callback argument).
  static handle borrow(T* p) {
    if (p) Traits::retain(p);
    return handle(p);
  }

  handle(const handle& o) : p_(o.p_) {
    if (p_) Traits::retain(p_);
  }
  handle(handle&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  handle& operator=(handle o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~handle() {
    if (p_) Traits::release(p_);
  }

  T* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }
  // Gives up ownership of the reference.
  T* release() { return std::exchange(p_, nullptr); }

private:
  explicit handle(T* p) : p_(p) {}
  T* p_ = nullptr;
};

} // namespace mt::sdk
