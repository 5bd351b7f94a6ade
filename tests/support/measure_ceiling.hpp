// The copy ceiling alone, before any lab code runs (`checker --measure-ceiling`):
// what `batch` measures once per GPU before the first student and after the last.
#pragma once

#include <string>

namespace lab::test {

// One line of JSON: ceiling_gbps, theoretical_gbps, device.
std::string measure_ceiling_json();

}  // namespace lab::test
