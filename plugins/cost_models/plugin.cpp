// The cost_models plugin: registers cost.Random, and cost.XGBoost when the build found
// libxgboost (METATUNE_COST_MODELS_XGBOOST).
#include "metatune/sdk.hpp"
#include "random_model.hpp"
#ifdef METATUNE_COST_MODELS_XGBOOST
#include "xgboost_model.hpp"
#endif

METATUNE_PLUGIN("cost_models", "0.1.0", "Cost models: random scores and XGBoost") {
  registry.add<mt::cost_models::RandomModel>("cost.Random",
                                             "uniformly random scores (config: {\"seed\": N})");
#ifdef METATUNE_COST_MODELS_XGBOOST
  registry.add<mt::cost_models::XGBoostModel>(
      "cost.XGBoost", "gradient-boosted trees trained online on measured candidates (libxgboost)");
#endif
}
