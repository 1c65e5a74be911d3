// The device description taken in a forked child (see opencl_device_query.h), and DeviceInfo's
// JSON form, which is what crosses the pipe.
#include "opencl_device_query.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "metatune/sdk/child_query.hpp"

namespace mt::opencl {

std::optional<std::string> query_device_in_child(const std::string& selector, std::string* why,
                                                 std::chrono::milliseconds timeout) {
  std::string reason;
  std::optional<std::string> answer = sdk::ask_forked_child(
      [&] {
        std::string w;
        std::unique_ptr<Device> device = Device::open(&w, selector);
        if (!device) throw std::runtime_error(w);
        return device_info_to_json(device->info());
      },
      timeout, &reason);
  if (!answer && why)
    *why = reason.rfind("OpenCL", 0) == 0 || reason.rfind("no OpenCL", 0) == 0
               ? reason
               : "device query: " + reason;
  return answer;
}

std::string device_info_to_json(const DeviceInfo& info) {
  nlohmann::json j = {
      {"platform", info.platform},
      {"name", info.name},
      {"vendor", info.vendor},
      {"version", info.version},
      {"driver_version", info.driver_version},
      {"type", info.type},
      {"compute_units", info.compute_units},
      {"max_work_group_size", info.max_work_group_size},
      {"max_work_item_sizes",
       {info.max_work_item_sizes[0], info.max_work_item_sizes[1], info.max_work_item_sizes[2]}},
      {"local_mem_size", info.local_mem_size},
      {"global_mem_size", info.global_mem_size},
      {"max_mem_alloc_size", info.max_mem_alloc_size},
      {"preferred_vector_width_float", info.preferred_vector_width_float},
      {"fp16", info.fp16},
      {"fp64", info.fp64},
  };
  return j.dump();
}

DeviceInfo device_info_from_json(const std::string& json) {
  try {
    nlohmann::json j = nlohmann::json::parse(json);
    if (!j.is_object()) throw std::runtime_error("not an object");
    DeviceInfo info;
    j.at("platform").get_to(info.platform);
    j.at("name").get_to(info.name);
    j.at("vendor").get_to(info.vendor);
    j.at("version").get_to(info.version);
    j.at("driver_version").get_to(info.driver_version);
    j.at("type").get_to(info.type);
    j.at("compute_units").get_to(info.compute_units);
    j.at("max_work_group_size").get_to(info.max_work_group_size);
    const nlohmann::json& sizes = j.at("max_work_item_sizes");
    if (!sizes.is_array() || sizes.size() != 3)
      throw std::runtime_error("max_work_item_sizes is not an array of 3");
    for (int i = 0; i < 3; ++i)
      sizes.at(i).get_to(info.max_work_item_sizes[i]);
    j.at("local_mem_size").get_to(info.local_mem_size);
    j.at("global_mem_size").get_to(info.global_mem_size);
    j.at("max_mem_alloc_size").get_to(info.max_mem_alloc_size);
    j.at("preferred_vector_width_float").get_to(info.preferred_vector_width_float);
    j.at("fp16").get_to(info.fp16);
    j.at("fp64").get_to(info.fp64);
    return info;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("device_info_from_json: ") + e.what());
  }
}

} // namespace mt::opencl
