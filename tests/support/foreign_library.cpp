// A shared object that is not a rooflens GPU module (test_gpu_module.cpp).
extern "C" int rooflens_test_foreign_library() {
  return 0;
}
