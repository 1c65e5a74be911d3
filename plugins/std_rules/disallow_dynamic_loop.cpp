// DisallowDynamicLoop: rejects a candidate with a loop whose trip count is not a positive
// constant, or a buffer whose shape is not. metatune's IR only has static extents today, so
// every candidate passes -- but the program is still checked, so that a future dynamic-shape
// IR (or a broken schedule producing an empty loop) is caught here and not by a target.
#include <sstream>

#include "config.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

using sdk::StmtKind;
using sdk::StmtRef;

class DisallowDynamicLoop : public sdk::Postproc {
public:
  explicit DisallowDynamicLoop(std::string_view text) {
    Config("std.DisallowDynamicLoop", text).allow_only({});
  }

  bool apply(sdk::Schedule& sch) override {
    sdk::Program program = sch.program();
    auto check_buffer = [&](sdk::BufferRef b) {
      for (int64_t d : b.shape())
        if (d < 1)
          throw sdk::Rejected("std.DisallowDynamicLoop: buffer '" + b.name() +
                              "' has a non-constant or empty shape");
    };
    for (sdk::BufferRef b : program.params())
      check_buffer(b);
    for (sdk::BufferRef b : program.buffers())
      check_buffer(b);
    program.body().visit([&](StmtRef s) {
      if (s.kind() == StmtKind::For && s.extent() < 1) {
        std::ostringstream os;
        os << "std.DisallowDynamicLoop: loop '" << s.loop_var().var_name() << "' of '"
           << program.name() << "' has extent " << s.extent() << ", not a positive constant";
        throw sdk::Rejected(os.str());
      }
      return true;
    });
    return true;
  }
};

} // namespace

void register_disallow_dynamic_loop(sdk::Registry& r) {
  r.add<DisallowDynamicLoop>("std.DisallowDynamicLoop",
                             "reject loops whose extent is not a positive constant");
}

} // namespace mt::std_rules
