// profile --tuning-cache: the file of kernel picks round-trips, and every kind of bad file is
// refused with a line that names it (the picks themselves are tested on the GPU, test_vendor.cpp).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "analyzer/core/errors.hpp"
#include "cli/tuning_cache.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
namespace fs = std::filesystem;

TEST_CASE("a tuning cache round-trips its picks and reads as taken from the file", "[cli]") {
  fs::path dir = test::scratch_dir("tuning_cache");
  std::string path = (dir / "tuning.json").string();
  fs::remove(path);
  CHECK(cli::read_tuning_cache(path, "NVIDIA H100 80GB HBM3").empty());  // not there yet
  replay::KernelChoices picks{
      {"gemm bf16 2048x2048x2048", {3, 8, "cuBLASLt: algo 66, tile id 23, split-K 1", false}},
      {"attn causal", {0, 2, "cuDNN: engine 1", false}}};
  cli::write_tuning_cache(path, "NVIDIA H100 80GB HBM3", picks);
  replay::KernelChoices back = cli::read_tuning_cache(path, "NVIDIA H100 80GB HBM3");
  REQUIRE(back.size() == 2);
  const replay::KernelChoice& g = back.at("gemm bf16 2048x2048x2048");
  CHECK(g.index == 3);
  CHECK(g.candidates == 8);
  CHECK(g.kernel == "cuBLASLt: algo 66, tile id 23, split-K 1");
  CHECK(g.from_file);
}

TEST_CASE("a bad tuning cache is one clear line", "[cli][errors]") {
  fs::path dir = test::scratch_dir("tuning_cache_bad");
  auto write = [&](const std::string& text) {
    std::string p = (dir / "c.json").string();
    std::ofstream(p) << text;
    return p;
  };
  auto refuses = [&](const std::string& text, const std::string& says) {
    INFO(text);
    try {
      cli::read_tuning_cache(write(text), "NVIDIA H100 80GB HBM3");
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("--tuning-cache") && Catch::Contains(says));
    }
  };
  refuses("{\"format\": ", "not JSON");
  refuses("[1, 2]", "not a tuning cache");
  refuses(R"({"format": "rooflens tuning cache 1", "gpu": "H100"})", "\"choices\"");
  refuses(R"({"format": "rooflens tuning cache 1", "gpu": "NVIDIA H200", "choices": {}})",
          "tuned on NVIDIA H200, and this GPU is NVIDIA H100 80GB HBM3");
  const std::string head =
      R"({"format": "rooflens tuning cache 1", "gpu": "NVIDIA H100 80GB HBM3", "choices": )";
  refuses(head + R"({"k": {"candidate": 8, "of": 8, "kernel": "x"}}})", "choice \"k\"");
  refuses(head + R"({"k": {"candidate": -1, "of": 8, "kernel": "x"}}})", "choice \"k\"");
  refuses(head + R"({"k": {"candidate": 0, "of": 8}}})", "choice \"k\"");
  refuses(head + R"({"k": {"candidate": 0, "of": 8, "kernel": ""}}})", "choice \"k\"");
  refuses(head + R"({"k": "cuBLASLt"}})", "choice \"k\"");
}
