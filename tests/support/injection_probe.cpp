// Stands in for the CUDA driver in `rooflens record`'s CPU test: loads the library that
// CUDA_INJECTION64_PATH names and calls its InitializeInjection(), as cuInit does; then exits.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

int main() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (!path) return 3;
  void* lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    std::fprintf(stderr, "probe: %s\n", dlerror());
    return 4;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
  return init && init() == 1 ? 0 : 5;
}
