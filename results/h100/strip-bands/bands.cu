// Prototype, not part of the library: results/h100/stripk/stripk.cu (the 2D register kernel's
// blocked loop for K × K masks) with the strip height a run-time parameter, to measure how the
// height of each warp's strip moves the time: from 8 rows (many waves of blocks, each strip
// copying K − 1 halo rows and running its setup) to one wave of tall bands (each warp one band,
// its setup and halo once).
//
// A warp owns 128 columns (4 per lane) and a strip of ROWS output rows. Its input rows arrive by
// 16-byte cp.async into a ring of RING rows in shared memory (each row the warp's 32 chunks and
// E = ⌈H/4⌉ chunks either side, H = K/2); each pass computes PASS = 4 output rows from the
// PASS + K − 1 input rows they read, every index a compile-time constant, while the copies of
// the next pass's PASS new rows are in flight. Taps by value in the parameter space (constant-
// bank operands of the FFMAs).
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 bands.cu
#ifndef __CUDACC_RTC__
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#else
typedef unsigned int uint32_t;
#endif

constexpr int PASS = 4, WARPS = 4, THREADS = 32 * WARPS;
__host__ __device__ constexpr int ext(int K) { return (K / 2 + 3) / 4; }                 // E
__host__ __device__ constexpr int row_floats(int K) { return 4 * (32 + 2 * ext(K)); }
__host__ __device__ constexpr int ring(int K) { return ((2 * PASS + K - 1) + PASS - 1) / PASS * PASS; }
__host__ __device__ constexpr int chunks(int K) { return ((4 * ext(K) - K / 2) + K + 2) / 4 + 1; }  // window chunks per row
__host__ __device__ constexpr size_t smem_bytes(int K) { return (size_t)WARPS * ring(K) * row_floats(K) * 4; }

template <int K>
struct Taps { float v[K * K]; };

__device__ __forceinline__ uint32_t smaddr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void wait0() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

template <int K, int MINB>
__global__ void __launch_bounds__(THREADS, MINB)
bands(const float* __restrict__ in, float* __restrict__ out, int width, int height, int ROWS, const __grid_constant__ Taps<K> taps) {
  constexpr int H = K / 2, E = ext(K), RF = row_floats(K), RING = ring(K), CH = chunks(K);
  constexpr int S = (4 * E - H);  // the window's first element within the lane's chunk 0
  static_assert(S >= 0 && S < 4, "window start");
  static_assert(RING >= 2 * PASS + K - 1, "ring");
  extern __shared__ __align__(16) float smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float* ringp = smem + warp * RING * RF;
  const uint32_t base = smaddr(ringp);
  const int xw = (blockIdx.x * WARPS + warp) * 128;  // the warp's first output column
  const int y0 = blockIdx.y * ROWS;                  // first output row
  if (xw >= width) return;
  // This lane's copies: chunk `lane`, and chunk 32 + lane for lanes below 2E.
  const int c0 = xw - 4 * E + 4 * lane, c1 = c0 + 128;
  const bool ok0 = c0 >= 0 && c0 < width, ok1 = lane < 2 * E && c1 >= 0 && c1 < width;
  auto issue = [&](int r) {  // input row r of the strip: image row y0 − H + r, ring slot r % RING
    const int y = y0 - H + r;
    const bool oky = y >= 0 && y < height;
    const float* src = in + (size_t)(oky ? y : 0) * width;
    const uint32_t dst = base + (uint32_t)((r % RING) * RF * 4);
    cp16(dst + 16 * lane, src + (ok0 ? c0 : 0), oky && ok0);
    if (lane < 2 * E) cp16(dst + 16 * (32 + lane), src + (ok1 ? c1 : 0), oky && ok1);
  };
  const int out_rows = min(ROWS, height - y0), IN_ROWS = out_rows + K - 1;
  for (int r = 0; r < PASS + K - 1; ++r) issue(r);
  commit();
#pragma unroll 1
  for (int p = 0; p < out_rows; p += PASS) {
    wait0();
    __syncwarp();
#pragma unroll
    for (int k = 0; k < PASS; ++k) {
      const int r = p + PASS + K - 1 + k;
      if (r < IN_ROWS) issue(r);
    }
    commit();
    float acc[PASS][4];
#pragma unroll
    for (int rr = 0; rr < PASS; ++rr)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[rr][q] = 0.f;
#pragma unroll
    for (int i = 0; i < PASS + K - 1; ++i) {
      float cur[CH][4];
      const uint32_t a = base + (uint32_t)(((p + i) % RING) * RF * 4 + 16 * lane);
#pragma unroll
      for (int c = 0; c < CH; ++c) {
        float4 t;
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(t.x), "=f"(t.y), "=f"(t.z), "=f"(t.w) : "r"(a + 16 * c));
        cur[c][0] = t.x; cur[c][1] = t.y; cur[c][2] = t.z; cur[c][3] = t.w;
      }
#pragma unroll
      for (int rr = 0; rr < PASS; ++rr) {
        const int j = i - rr;
        if (j >= 0 && j < K) {
#pragma unroll
          for (int x = 0; x < K; ++x) {
            const float m = taps.v[j * K + x];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int e = S + x + q;
              acc[rr][q] = fmaf(cur[e / 4][e % 4], m, acc[rr][q]);
            }
          }
        }
      }
    }
#pragma unroll
    for (int rr = 0; rr < PASS; ++rr) {
      const int y = y0 + p + rr;
      if (y < height) *reinterpret_cast<float4*>(out + (size_t)y * width + xw + 4 * lane) = make_float4(acc[rr][0], acc[rr][1], acc[rr][2], acc[rr][3]);
    }
  }
}

#ifndef __CUDACC_RTC__
template <int K, int MINB>
void run_one(const float* dx, float* dy, int W, int Hh, const std::vector<float>& hx, std::vector<float>& hy, double floor_ms, int ROWS) {
  std::mt19937 rng(K * 131);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  Taps<K> t;
  for (auto& v : t.v) v = U(rng);
  auto k = bands<K, MINB>;
  const size_t smem = smem_bytes(K);
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, k));
  int per = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, THREADS, smem));
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int gx = (W + 128 * WARPS - 1) / (128 * WARPS);
  const char* tag = "";
  if (ROWS <= 0) {  // -w: the height that fits the image into w waves of blocks
    const int waves = -ROWS, gy = std::max(1, waves * per * sms / gx);
    ROWS = ((Hh + gy - 1) / gy + PASS - 1) / PASS * PASS;
    tag = waves == 1 ? " (one wave)" : " (two waves)";
  }
  dim3 grid(gx, (Hh + ROWS - 1) / ROWS);
  const size_t n = (size_t)W * Hh;
  auto launch = [&] { k<<<grid, THREADS, smem>>>(dx, dy, W, Hh, ROWS, t); };
  CK(cudaMemset(dy, 0xFF, n * 4));
  launch();
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
  const int H = K / 2;
  const double gamma = (K * K + 2) * std::ldexp(1.0, -24);
  long long bad = 0, checked = 0; double worst = 0;
  auto check = [&](int y, int x) {
    double s = 0, a = 0;
    for (int j = 0; j < K; ++j) {
      const int r = y - H + j;
      if (r < 0 || r >= Hh) continue;
      for (int i = 0; i < K; ++i) {
        const int c = x - H + i;
        if (c < 0 || c >= W) continue;
        const double p = (double)t.v[j * K + i] * hx[(size_t)r * W + c];
        s += p; a += fabs(p);
      }
    }
    const double bound = gamma * a + K * K * 1.2e-38;
    const double e = fabs((double)hy[(size_t)y * W + x] - s);
    if (!(e <= bound)) ++bad;
    worst = std::max(worst, e / bound);
    ++checked;
  };
  std::mt19937_64 r2(5);
  for (int i = 0; i < 4000; ++i) { check(i % 40, (int)(r2() % W)); check(Hh - 1 - i % 40, (int)(r2() % W)); check((int)(r2() % Hh), i % 40); check((int)(r2() % Hh), W - 1 - i % 40); }
  for (int i = 0; i < 60000; ++i) check((int)(r2() % Hh), (int)(r2() % W));
  std::vector<float> ts;
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int r = 0; r < 3; ++r) launch();
  for (int r = 0; r < 30; ++r) {
    CK(cudaEventRecord(e0)); launch(); CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  const double med = ts[ts.size() / 2];
  printf("%s%2dx%-2d rows %4d%s grid %ux%u (%.2f waves) regs %3d spill %zu blocks/SM %d: checked %lld bad %lld worst %.3f of bound | %.4f ms (min %.4f) %.1f%% of floor\n",
         bad ? "CHECK FAILED " : "", K, K, ROWS, tag, grid.x, grid.y, (double)grid.x * grid.y / (per * sms), fa.numRegs, fa.localSizeBytes, per, checked, bad, worst, med, ts[0], 100.0 * floor_ms / med);
  fflush(stdout);
}

int main(int argc, char** argv) {
  const int W = 8192, Hh = 8192;
  const size_t n = (size_t)W * Hh;
  std::vector<float> hx(n), hy(n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  for (auto& v : hx) v = U(rng);
  float *dx, *dy, *dz;
  CK(cudaMalloc(&dx, n * 4)); CK(cudaMalloc(&dy, n * 4)); CK(cudaMalloc(&dz, n * 4));
  CK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int r = 0; r < 25; ++r) {
    CK(cudaEventRecord(e0)); CK(cudaMemcpyAsync(dz, dx, n * 4, cudaMemcpyDeviceToDevice)); CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  const double floor_ms = ts[12];
  printf("DtoD 256 MiB %.4f ms, %.0f GB/s: the floor\n", floor_ms, 2.0 * n * 4 / (floor_ms * 1e-3) / 1e9);
  CK(cudaFree(dz));
  if (argc == 3) {  // bands K ROWS: one form (for a profiler)
    const int K = atoi(argv[1]), R = atoi(argv[2]);
    if (K == 9) run_one<9, 5>(dx, dy, W, Hh, hx, hy, floor_ms, R);
    if (K == 11) run_one<11, 4>(dx, dy, W, Hh, hx, hy, floor_ms, R);
    return 0;
  }
  const int sweep[] = {8, 16, 32, 64, 128, -2, -1};
  for (int r : sweep) run_one<7, 5>(dx, dy, W, Hh, hx, hy, floor_ms, r);
  for (int r : sweep) run_one<9, 5>(dx, dy, W, Hh, hx, hy, floor_ms, r);
  for (int r : sweep) run_one<11, 4>(dx, dy, W, Hh, hx, hy, floor_ms, r);
  for (int r : sweep) run_one<13, 4>(dx, dy, W, Hh, hx, hy, floor_ms, r);
  return 0;
}
#endif
