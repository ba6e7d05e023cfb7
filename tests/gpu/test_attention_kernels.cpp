// The attention replay kernels against a host reference computed from the same inputs: flash
// prefill, split-KV decode on the CUDA cores and the tensor cores, and the decode over an fp8
// cache.
#include <catch2/catch.hpp>
#include <tuple>

#include "gpu_helpers.hpp"
#include "kernels/attention.hpp"

using namespace gpu_test;
using namespace rooflens;
using namespace rooflens::kernels;

TEST_CASE("flash prefill attention matches the host: causal and not, GQA, D 64 and 128") {
  for (int64_t D : {64, 128})
    for (bool causal : {false, true}) {
      DYNAMIC_SECTION("D=" << D << (causal ? " causal" : "")) {
        AttentionDims d{2, 4, 2, 77, 77, D, D, causal, 0};
        Tensor q(DType::bf16, 2 * 77 * 4 * D, 51), k(DType::bf16, 2 * 2 * 77 * D, 52),
            v(DType::bf16, 2 * 2 * 77 * D, 53), o(DType::bf16, 2 * 77 * 4 * D, 54);
        flash_prefill(q.get(), k.get(), v.get(), o.get(), DType::bf16, d, nullptr);
        auto hv = v.host();
        CHECK(max_rel_error(o.host(), host_attention(q.host(), k.host(), &hv, d), 0.05) < 3e-2);
      }
    }
  // fp16; fewer queries than keys (a chunk of prefill after a cached prefix: query i sits at key
  // i + 150), several key tiles, a 100-key sliding window, and a non-causal case over 200 keys.
  struct Case {
    int64_t sq, skv, D;
    bool causal;
    int64_t window;
  };
  for (Case c :
       {Case{70, 220, 128, true, 0}, Case{70, 220, 64, true, 100}, Case{130, 200, 64, false, 0}}) {
    DYNAMIC_SECTION("fp16 sq=" << c.sq << " skv=" << c.skv << " D=" << c.D
                               << " window=" << c.window) {
      AttentionDims d{1, 6, 3, c.sq, c.skv, c.D, c.D, c.causal, c.window};
      Tensor q(DType::f16, c.sq * 6 * c.D, 55), k(DType::f16, 3 * c.skv * c.D, 56),
          v(DType::f16, 3 * c.skv * c.D, 57), o(DType::f16, c.sq * 6 * c.D, 58);
      flash_prefill(q.get(), k.get(), v.get(), o.get(), DType::f16, d, nullptr);
      auto hv = v.host();
      CHECK(max_rel_error(o.host(), host_attention(q.host(), k.host(), &hv, d), 0.05) < 3e-2);
    }
  }
}

TEST_CASE("split-KV decode attention matches the host: GQA and MLA's shared latent") {
  int sms = 132;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  // MHA (group of 1), a group of 7 (padded to 8 heads) at D 64, and a group of 16 (the wide
  // kernel); sliding windows of 300 and 100 keys (Mistral's over a longer cache), and one wider
  // than the cache.
  for (auto [hq, hkv, kv, D, window] :
       {std::tuple{4, 4, 777, 128, 0}, std::tuple{14, 2, 500, 64, 0},
        std::tuple{16, 1, 300, 128, 0}, std::tuple{8, 2, 777, 128, 300},
        std::tuple{16, 1, 300, 128, 100}, std::tuple{4, 4, 200, 64, 4096}}) {
    DYNAMIC_SECTION("heads " << hq << "/" << hkv << " D=" << D << " window=" << window) {
      AttentionDims d{1, hq, hkv, 1, kv, D, D, true, window};
      Tensor q(DType::bf16, hq * D, 68), k(DType::bf16, hkv * kv * D, 69),
          v(DType::bf16, hkv * kv * D, 70), o(DType::bf16, hq * D, 71);
      DeviceBuffer ws(static_cast<size_t>(decode_workspace_bytes(d, sms)));
      prepare_decode_workspace(ws.get(), d, sms, nullptr);
      auto hv = v.host();
      auto want = host_attention(q.host(), k.host(), &hv, d);
      for (DecodeKernel kernel : {DecodeKernel::cuda_cores, DecodeKernel::tensor_cores}) {
        if (!decode_kernel_takes(kernel, d, true)) continue;
        for (int run = 0; run < 2; ++run) {  // the second run checks that the split counters reset
          ROOFLENS_CUDA_CHECK(cudaMemset(o.get(), 0, static_cast<size_t>(hq * D * 2)));
          decode_attention(q.get(), k.get(), v.get(), o.get(), ws.get(), DType::bf16, d, sms,
                           nullptr, kernel);
          INFO((kernel == DecodeKernel::tensor_cores ? "tensor cores" : "CUDA cores")
               << ", run " << run);
          CHECK(max_rel_error(o.host(), want, 0.05) < 3e-2);
        }
      }
    }
  }
  {
    AttentionDims d{2, 8, 2, 1, 1000, 128, 128, true, 0};
    Tensor q(DType::f16, 2 * 8 * 128, 61), k(DType::f16, 2 * 2 * 1000 * 128, 62),
        v(DType::f16, 2 * 2 * 1000 * 128, 63), o(DType::f16, 2 * 8 * 128, 64);
    DeviceBuffer ws(static_cast<size_t>(decode_workspace_bytes(d, sms)));
    prepare_decode_workspace(ws.get(), d, sms, nullptr);
    auto hv = v.host();
    auto want = host_attention(q.host(), k.host(), &hv, d);
    decode_attention(q.get(), k.get(), v.get(), o.get(), ws.get(), DType::f16, d, sms, nullptr);
    CHECK(max_rel_error(o.host(), want, 0.05) < 2e-2);
    decode_attention(q.get(), k.get(), v.get(), o.get(), ws.get(), DType::f16, d, sms, nullptr,
                     DecodeKernel::tensor_cores);
    CHECK(max_rel_error(o.host(), want, 0.05) < 2e-2);
  }
  {
    AttentionDims d{1,   16,  1,    1, 300,
                    576, 512, true, 0};  // MLA absorbed: V is the latent prefix of K
    Tensor q(DType::bf16, 16 * 576, 65), k(DType::bf16, 300 * 576, 66),
        o(DType::bf16, 16 * 512, 67);
    DeviceBuffer ws(static_cast<size_t>(decode_workspace_bytes(d, sms)));
    prepare_decode_workspace(ws.get(), d, sms, nullptr);
    decode_attention(q.get(), k.get(), nullptr, o.get(), ws.get(), DType::bf16, d, sms, nullptr);
    CHECK(max_rel_error(o.host(), host_attention(q.host(), k.host(), nullptr, d), 0.05) < 3e-2);
  }
}

TEST_CASE("decode attention over an fp8 (e4m3) cache matches the host on the dequantized cache") {
  int sms = 132;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  // The reference reads the same e4m3 bytes as floats: the kernel's conversion is exact, so only
  // fp16 rounding of Q and P and the fp32 sums separate them. MHA, Llama-3's group of 4 over two
  // sequences, a group of 7 at D 64 (padded to 8 rows), a sliding window; bf16 and fp16 queries.
  for (auto [batch, hq, hkv, kv, D, window, dt] :
       {std::tuple{1, 4, 4, 777, 128, 0, DType::bf16},
        std::tuple{2, 32, 8, 1500, 128, 0, DType::bf16},
        std::tuple{1, 14, 2, 500, 64, 0, DType::f16},
        std::tuple{1, 8, 2, 777, 128, 300, DType::bf16}}) {
    DYNAMIC_SECTION("batch " << batch << " heads " << hq << "/" << hkv << " D=" << D
                             << " window=" << window << " " << dtype_name(dt)) {
      AttentionDims d{batch, hq, hkv, 1, kv, D, D, true, window};
      Tensor q(dt, batch * hq * D, 81), k(DType::f8e4m3fn, batch * hkv * kv * D, 82),
          v(DType::f8e4m3fn, batch * hkv * kv * D, 83), o(dt, batch * hq * D, 84);
      DeviceBuffer ws(static_cast<size_t>(decode_workspace_bytes(d, sms)));
      prepare_decode_workspace(ws.get(), d, sms, nullptr);
      auto hv = v.host();
      auto want = host_attention(q.host(), k.host(), &hv, d);
      for (int run = 0; run < 2; ++run) {  // the second run checks that the split counters reset
        ROOFLENS_CUDA_CHECK(cudaMemset(o.get(), 0, static_cast<size_t>(batch * hq * D * 2)));
        decode_attention_fp8_cache(q.get(), k.get(), v.get(), o.get(), ws.get(), dt, d, sms,
                                   nullptr);
        INFO("run " << run);
        CHECK(max_rel_error(o.host(), want, 0.05) < 3e-2);
      }
    }
  }
  // The cache's per-tensor scales: K's scales the scores, V's the output.
  AttentionDims d{1, 8, 2, 1, 300, 128, 128, true, 0};
  Tensor q(DType::bf16, 8 * 128, 85), k(DType::f8e4m3fn, 2 * 300 * 128, 86),
      v(DType::f8e4m3fn, 2 * 300 * 128, 87), o(DType::bf16, 8 * 128, 88);
  DeviceBuffer ws(static_cast<size_t>(decode_workspace_bytes(d, sms)));
  prepare_decode_workspace(ws.get(), d, sms, nullptr);
  auto hk = k.host(), hv = v.host();
  for (float& x : hk) x *= 0.5f;
  for (float& x : hv) x *= 3.f;
  decode_attention_fp8_cache(q.get(), k.get(), v.get(), o.get(), ws.get(), DType::bf16, d, sms,
                             nullptr, 0.5f, 3.f);
  CHECK(max_rel_error(o.host(), host_attention(q.host(), hk, &hv, d), 0.05) < 3e-2);
}
