// The metatune plugin SDK: everything a C++ plugin author includes. Header-only, over the C
// ABI of metatune/plugin_api.h; a plugin never links metatune itself.
#pragma once

#include "metatune/sdk/components.hpp"
#include "metatune/sdk/error.hpp"
#include "metatune/sdk/handle.hpp"
#include "metatune/sdk/ir.hpp"
#include "metatune/sdk/plugin.hpp"
#include "metatune/sdk/program_builder.hpp"
#include "metatune/sdk/schedule.hpp"
#include "metatune/sdk/te.hpp"
