// Dimension push-down (see Config::resolve in config.h and dimension_push_down.h).
#include "core/model/dimension_push_down.h"

#include "core/model/config_path.h"

namespace mt {

namespace {

// One walk serves both entry points: Resolve writes values and collects conflicts, Adopt only
// re-marks equal Set values as Pushed and ignores whatever does not fit.
class PushDown {
public:
  enum class Mode { Resolve, Adopt };
  explicit PushDown(Mode mode) : mode_(mode) {}

  void run(Config& root) { walk(root, ""); }
  const std::vector<std::string>& conflicts() const { return conflicts_; }

private:
  struct Source {
    std::string path; // of the parent's field
    ConfigValue value;
    std::string target; // the push_to entry being followed
  };

  void walk(Config& c, const std::string& path) {
    const std::vector<FieldSpec>& fields = c.schema().fields();
    for (size_t i = 0; i < fields.size(); ++i) {
      const ConfigValue& v = c.field_value(i);
      if (fields[i].push_to.empty() || !v.is_set()) continue;
      Source src{join_config_path(path, fields[i].name), c.field_value(i), ""};
      for (const std::string& target : fields[i].push_to) {
        src.target = target;
        std::vector<ConfigPathStep> steps = parse_config_path(target);
        reach(c, path, steps, 0, src);
      }
    }
    for (size_t i = 0; i < fields.size(); ++i) {
      std::string p = join_config_path(path, fields[i].name);
      if (Config* child = c.field_child(i)) walk(*child, p);
      if (std::vector<Config>* list = c.field_child_list(i))
        for (size_t k = 0; k < list->size(); ++k)
          walk((*list)[k], index_config_path(p, k));
    }
  }

  [[noreturn]] void fail(const Source& src, const std::string& why) const {
    throw ConfigError("push-down of '" + src.path + "' to '" + src.target + "': " + why);
  }

  // Follows steps[k..] from `cur` (at `path`) and pushes into the field the last step names.
  void reach(Config& cur, const std::string& path, const std::vector<ConfigPathStep>& steps,
             size_t k, const Source& src) {
    std::optional<size_t> f = cur.schema().find(steps[k].field);
    if (!f) {
      if (mode_ == Mode::Adopt) return;
      fail(src, (path.empty() ? "" : "'" + path + "': ") +
                    cur.schema().unknown_field_message(steps[k].field));
    }
    std::string p = join_config_path(path, steps[k].field);
    const FieldSpec& spec = cur.schema().at(*f);
    if (k + 1 < steps.size()) {
      if (Config* child = cur.field_child(*f)) {
        reach(*child, p, steps, k + 1, src);
      } else if (std::vector<Config>* list = cur.field_child_list(*f)) {
        for (size_t e = 0; e < list->size(); ++e)
          reach((*list)[e], index_config_path(p, e), steps, k + 1, src);
      } else if (spec.type != FieldType::Child && mode_ == Mode::Resolve) {
        fail(src,
             "'" + p + "' is a field of type " + field_type_name(spec.type) + ", not a config");
      } // an unset child takes nothing
      return;
    }
    ConfigValue pushed;
    try {
      pushed =
          src.value.converted_to(spec.type, "'" + p + "' (" + cur.kind() + "." + spec.name + ")");
    } catch (const ConfigError& e) {
      if (mode_ == Mode::Adopt) return;
      fail(src, e.what());
    }
    const ConfigValue& now = cur.field_value(*f);
    bool set = cur.field_origin(*f) == ValueOrigin::Set;
    if (mode_ == Mode::Adopt) {
      if (set && now == pushed) cur.set_field(*f, pushed, ValueOrigin::Pushed, p);
      return;
    }
    if (set && now.is_set() && !(now == pushed)) {
      conflicts_.push_back("'" + src.path + "' = " + src.value.to_string() + " is pushed to '" + p +
                           "', which is set to " + now.to_string());
      return;
    }
    if (set && now.is_set()) return; // set to the same value: stays as the user set it
    cur.set_field(*f, std::move(pushed), ValueOrigin::Pushed, p);
  }

  Mode mode_;
  std::vector<std::string> conflicts_;
};

} // namespace

Config& Config::resolve() {
  require_kind("resolve");
  // On a copy, so that a failed resolve leaves this config as it was.
  Config copy = *this;
  PushDown push(PushDown::Mode::Resolve);
  push.run(copy);
  const std::vector<std::string>& conflicts = push.conflicts();
  if (!conflicts.empty()) {
    std::string list;
    for (const std::string& c : conflicts)
      list += (list.empty() ? "" : "; ") + c;
    throw ConfigError("config '" + kind() + "': " + std::to_string(conflicts.size()) +
                      (conflicts.size() == 1 ? " push-down conflict: " : " push-down conflicts: ") +
                      list);
  }
  *this = std::move(copy);
  return *this;
}

void adopt_pushed_values(Config& root) {
  if (root.empty()) return;
  PushDown(PushDown::Mode::Adopt).run(root);
}

} // namespace mt
