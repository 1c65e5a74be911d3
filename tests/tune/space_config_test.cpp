// Composition of the search space (core/tuner/space_config.h) with the real plugins of this
// build: the entry syntax and its errors, tuning-config files, and +/-/replace applied to the
// LLVM CPU target's defaults, compared with what setup_target itself reports.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/tuner/space_config.h"
#include "core/tuner/target_setup.h"
#include "tune_test_util.h"

namespace mt {
namespace {

using tune_test::host;

const SpaceOrigin kFlag{SpaceSource::Option, "--test"};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> names(const std::vector<SpaceComponent>& list) {
  std::vector<std::string> out;
  for (const auto& c : list)
    out.push_back(c.name);
  return out;
}

SearchSpace resolve(const std::vector<SpaceEdit>& edits) {
  return resolve_search_space(host(), setup_target(host(), "llvm"), edits);
}

SpaceEdit edit(ComponentKind kind, const std::string& text) {
  return parse_space_edit(kind, text, kFlag);
}

TEST(SpaceEntries, ParseNamesConfigurationsAndWeights) {
  SpaceEdit e = edit(ComponentKind::Mutator, R"( +m.A{"x": [1, 2], "s": "a,}b"} = 0.5 , -m.B,)");
  EXPECT_FALSE(e.replaces());
  ASSERT_EQ(e.entries.size(), 2u);
  EXPECT_EQ(e.entries[0].op, SpaceEntry::Op::Add);
  EXPECT_EQ(e.entries[0].name, "m.A");
  EXPECT_EQ(e.entries[0].config, R"({"s":"a,}b","x":[1,2]})");
  EXPECT_EQ(e.entries[0].probability, 0.5);
  EXPECT_EQ(e.entries[1].op, SpaceEntry::Op::Drop);
  EXPECT_EQ(e.entries[1].name, "m.B");

  SpaceEdit r = edit(ComponentKind::Postproc, R"(p.A, p.B{"k": 1})");
  EXPECT_TRUE(r.replaces());
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.entries[1].config, R"({"k":1})");
  EXPECT_FALSE(r.entries[1].probability.has_value());
  // An empty value is an empty replacement list.
  EXPECT_TRUE(edit(ComponentKind::Postproc, "").replaces());
  EXPECT_TRUE(edit(ComponentKind::Postproc, "").entries.empty());
}

TEST(SpaceEntries, SyntaxErrorsNameTheOriginAndTheEntry) {
  auto why = [](ComponentKind k, const std::string& text) {
    return error_of([&] { edit(k, text); });
  };
  std::string mixed = why(ComponentKind::ScheduleRule, "r.A,+r.B");
  EXPECT_NE(mixed.find("--test: 'r.A,+r.B' both replaces"), std::string::npos) << mixed;
  EXPECT_NE(why(ComponentKind::ScheduleRule, "+r.A=0.1").find("only mutators take a weight"),
            std::string::npos);
  EXPECT_NE(why(ComponentKind::Mutator, "+m.A=0").find("positive"), std::string::npos);
  EXPECT_NE(why(ComponentKind::Mutator, "+m.A=x").find("'x' is not a number"), std::string::npos);
  EXPECT_NE(why(ComponentKind::Mutator, "-m.A=0.2").find("takes no configuration"),
            std::string::npos);
  EXPECT_NE(why(ComponentKind::Postproc, "+p.A{\"k\": 1").find("no closing '}'"),
            std::string::npos);
  EXPECT_NE(why(ComponentKind::Postproc, "+p.A{k: 1}").find("not JSON"), std::string::npos);
  EXPECT_NE(why(ComponentKind::Postproc, "+p.A x").find("unexpected 'x'"), std::string::npos);
  EXPECT_NE(why(ComponentKind::Postproc, "+").find("no component name"), std::string::npos);
}

TEST(SpaceConfigFile, FieldsHoldStringsOrEntryObjects) {
  SpaceOrigin file{SpaceSource::ConfigFile, "t.json"};
  std::vector<SpaceEdit> edits = parse_space_config(R"({
      "postprocs": "p.A,p.B",
      "rules": ["+r.A{\"v\": 1}", {"add": "r.B", "config": {"v": 2}}, {"drop": "r.C"}],
      "mutators": [{"name": "m.A", "probability": 0.7}, "m.B=0.3"]})",
                                                    file);
  ASSERT_EQ(edits.size(), 3u);
  // In a fixed order (rules, mutators, postprocs), whatever the file's.
  EXPECT_EQ(edits[0].kind, ComponentKind::ScheduleRule);
  EXPECT_EQ(edits[0].origin.text(), "config file t.json (\"rules\")");
  ASSERT_EQ(edits[0].entries.size(), 3u);
  EXPECT_EQ(edits[0].entries[1].config, R"({"v":2})");
  EXPECT_EQ(edits[0].entries[2].op, SpaceEntry::Op::Drop);
  EXPECT_EQ(edits[1].kind, ComponentKind::Mutator);
  EXPECT_TRUE(edits[1].replaces());
  EXPECT_EQ(edits[1].entries[0].probability, 0.7);
  EXPECT_EQ(edits[1].entries[1].probability, 0.3);
  EXPECT_TRUE(edits[2].replaces());

  auto why = [&](const std::string& text) {
    return error_of([&] { parse_space_config(text, file); });
  };
  EXPECT_NE(why(R"({"rule": []})").find("unknown field \"rule\""), std::string::npos);
  EXPECT_NE(why(R"({"rules": [{"add": "a", "drop": "b"}]})").find("exactly one of"),
            std::string::npos);
  EXPECT_NE(why(R"({"rules": [{"add": "a", "weight": 1}]})").find("unknown field \"weight\""),
            std::string::npos);
  EXPECT_NE(why(R"({"rules": ["a", "+b"]})").find("both replaces"), std::string::npos);
  EXPECT_NE(why(R"({"rules": 3})").find("neither a string nor a list"), std::string::npos);
  EXPECT_NE(why("[1]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of([] { read_space_config_file("/no/such/space.json"); }).find("cannot be read"),
            std::string::npos);
}

TEST(SearchSpace, WithoutEditsIsTheTargetsDefaults) {
  TargetSetup t = setup_target(host(), "llvm");
  SearchSpace s = resolve({});
  EXPECT_EQ(s.target_component, "llvm.cpu");
  EXPECT_EQ(s.device_kind, "llvm");
  EXPECT_EQ(names(s.rules), t.rules);
  EXPECT_EQ(names(s.postprocs), t.postprocs);
  EXPECT_EQ(names(s.mutators), t.mutators);
  for (size_t i = 0; i < t.mutators.size(); ++i)
    EXPECT_EQ(s.mutators[i].probability, t.mutator_probs[i]);
  for (ComponentKind k :
       {ComponentKind::ScheduleRule, ComponentKind::Mutator, ComponentKind::Postproc})
    for (const SpaceComponent& c : s.list(k)) {
      EXPECT_EQ(c.origin.text(), "target default (llvm.cpu)");
      EXPECT_TRUE(c.config.empty());
    }
  EXPECT_TRUE(s.removed.empty());
}

TEST(SearchSpace, AddDropAndReplaceEditTheDefaults) {
  TargetSetup t = setup_target(host(), "llvm");
  ASSERT_GE(t.rules.size(), 2u);
  ASSERT_GE(t.mutators.size(), 2u);
  const std::string dropped = t.rules[1];
  const std::string reweighted = t.mutators[1];
  SearchSpace s = resolve({edit(ComponentKind::ScheduleRule, "-" + dropped),
                           edit(ComponentKind::ScheduleRule, R"(+std.AutoBind{"max_threads": 64})"),
                           edit(ComponentKind::Mutator, "+" + reweighted + "=0.2"),
                           edit(ComponentKind::Postproc, "std.DisallowDynamicLoop")});
  std::vector<std::string> want = t.rules;
  want.erase(want.begin() + 1);
  want.push_back("std.AutoBind");
  EXPECT_EQ(names(s.rules), want);
  EXPECT_EQ(s.rules.back().config, R"({"max_threads":64})");
  EXPECT_EQ(s.rules.back().origin.text(), "--test");
  // Re-adding a present mutator changes its weight in place.
  EXPECT_EQ(names(s.mutators), t.mutators);
  EXPECT_EQ(s.mutators[1].probability, 0.2);
  EXPECT_EQ(s.mutators[1].origin.source, SpaceSource::Option);
  EXPECT_EQ(s.mutators[0].probability, t.mutator_probs[0]);
  EXPECT_EQ(names(s.postprocs), std::vector<std::string>{"std.DisallowDynamicLoop"});
  // What went, and who took it out: the rule, then every postprocessor the list replaced.
  ASSERT_EQ(s.removed.size(), 1 + t.postprocs.size() - 1);
  EXPECT_EQ(s.removed[0].name, dropped);
  EXPECT_EQ(s.removed[0].was.source, SpaceSource::TargetDefault);
  EXPECT_EQ(s.removed[0].by.text(), "--test");

  // A replacement list keeps the weights the mutators had.
  SearchSpace r = resolve({edit(ComponentKind::Mutator, t.mutators[1] + "," + t.mutators[0])});
  ASSERT_EQ(r.mutators.size(), 2u);
  EXPECT_EQ(r.mutators[0].probability, t.mutator_probs[1]);
  EXPECT_EQ(r.mutators[1].probability, t.mutator_probs[0]);
  // Edits apply in order: a later replacement undoes an earlier addition.
  SearchSpace later = resolve({edit(ComponentKind::ScheduleRule, "+std.AutoBind"),
                               edit(ComponentKind::ScheduleRule, t.rules[0])});
  EXPECT_EQ(names(later.rules), std::vector<std::string>{t.rules[0]});
}

TEST(SearchSpace, UnknownNamesMissingWeightsAndAbsentDropsAreErrors) {
  std::string typo =
      error_of([] { resolve({edit(ComponentKind::ScheduleRule, "+std.MultiLevelTilling")}); });
  EXPECT_NE(typo.find("--test: schedule rule 'std.MultiLevelTilling' is not registered"),
            std::string::npos)
      << typo;
  EXPECT_NE(typo.find("did you mean 'std.MultiLevelTiling'"), std::string::npos) << typo;
  EXPECT_NE(typo.find("registered schedule rules: "), std::string::npos) << typo;
  EXPECT_NE(typo.find("std.AutoInline"), std::string::npos) << typo;

  // A GPU mutator is registered but has no weight on this target.
  std::string weightless =
      error_of([] { resolve({edit(ComponentKind::Mutator, "+std.MutateThreadBinding")}); });
  EXPECT_NE(weightless.find("needs a selection weight (+std.MutateThreadBinding=P)"),
            std::string::npos)
      << weightless;
  SearchSpace s = resolve({edit(ComponentKind::Mutator, "+std.MutateThreadBinding=0.1")});
  EXPECT_EQ(s.mutators.back().name, "std.MutateThreadBinding");
  EXPECT_EQ(s.mutators.back().probability, 0.1);

  std::string absent =
      error_of([] { resolve({edit(ComponentKind::Postproc, "-std.VerifyGPUCode")}); });
  EXPECT_NE(absent.find("cannot drop postprocessor 'std.VerifyGPUCode'"), std::string::npos)
      << absent;
  EXPECT_NE(error_of([] {
              resolve({edit(ComponentKind::Postproc, "std.X,std.X")});
            }).find("not registered"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve({edit(ComponentKind::Postproc, "std.DisallowDynamicLoop,"
                                                     "std.DisallowDynamicLoop")});
            }).find("listed twice"),
            std::string::npos);
}

TEST(SearchSpace, ShowSpaceTextHasEveryComponentWithWeightShareAndOrigin) {
  TargetSetup t = setup_target(host(), "llvm");
  SearchSpace s = resolve({edit(ComponentKind::ScheduleRule, "-" + t.rules[0])});
  std::string text = format_search_space(s);
  for (const SpaceComponent& c : s.rules)
    EXPECT_NE(text.find("  " + c.name + " "), std::string::npos) << text;
  double total = 0;
  for (size_t i = 0; i < t.mutators.size(); ++i)
    total += t.mutator_probs[i];
  char share[32];
  std::snprintf(share, sizeof share, "%5.1f%%", 100 * t.mutator_probs[0] / total);
  size_t line = text.find("  " + t.mutators[0] + " ");
  ASSERT_NE(line, std::string::npos) << text;
  std::string mline = text.substr(line, text.find('\n', line) - line);
  EXPECT_NE(mline.find(share), std::string::npos) << mline;
  EXPECT_NE(mline.find("target default (llvm.cpu)"), std::string::npos) << mline;
  EXPECT_NE(text.find("removed:\n  schedule rule " + t.rules[0] +
                      " (target default (llvm.cpu)) by --test"),
            std::string::npos)
      << text;
}

} // namespace
} // namespace mt
