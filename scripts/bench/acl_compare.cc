// ACL (animation compression library, built from source) on the CMU clips of skelett's
// compression bench (crates/skelett/benches/compress.rs), for comparing the two in one
// session on the same samples: compression time, ratio, ACL's own measured error, and pose
// decompression warm and cold.
//
// Input: the files that bench writes with SKELETT_ACL_CASES=DIR (little-endian): u32 joints,
// u32 frames, f32 frame rate, f32 centimetres per unit; i32 parents (-1 for roots); frames x
// joints x 10 f32 (rotation x y z w, translation, scale).
// ACL's default settings (compress.h's get_default_compression_settings), its qvvf error
// metric, precision 0.01 cm and shell distance 3 cm converted to the clip's units (ACL's
// defaults in centimetres). The ratio is skelett's: raw = 10 f32 per joint per frame,
// divided by the compressed size.
// Prints one JSON line per file: median compression time over three runs; decompression of
// a whole pose at random times, warm (one copy) and cold (256 copies in turn), ns per joint.
// Build and run: scripts/bench/acl_compare.sh ACL_SRC DIR
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <acl/compression/compress.h>
#include <acl/compression/track_array.h>
#include <acl/compression/track_error.h>
#include <acl/compression/transform_error_metrics.h>
#include <acl/core/ansi_allocator.h>
#include <acl/decompression/decompress.h>

#ifndef BUILD_NAME
#define BUILD_NAME "sse2"
#endif

struct Writer final : public acl::track_writer {
  std::vector<rtm::qvvf>& pose;
  explicit Writer(std::vector<rtm::qvvf>& p) : pose(p) {}
  void RTM_SIMD_CALL write_rotation(uint32_t i, rtm::quatf_arg0 r) { pose[i].rotation = r; }
  void RTM_SIMD_CALL write_translation(uint32_t i, rtm::vector4f_arg0 t) { pose[i].translation = t; }
  void RTM_SIMD_CALL write_scale(uint32_t i, rtm::vector4f_arg0 s) { pose[i].scale = s; }
};

template <typename T>
static T take(const std::vector<char>& b, size_t& at) {
  T v;
  if (at + sizeof(T) > b.size()) {
    std::fprintf(stderr, "file too short at byte %zu\n", at);
    std::exit(1);
  }
  std::memcpy(&v, b.data() + at, sizeof(T));
  at += sizeof(T);
  return v;
}

int main(int argc, char** argv) {
  acl::ansi_allocator allocator;
  for (int a = 1; a < argc; ++a) {
    std::ifstream f(argv[a], std::ios::binary);
    const std::vector<char> b{std::istreambuf_iterator<char>(f), {}};
    size_t at = 0;
    const uint32_t joints = take<uint32_t>(b, at), frames = take<uint32_t>(b, at);
    const float rate = take<float>(b, at), cm = take<float>(b, at);
    std::vector<int32_t> parents(joints);
    for (auto& p : parents) p = take<int32_t>(b, at);

    acl::track_array_qvvf tracks(allocator, joints);
    for (uint32_t j = 0; j < joints; ++j) {
      acl::track_desc_transformf desc;
      desc.output_index = j;
      desc.parent_index = parents[j] < 0 ? acl::k_invalid_track_index : uint32_t(parents[j]);
      desc.precision = 0.01f / cm;
      desc.shell_distance = 3.0f / cm;
      tracks[j] = acl::track_qvvf::make_reserve(desc, allocator, frames, rate);
    }
    for (uint32_t s = 0; s < frames; ++s) {
      for (uint32_t j = 0; j < joints; ++j) {
        float v[10];
        for (float& x : v) x = take<float>(b, at);
        tracks[j][s] = rtm::qvv_set(rtm::quat_set(v[0], v[1], v[2], v[3]), rtm::vector_set(v[4], v[5], v[6]),
                                    rtm::vector_set(v[7], v[8], v[9]));
      }
    }

    acl::qvvf_transform_error_metric metric;
    acl::compression_settings settings = acl::get_default_compression_settings();
    settings.error_metric = &metric;
    std::vector<double> ms;
    acl::compressed_tracks* out = nullptr;
    for (int r = 0; r < 3; ++r) {
      if (out) allocator.deallocate(out, out->get_size());
      out = nullptr;
      acl::output_stats stats;
      auto t0 = std::chrono::steady_clock::now();
      const acl::error_result res = acl::compress_track_list(allocator, tracks, settings, out, stats);
      auto t1 = std::chrono::steady_clock::now();
      if (res.any()) {
        std::fprintf(stderr, "ACL: %s\n", res.c_str());
        return 1;
      }
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());

    acl::decompression_context<acl::default_transform_decompression_settings> context;
    context.initialize(*out);
    const acl::track_error err = acl::calculate_compression_error(allocator, tracks, context, metric);

    // Decompression: a whole pose at random times.
    std::vector<rtm::qvvf> pose(joints);
    Writer writer(pose);
    const float duration = float(frames - 1) / rate;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0.0f, duration);
    std::vector<float> times(1024);
    for (auto& t : times) t = u(rng);
    auto per_joint = [&](auto&& step, int iters) {
      std::vector<double> samples;
      for (int w = 0; w < iters; ++w) step(w);
      for (int s = 0; s < 31; ++s) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) step(i);
        auto t1 = std::chrono::steady_clock::now();
        samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / iters / joints);
      }
      std::sort(samples.begin(), samples.end());
      return samples[15];
    };
    const double warm = per_joint(
        [&](int i) {
          context.seek(times[i & 1023], acl::sample_rounding_policy::none);
          context.decompress_tracks(writer);
        },
        4096);
    // Cold: 256 copies of the compressed data, each with its own context, in turn.
    const uint32_t size = out->get_size();
    std::vector<acl::compressed_tracks*> copies;
    std::vector<acl::decompression_context<acl::default_transform_decompression_settings>> contexts(256);
    for (int c = 0; c < 256; ++c) {
      void* mem = allocator.allocate(size, alignof(acl::compressed_tracks));
      std::memcpy(mem, out, size);
      copies.push_back(static_cast<acl::compressed_tracks*>(mem));
      contexts[c].initialize(*copies.back());
    }
    const double cold = per_joint(
        [&](int i) {
          auto& c = contexts[(i * 97) & 255];
          c.seek(times[i & 1023], acl::sample_rounding_policy::none);
          c.decompress_tracks(writer);
        },
        4096);

    std::string name = argv[a];
    name = name.substr(name.find_last_of('/') + 1);
    const double raw = double(joints) * frames * 40.0;
    std::printf(
        "{\"case\": \"%s\", \"build\": \"%s\", \"joints\": %u, \"frames\": %u, \"acl_compress_ms\": %.1f, \"acl_compress_ms_min\": %.1f, "
        "\"acl_ratio\": %.2f, \"acl_bytes\": %u, \"acl_max_error_cm\": %.5f, \"acl_decompress_warm_ns_per_joint\": %.2f, "
        "\"acl_decompress_cold_ns_per_joint\": %.2f}\n",
        name.c_str(), BUILD_NAME, joints, frames, ms[1], ms[0], raw / size, size, err.error * cm, warm, cold);
    for (auto* c : copies) allocator.deallocate(c, size);
    allocator.deallocate(out, size);
  }
}
