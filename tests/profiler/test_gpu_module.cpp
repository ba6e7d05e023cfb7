// The GPU module boundary without a GPU: `rooflens` links no CUDA library, and profile/calibrate
// say in one line what is missing (the module, a build mismatch, the driver), exit code 2.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "scratch_dir.hpp"

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string err, out;
};

Result run(const std::string& env, const std::string& args) {
  static const fs::path dir = rooflens::test::scratch_dir("gpu_module");
  fs::path err = dir / "stderr.txt", out = dir / "stdout.txt";
  std::string cmd =
      env + " " + ROOFLENS_BIN + " " + args + " > " + out.string() + " 2> " + err.string();
  int status = std::system(cmd.c_str());
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(err), slurp(out)};
}

void expect_one_line(const Result& r, const std::string& needle) {
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("the rooflens binary links no CUDA library", "[gpu_module]") {
  Result r = run("", std::string("--version; ldd ") + ROOFLENS_BIN);
  REQUIRE(r.code == 0);
  for (const char* lib :
       {"libcudart", "libcublas", "libcupti", "libcudnn", "libnccl", "libcuda.so"}) {
    INFO(lib);
    CHECK(r.out.find(lib) == std::string::npos);
  }
}

TEST_CASE("a missing, foreign or mismatched GPU module is one line and exit 2", "[gpu_module]") {
  std::string model = std::string(ROOFLENS_SOURCE_DIR) + "/samples/configs/gpt2/config.json";
  expect_one_line(run("ROOFLENS_GPU_MODULE=/nonexistent/librooflens_gpu.so", "profile " + model),
                  "no such file");
  // A shared object that is not a rooflens module.
  expect_one_line(
      run(std::string("ROOFLENS_GPU_MODULE=") + ROOFLENS_FOREIGN_SO, "calibrate --out /dev/null"),
      "is not a rooflens GPU module");
  // A module of another build (or version) than the binary.
  expect_one_line(
      run(std::string("ROOFLENS_GPU_MODULE=") + ROOFLENS_FAKE_MODULE, "profile " + model),
      "from another rooflens build");
}

TEST_CASE("without a GPU, profile and calibrate load the module and say there is no GPU",
          "[gpu_module]") {
  if (!fs::exists(fs::path(ROOFLENS_BINARY_DIR) / "lib" / "librooflens_gpu.so")) {
    WARN("skipped: this build has no GPU module (no CUDA toolkit)");
    return;
  }
  std::string model = std::string(ROOFLENS_SOURCE_DIR) + "/samples/configs/gpt2/config.json";
  Result r = run("", "profile " + model + " --phase decode");
  INFO(r.err);
  CHECK(r.code == 2);
  // The module loaded (else it would say so); this machine has no driver or device.
  CHECK(r.err.find("GPU module") == std::string::npos);
  CHECK((r.err.find("no NVIDIA driver") != std::string::npos ||
         r.err.find("no CUDA device") != std::string::npos));
}
