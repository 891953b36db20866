// ozz-animation 0.16's IKTwoBoneJob and IKAimJob on the workload of skelett's
// `cargo bench -p skelett --bench ik` (see crates/skelett/benches/ik.rs): the same leg, head,
// targets (the same xorshift) and settings, for comparing the two in one session.
// Prints one JSON line per job: median ns per solve over 30 samples of 100k solves.
// Build and run: scripts/bench/ozz_ik_bench.sh OZZ_SRC (ozz's source, tag 0.16.0).
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "ozz/animation/runtime/ik_aim_job.h"
#include "ozz/animation/runtime/ik_two_bone_job.h"
#include "ozz/base/maths/simd_math.h"
#include "ozz/base/maths/simd_quaternion.h"

using namespace ozz::math;

static std::vector<float> uniform(size_t n) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  std::vector<float> out;
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    out.push_back(float(s >> 40) / float(1ull << 24));
  }
  return out;
}

template <typename F>
static double median_ns(F&& f) {
  const int iters = 100000;
  std::vector<double> samples;
  for (int w = 0; w < 3; ++w) {
    for (int i = 0; i < iters; ++i) f(i);
  }
  for (int s = 0; s < 30; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) f(i);
    auto t1 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

int main() {
  // The leg: model matrices of hip, knee, ankle (no rotation), as skelett's bench builds.
  const Float4x4 hip = Float4x4::Translation(simd_float4::Load(0.f, 0.f, 0.f, 1.f));
  const Float4x4 knee = Float4x4::Translation(simd_float4::Load(0.f, -0.45f, 0.02f, 1.f));
  const Float4x4 ankle = Float4x4::Translation(simd_float4::Load(0.f, -0.9f, 0.f, 1.f));
  std::vector<SimdFloat4> leg_targets;
  {
    auto u = uniform(768);
    for (size_t i = 0; i < 256; ++i) {
      float x = u[3 * i] - 0.5f, y = -1.f, z = u[3 * i + 1] - 0.5f;
      float len = std::sqrt(x * x + y * y + z * z);
      float d = 0.3f + 0.58f * u[3 * i + 2];
      leg_targets.push_back(simd_float4::Load(x / len * d, y / len * d, z / len * d, 1.f));
    }
  }
  SimdQuaternion local[2] = {SimdQuaternion::identity(), SimdQuaternion::identity()};
  SimdQuaternion start_c, mid_c;
  bool reached = false;
  ozz::animation::IKTwoBoneJob two;
  two.pole_vector = simd_float4::z_axis();
  two.mid_axis = simd_float4::x_axis();
  two.start_joint = &hip;
  two.mid_joint = &knee;
  two.end_joint = &ankle;
  two.start_joint_correction = &start_c;
  two.mid_joint_correction = &mid_c;
  two.reached = &reached;
  // One solve: the job, then its corrections multiplied into the local rotations.
  auto solve_two = [&](int i) {
    local[0] = SimdQuaternion::identity();
    local[1] = SimdQuaternion::identity();
    two.target = leg_targets[i & 255];
    two.Run();
    local[0] = local[0] * start_c;
    local[1] = local[1] * mid_c;
    asm volatile("" : : "g"(&local) : "memory");
  };
  double two_ns = median_ns(solve_two);
  two.soften = 0.97f;
  two.weight = 0.8f;
  double two_soft_ns = median_ns(solve_two);

  // The head: at 1.6 m, no rotation; eyes 7 cm up, 10 cm forward; +Z forward, +Y up.
  const Float4x4 head = Float4x4::Translation(simd_float4::Load(0.f, 1.6f, 0.f, 1.f));
  std::vector<SimdFloat4> aim_targets;
  {
    auto u = uniform(768);
    for (size_t i = 0; i < 256; ++i) {
      aim_targets.push_back(simd_float4::Load(4.f * u[3 * i] - 2.f, 1.6f + 2.f * u[3 * i + 1] - 1.f,
                                              1.f + 4.f * u[3 * i + 2], 1.f));
    }
  }
  SimdQuaternion head_c;
  ozz::animation::IKAimJob aim;
  aim.forward = simd_float4::z_axis();
  aim.offset = simd_float4::Load(0.f, 0.07f, 0.1f, 0.f);
  aim.up = simd_float4::y_axis();
  aim.pole_vector = simd_float4::y_axis();
  aim.joint = &head;
  aim.joint_correction = &head_c;
  aim.reached = &reached;
  double aim_ns = median_ns([&](int i) {
    local[0] = SimdQuaternion::identity();
    aim.target = aim_targets[i & 255];
    aim.Run();
    local[0] = local[0] * head_c;
    asm volatile("" : : "g"(&local) : "memory");
  });
  std::printf("{\"job\": \"IKTwoBoneJob\", \"ns_per_solve\": %.2f}\n", two_ns);
  std::printf("{\"job\": \"IKTwoBoneJob soften 0.97 weight 0.8\", \"ns_per_solve\": %.2f}\n", two_soft_ns);
  std::printf("{\"job\": \"IKAimJob\", \"ns_per_solve\": %.2f}\n", aim_ns);
  return 0;
}
