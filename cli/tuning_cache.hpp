#pragma once
// profile --tuning-cache FILE: the kernel the replay picked for each problem, kept between runs
// of one GPU (replay/kernel_choice.hpp says why). A JSON file:
//   {"format": "rooflens tuning cache 1", "gpu": "<driver's name>",
//    "choices": {"<problem key>": {"candidate": i, "of": n, "kernel": "<library: algorithm>"}}}
#include <string>

#include "replay/kernel_choice.hpp"

namespace rooflens::cli {

// Empty when `path` does not exist yet; InputError when it is not such a file or was tuned on
// another GPU (its picks would be another GPU's fastest).
replay::KernelChoices read_tuning_cache(const std::string& path, const std::string& gpu);
// Written whole or not at all.
void write_tuning_cache(const std::string& path, const std::string& gpu,
                        const replay::KernelChoices& choices);

}  // namespace rooflens::cli
