// Describing an OpenCL device without initialising OpenCL in the calling process. The tuner
// forks measurement workers without exec, and drivers such as PoCL start worker threads that
// do not survive fork(): a parent that had opened a device would hand its children a broken
// driver. So the parent, which only needs the description, asks a forked child that loads
// OpenCL, describes the device, and exits.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "opencl_runtime.h"

namespace mt::opencl {

// Forks; the child opens the device (Device::open(selector), so "" honours
// $METATUNE_OPENCL_DEVICE), writes device_info_to_json of it to a pipe and _exit()s. Returns
// that JSON object, or nullopt with *why set: OpenCL missing or no device (the child's reason),
// the child crashed, or it did not answer within the timeout (it is then killed). Must be called
// before this process initialises OpenCL itself: the child inherits whatever driver state the
// parent has.
std::optional<std::string>
query_device_in_child(const std::string& selector, std::string* why,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

std::string device_info_to_json(const DeviceInfo& info);
// Throws std::runtime_error when the text is not a DeviceInfo object.
DeviceInfo device_info_from_json(const std::string& json);

} // namespace mt::opencl
