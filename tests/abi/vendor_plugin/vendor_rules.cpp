// A vendor's plugin that grows the search space without anything else being rebuilt. Its two
// schedule rules mark every block they see with an annotation of their own, so that the traces
// in a tuning database show which of them took part:
//   vendor.MyRule        joins a run only when asked (`--rules +vendor.MyRule`); configurable
//                        with {"value": N}, the value of its annotation (default 1)
//   vendor.DeclaredRule  declares that it joins the defaults of every LLVM target, so that
//                        installing the plugin is enough
// and vendor.NoOpMutator, declared for the llvm.cpu target component with a weight, shows a
// mutator joining the defaults (it never finds anything to change).
#include <metatune/sdk.hpp>

#include <cstdlib>
#include <string>

namespace {

using mt::sdk::BlockRV;
using mt::sdk::Schedule;

class MarkBlock : public mt::sdk::ScheduleRule {
public:
  MarkBlock(const char* key, std::string_view config) : key_(key) {
    // The one field of the configuration; a JSON library would be overkill here.
    std::string text(config);
    size_t at = text.find("\"value\"");
    if (at != std::string::npos) {
      size_t colon = text.find(':', at);
      if (colon == std::string::npos) throw mt::sdk::Error("vendor: bad configuration " + text);
      value_ = std::strtoll(text.c_str() + colon + 1, nullptr, 10);
    }
  }
  std::vector<Schedule> apply(Schedule& sch, BlockRV block) override {
    sch.annotate(block, key_, value_);
    return {sch};
  }

private:
  std::string key_;
  int64_t value_ = 1;
};

class MyRule : public MarkBlock {
public:
  explicit MyRule(std::string_view config) : MarkBlock("vendor.my_rule", config) {}
};

class DeclaredRule : public MarkBlock {
public:
  explicit DeclaredRule(std::string_view config) : MarkBlock("vendor.declared_rule", config) {}
};

class NoOpMutator : public mt::sdk::Mutator {
public:
  std::optional<mt::sdk::Trace> apply(const mt::sdk::Trace&, mt::sdk::Rng&) override {
    return std::nullopt;
  }
};

} // namespace

METATUNE_PLUGIN("vendor_rules", "1.0", "a vendor's rules, installed after metatune") {
  registry.add<MyRule>("vendor.MyRule", "marks every block with vendor.my_rule");
  registry.add<DeclaredRule>("vendor.DeclaredRule",
                             "marks every block with vendor.declared_rule; joins llvm's defaults",
                             {.targets = {"llvm"}});
  registry.add<NoOpMutator>("vendor.NoOpMutator", "changes nothing; joins llvm.cpu's defaults",
                            {.targets = {"llvm.cpu"}, .probability = 0.05});
}
