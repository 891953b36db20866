// ozz-animation 0.16's SkinningJob on the meshes of skelett's skinning bench
// (crates/skelett/benches/skinning.rs), for comparing the two in one session on the same data.
//
// Input: the files that bench writes when run with SKELETT_SKIN_CASES=DIR (all little-endian):
//   u32 joints J, vertices N, groups G; G x (u32 length, u32 influences k);
//   J palette matrices (16 f32, column major); N positions, N normals (3 f32 each);
//   per group: length x k joint indices (u16), then length x (k - 1) weights (f32);
//   skelett's output: N positions, N unit normals (3 f32 each).
// Vertices are in skelett's skinning order (grouped by influence count), so ozz runs one job
// per group, as its own samples do per mesh part. Normals are transformed by the blended
// matrix (no inverse-transposes: CesiumMan's palette has no non-uniform scale), and ozz does
// not renormalise them; skelett's rows are quoted with and without renormalising.
//
// Prints one JSON line per file: median ns/vertex over 31 samples, and the largest
// difference from skelett's output (positions; normals after normalising ozz's); fails if
// they differ by more than 1e-4 (or are NaN): both must have done the same work.
// Build and run: scripts/bench/ozz_skinning.sh OZZ_SRC DIR
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ozz/base/maths/simd_math.h"
#include "ozz/base/span.h"
#include "ozz/geometry/runtime/skinning_job.h"

#ifndef BUILD_NAME
#define BUILD_NAME "sse2"
#endif

struct Reader {
  std::vector<char> bytes;
  size_t at = 0;
  template <typename T>
  std::vector<T> take(size_t n) {
    std::vector<T> out(n);
    if (at + n * sizeof(T) > bytes.size()) {
      std::fprintf(stderr, "file too short at byte %zu\n", at);
      std::exit(1);
    }
    std::memcpy(out.data(), bytes.data() + at, n * sizeof(T));
    at += n * sizeof(T);
    return out;
  }
};

int main(int argc, char** argv) {
  for (int a = 1; a < argc; ++a) {
    std::ifstream f(argv[a], std::ios::binary);
    Reader r{std::vector<char>(std::istreambuf_iterator<char>(f), {})};
    const auto head = r.take<uint32_t>(3);
    const uint32_t joints = head[0], n = head[1], groups = head[2];
    const auto gl = r.take<uint32_t>(groups * 2);
    const auto mats = r.take<float>(joints * 16);
    std::vector<ozz::math::Float4x4> palette(joints);
    for (uint32_t j = 0; j < joints; ++j) {
      const float* m = &mats[j * 16];
      for (int c = 0; c < 4; ++c) {
        palette[j].cols[c] = ozz::math::simd_float4::Load(m[c * 4], m[c * 4 + 1], m[c * 4 + 2], m[c * 4 + 3]);
      }
    }
    const auto pos = r.take<float>(n * 3);
    const auto nrm = r.take<float>(n * 3);
    std::vector<std::vector<uint16_t>> idx(groups);
    std::vector<std::vector<float>> wgt(groups);
    for (uint32_t g = 0; g < groups; ++g) {
      const uint32_t len = gl[g * 2], k = gl[g * 2 + 1];
      idx[g] = r.take<uint16_t>(len * k);
      wgt[g] = r.take<float>(len * (k > 0 ? k - 1 : 0));
    }
    const auto ref_pos = r.take<float>(n * 3);
    const auto ref_nrm = r.take<float>(n * 3);
    std::vector<float> out_pos(n * 3), out_nrm(n * 3);

    auto run = [&] {
      uint32_t start = 0;
      for (uint32_t g = 0; g < groups; ++g) {
        const uint32_t len = gl[g * 2], k = gl[g * 2 + 1];
        if (k == 0) {
          std::memcpy(&out_pos[start * 3], &pos[start * 3], len * 12);
          std::memcpy(&out_nrm[start * 3], &nrm[start * 3], len * 12);
        } else {
          ozz::geometry::SkinningJob job;
          job.vertex_count = int(len);
          job.influences_count = int(k);
          job.joint_matrices = ozz::make_span(palette);
          job.joint_indices = ozz::span<const uint16_t>(idx[g].data(), idx[g].size());
          job.joint_indices_stride = sizeof(uint16_t) * k;
          if (k > 1) {
            job.joint_weights = ozz::span<const float>(wgt[g].data(), wgt[g].size());
            job.joint_weights_stride = sizeof(float) * (k - 1);
          }
          job.in_positions = ozz::span<const float>(&pos[start * 3], len * 3);
          job.in_positions_stride = 12;
          job.out_positions = ozz::span<float>(&out_pos[start * 3], len * 3);
          job.out_positions_stride = 12;
          job.in_normals = ozz::span<const float>(&nrm[start * 3], len * 3);
          job.in_normals_stride = 12;
          job.out_normals = ozz::span<float>(&out_nrm[start * 3], len * 3);
          job.out_normals_stride = 12;
          if (!job.Run()) {
            std::fprintf(stderr, "SkinningJob failed validation\n");
            std::exit(1);
          }
        }
        start += len;
      }
    };

    const int iters = std::max(1, int(3000000 / std::max<uint32_t>(n, 1) / 4));
    std::vector<double> samples;
    for (int w = 0; w < iters * 5; ++w) run();
    for (int s = 0; s < 31; ++s) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) run();
      auto t1 = std::chrono::steady_clock::now();
      samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / iters / n);
    }
    std::sort(samples.begin(), samples.end());

    // Both must have skinned the same vertices: within 1e-4 (positions in the mesh's units,
    // normals after normalising ozz's), a NaN counting as a mismatch.
    double dp = 0, dn = 0;
    bool same = true;
    for (uint32_t v = 0; v < n; ++v) {
      const float* o = &out_nrm[v * 3];
      const double l = std::sqrt(double(o[0]) * o[0] + double(o[1]) * o[1] + double(o[2]) * o[2]);
      for (int c = 0; c < 3; ++c) {
        const double ep = std::fabs(double(out_pos[v * 3 + c]) - ref_pos[v * 3 + c]);
        const double en = std::fabs(o[c] / l - ref_nrm[v * 3 + c]);
        same = same && ep <= 1e-4 && en <= 1e-4;
        dp = std::max(dp, ep);
        dn = std::max(dn, en);
      }
    }
    std::string name = argv[a];
    name = name.substr(name.find_last_of('/') + 1);
    std::printf(
        "{\"case\": \"%s\", \"build\": \"%s\", \"vertices\": %u, \"ozz_ns_per_vertex\": %.3f, \"min\": %.3f, "
        "\"max\": %.3f, \"max_position_diff\": %.3g, \"max_normal_diff\": %.3g}\n",
        name.c_str(), BUILD_NAME, n, samples[15], samples.front(), samples.back(), dp, dn);
    if (!same) {
      std::fprintf(stderr, "%s: ozz and skelett skinned different vertices\n", name.c_str());
      return 1;
    }
  }
}
