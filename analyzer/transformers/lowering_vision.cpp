// Vision towers (--part vision, --part all): the patch embeddings of SigLIP/CLIP and of
// Qwen2-VL, Qwen2-VL's patch merger, and the wrappers' projectors to the language model.
#include <fmt/format.h>

#include <cmath>

#include "analyzer/core/checked.hpp"
#include "analyzer/transformers/lowering_builder.hpp"

namespace rooflens::lowering {

// A vision tower's tokens: the image cut into patches by a strided convolution (one token per
// patch, channels last), a class token in front where the model has one, then the learned
// position table; the pre-norm CLIP has.
int Builder::patch_embeddings() {
  const ModuleNames& n = c_.names;
  const VisionSpec& v = *c_.vision;
  int pixels = b_.input("pixel_values", plain_, {B_, v.channels, v.image_size, v.image_size});
  int kernel = b_.weight(v.patch_embed + ".weight", plain_,
                         {c_.hidden, v.channels, v.patch_size, v.patch_size});
  int bias = v.patch_bias ? b_.weight(v.patch_embed + ".bias", plain_, {c_.hidden}) : -1;
  int grid = b_.op("Conv", v.patch_embed, {pixels, kernel, bias},
                   {{"kernel_shape", ints_attr({v.patch_size, v.patch_size})},
                    {"strides", ints_attr({v.patch_size, v.patch_size})}});
  int x = b_.op("Transpose", v.patch_embed + ".to_tokens",
                {reshape(v.patch_embed + ".flatten", grid, {B_, c_.hidden, v.patches()})},
                {{"perm", ints_attr({0, 2, 1})}});
  if (v.class_token) {
    int cls = b_.weight(v.class_embed, plain_, {1, 1, c_.hidden});
    int rows = b_.op("Expand", v.class_embed + ".expand",
                     {cls, b_.int_constant(v.class_embed + ".shape", {B_, 1, c_.hidden})});
    x = b_.op("Concat", v.class_embed + ".concat", {rows, x}, {{"axis", int_attr(1)}});
  }
  int table = b_.weight(n.positions + ".weight", plain_, {v.tokens(), c_.hidden});
  x = b_.op("Add", n.positions + ".add", {x, b_.op("Gather", n.positions, {table, positions_})});
  if (!n.embed_norm.empty()) x = norm(n.embed_norm, x, c_.hidden);
  return x;
}

// Qwen2-VL: pixel_values holds each patch flattened (channels x frames x rows x columns, a still
// image's frame repeated); the Conv3d whose kernel and stride are the patch is a GEMM of patches
// x (C*T*P*P) x embed_dim. The 2-D rotary embedding's cos/sin rows (one per patch, from its row
// and column in the grid) are computed each forward: a buffer, not parameters.
int Builder::qwen2_vl_patch_embeddings() {
  const VisionSpec& v = *c_.vision;
  int64_t rows = checked_mul(B_, S_, "patches");
  int64_t flat = checked_mul(checked_mul(checked_mul(v.channels, v.temporal_patch), v.patch_size),
                             v.patch_size, "patch size");
  int pixels = b_.input("pixel_values", plain_, {B_, S_, flat});
  int cubes = reshape(v.patch_embed + ".view", pixels,
                      {rows, v.channels, v.temporal_patch, v.patch_size, v.patch_size});
  int kernel = b_.weight(v.patch_embed + ".weight", plain_,
                         {c_.hidden, v.channels, v.temporal_patch, v.patch_size, v.patch_size});
  Shape kernel_shape{v.temporal_patch, v.patch_size, v.patch_size};
  int conv =
      b_.op("Conv", v.patch_embed, {cubes, kernel, -1},
            {{"kernel_shape", ints_attr(kernel_shape)}, {"strides", ints_attr(kernel_shape)}});
  std::string table = c_.names.positions;
  rope_tables_.emplace(
      c_.rotary_dim,
      std::make_pair(b_.weight(table + ".cos", plain_, {S_, c_.rotary_dim / 2}, false),
                     b_.weight(table + ".sin", plain_, {S_, c_.rotary_dim / 2}, false)));
  return reshape(v.patch_embed + ".to_tokens", conv, {B_, S_, c_.hidden});
}

// Qwen2-VL's PatchMerger: ln_q over each patch, each merge x merge block of consecutive patches
// viewed as one row, then Linear -> GELU -> Linear to the language model's width.
int Builder::patch_merger(int x) {
  const VisionSpec& v = *c_.vision;
  int64_t m2 = v.merge * v.merge, wide = c_.hidden * m2;
  x = norm(v.merger + ".ln_q", x, c_.hidden);
  x = reshape(v.merger + ".view", x, {B_, S_ / m2, wide});
  x = linear(v.merger + ".mlp.0", x, wide, wide, true);
  x = activation(v.merger + ".mlp.1", "gelu", x, v.merger + ".mlp");
  return linear(v.merger + ".mlp.2", x, wide, v.out_hidden, true);
}

// transformers' Gemma3MultiModalProjector: the patch grid average-pooled to mm_tokens_per_image
// tokens, RMS-normed, times mm_input_projection_weight [vision, text]. LlavaMultiModalProjector:
// the patch tokens (the class token dropped) through linear_1, GELU, linear_2. (LLaVA reads the
// penultimate layer; transformers runs the last one too, so the tower's cost is the same.)
int Builder::projector(int x) {
  const VisionSpec& v = *c_.vision;
  const std::string p = "model.multi_modal_projector";
  if (v.projector == VisionSpec::Projector::gemma3) {
    int64_t grid = v.image_size / v.patch_size,
            side = std::llround(std::sqrt(static_cast<double>(v.projector_tokens))),
            k = grid / side;
    x = b_.op("Transpose", p + ".to_channels", {x}, {{"perm", ints_attr({0, 2, 1})}});
    x = reshape(p + ".to_grid", x, {B_, c_.hidden, grid, grid});
    x = b_.op("AveragePool", p + ".avg_pool", {x},
              {{"kernel_shape", ints_attr({k, k})}, {"strides", ints_attr({k, k})}});
    x = reshape(p + ".flatten", x, {B_, c_.hidden, v.projector_tokens});
    x = b_.op("Transpose", p + ".to_tokens", {x}, {{"perm", ints_attr({0, 2, 1})}});
    x = norm(p + ".mm_soft_emb_norm", x, c_.hidden, NormKind::rms);
    int w = b_.weight(p + ".mm_input_projection_weight", plain_, {c_.hidden, v.out_hidden});
    return b_.op("MatMul", p + ".mm_input_projection", {x, w});
  }
  x = b_.op("Slice", p + ".patch_tokens",
            {x, b_.int_constant(p + ".starts", {1}), b_.int_constant(p + ".ends", {v.tokens()}),
             b_.int_constant(p + ".axes", {1})});
  x = linear(p + ".linear_1", x, c_.hidden, v.out_hidden, true);
  x = activation(p + ".act", "gelu", x, p);
  return linear(p + ".linear_2", x, v.out_hidden, v.out_hidden, true);
}

}  // namespace rooflens::lowering
