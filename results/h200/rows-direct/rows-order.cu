// Experiment: the batched rows kernel's compute order at w = 31 / 7 (depthwise, zero mode).
// Tiles of 4096 outputs (256 threads), copied by 4-byte cp.async into a ring of 3 buffers
// (the signal's taps copied with them), one barrier per tile. Variants of the compute:
//   V0: the library's order: per group of 4 outputs, per 4-tap chunk: window load + taps load
//   V1: chunk outer, the 4 groups inner: one taps load per chunk for all groups
//   V2: taps in registers, read from shared once per tile
//   V3: 8 outputs per thread (2 groups of 8): one window load + one taps load per 32 FMAs
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

constexpr int T = 256, TILE = 4096;
__device__ __forceinline__ void cp4(float* dst, const float* src, bool ok) {
  unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(d), "l"(src), "r"(ok ? 4 : 0));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void waitg() { asm volatile("cp.async.wait_group %0;" :: "n"(N)); }
__device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }

template <int W> __host__ __device__ constexpr int chunks() { return (W + 3) / 4; }
template <int W> __host__ __device__ constexpr int span() { return TILE + 4 * chunks<W>(); }
template <int W> __host__ __device__ constexpr int slot_elems() { return span<W>() + 4 * chunks<W>(); }

template <int W, int V, int MINB, bool RUN, bool DRAW>
__global__ void __launch_bounds__(T, MINB) rows(const float* __restrict__ in, float* __restrict__ out,
                                                 const float* __restrict__ masks, int nrows, int n, int left, int* counter) {
  extern __shared__ __align__(16) float sm[];
  constexpr int CH = chunks<W>(), SPAN = span<W>(), SLOT = slot_elems<W>();
  const int t = threadIdx.x, grid = gridDim.x;
  const int per_row = (n + TILE - 1) / TILE, total = nrows * per_row;
  auto issue = [&](int slot, int b) {
    if (b < total) {
      int row = b / per_row, tile = b - row * per_row;
      const float* line = in + (size_t)row * n;
      long origin = (long)tile * TILE - left;
      float* dst = sm + slot * SLOT;
      if (origin >= 0 && origin + SPAN <= n) {
        const float* p = line + origin;
#pragma unroll
        for (int j = 0; j < (SPAN + T - 1) / T; j++) { int k = t + j * T; if (k < SPAN) cp4(dst + k, p + k, true); }
      } else {
        for (int k = t; k < SPAN; k += T) { long x = origin + k; bool ok = x >= 0 && x < n; cp4(dst + k, line + (ok ? x : 0), ok); }
      }
      if (t < 4 * CH) cp4(dst + SPAN + t, masks + (size_t)row * W + (t < W ? t : 0), t < W);
    }
    commit();
  };
  auto store4 = [&](float* o, long idx, const float* a) {
    if (idx + 4 <= n) *reinterpret_cast<float4*>(o + idx) = make_float4(a[0], a[1], a[2], a[3]);
    else for (int r = 0; r < 4; r++) if (idx + r < n) o[idx + r] = a[r];
  };
  // Each block a contiguous run of the first total - drawn tiles, then runs of 2 drawn from a counter.
  const int drawn = (DRAW && total >= 4 * grid) ? total / 5 : 0;
  const int fixed = total - drawn;
  int first = RUN ? (int)((long)fixed * blockIdx.x / grid) : blockIdx.x;
  int end = RUN ? (int)((long)fixed * (blockIdx.x + 1) / grid) : fixed;
  const int step = RUN ? 1 : grid;
  __shared__ int drawn_lo;
  while (true) {
    auto iss = [&](int slot, int bb) { issue(slot, bb < end ? bb : total); };
    int b = first;
    iss(0, b); iss(1, b + step);
    int slot = 0;
    for (; b < end; b += step) {
      waitg<1>();
      __syncthreads();
      iss(slot == 0 ? 2 : slot - 1, b + 2 * step);
      const float* s = sm + slot * SLOT;
      const float* taps = s + SPAN;
      int row = b / per_row, tile = b - row * per_row;
      float* line = out + (size_t)row * n;
      long tile_start = (long)tile * TILE;
      if constexpr (V == 0 || V == 2) {
        float tr[V == 2 ? 4 * CH : 1];
        if constexpr (V == 2) {
  #pragma unroll
          for (int c = 0; c < CH; c++) { float4 q = ld4(taps + 4 * c); tr[4*c] = q.x; tr[4*c+1] = q.y; tr[4*c+2] = q.z; tr[4*c+3] = q.w; }
        }
  #pragma unroll 1
        for (int g = 0; g < 4; g++) {
          int base = 4 * (t + g * T);
          long o = tile_start + base;
          if (o < n) {
            float acc[4] = {0, 0, 0, 0};
            float4 lo = ld4(s + base);
  #pragma unroll
            for (int c = 0; c < CH; c++) {
              float4 hi = ld4(s + base + 4 * (c + 1));
              float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
              float tp[4];
              if constexpr (V == 2) { for (int j = 0; j < 4; j++) tp[j] = tr[4 * c + j]; }
              else { float4 q = ld4(taps + 4 * c); tp[0] = q.x; tp[1] = q.y; tp[2] = q.z; tp[3] = q.w; }
  #pragma unroll
              for (int j = 0; j < 4; j++) if (4 * c + j < W)
  #pragma unroll
                for (int r = 0; r < 4; r++) acc[r] = fmaf(x[r + j], tp[j], acc[r]);
              lo = hi;
            }
            store4(line, o, acc);
          }
        }
      } else if constexpr (V == 1) {
        float acc[4][4];
        float4 lo[4];
  #pragma unroll
        for (int g = 0; g < 4; g++) { lo[g] = ld4(s + 4 * (t + g * T)); for (int r = 0; r < 4; r++) acc[g][r] = 0; }
  #pragma unroll
        for (int c = 0; c < CH; c++) {
          float4 q = ld4(taps + 4 * c);
          float tp[4] = {q.x, q.y, q.z, q.w};
  #pragma unroll
          for (int g = 0; g < 4; g++) {
            float4 hi = ld4(s + 4 * (t + g * T) + 4 * (c + 1));
            float x[8] = {lo[g].x, lo[g].y, lo[g].z, lo[g].w, hi.x, hi.y, hi.z, hi.w};
  #pragma unroll
            for (int j = 0; j < 4; j++) if (4 * c + j < W)
  #pragma unroll
              for (int r = 0; r < 4; r++) acc[g][r] = fmaf(x[r + j], tp[j], acc[g][r]);
            lo[g] = hi;
          }
        }
  #pragma unroll
        for (int g = 0; g < 4; g++) { long o = tile_start + 4 * (t + g * T); if (o < n) store4(line, o, acc[g]); }
      } else {
        // 8 outputs per thread, 2 groups: outputs 8 (t + g T) ..
  #pragma unroll 1
        for (int g = 0; g < 2; g++) {
          int base = 8 * (t + g * T);
          long o = tile_start + base;
          if (o < n) {
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            float4 a = ld4(s + base), m = ld4(s + base + 4);
  #pragma unroll
            for (int c = 0; c < CH; c++) {
              float4 hi = ld4(s + base + 8 + 4 * c);
              float x[12] = {a.x, a.y, a.z, a.w, m.x, m.y, m.z, m.w, hi.x, hi.y, hi.z, hi.w};
              float4 q = ld4(taps + 4 * c);
              float tp[4] = {q.x, q.y, q.z, q.w};
  #pragma unroll
              for (int j = 0; j < 4; j++) if (4 * c + j < W)
  #pragma unroll
                for (int r = 0; r < 8; r++) acc[r] = fmaf(x[r + j], tp[j], acc[r]);
              a = m; m = hi;
            }
            store4(line, o, acc);
            store4(line, o + 4, acc + 4);
          }
        }
      }

      slot = slot == 2 ? 0 : slot + 1;
    }
    waitg<0>();
    if (drawn == 0) break;
    if (t == 0) drawn_lo = atomicAdd(counter, 1) * 2;
    __syncthreads();
    int lo = drawn_lo;
    if (lo >= drawn) break;
    first = fixed + lo; end = fixed + min(lo + 2, drawn);
  }
  waitg<0>();
}

template <int W, int V, int MINB, bool RUN = true, bool DRAW = true>
void run(int nrows, int n, float floor_ms, const char* name) {
  size_t N = (size_t)nrows * n;
  std::vector<float> h(N), hm((size_t)nrows * W);
  srand(12345);
  for (auto& v : h) v = (rand() / (float)RAND_MAX) * 2 - 1;
  for (auto& v : hm) v = (rand() / (float)RAND_MAX) * 2 - 1;
  float *din, *dout, *dm;
  CK(cudaMalloc(&din, N * 4)); CK(cudaMalloc(&dout, N * 4)); CK(cudaMalloc(&dm, hm.size() * 4));
  CK(cudaMemcpy(din, h.data(), N * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dm, hm.data(), hm.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0xff, N * 4));
  size_t shm = 3 * slot_elems<W>() * 4;
  auto k = rows<W, V, MINB, RUN, DRAW>;
  int* counter; CK(cudaMalloc(&counter, 4));
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
  int per_sm = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, T, shm));
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int total = nrows * ((n + TILE - 1) / TILE);
  int grid = std::min(total, per_sm * sms);
  int left = W / 2;
  cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, k));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int i = 0; i < 300; i++) { cudaMemsetAsync(counter, 0, 4); k<<<grid, T, shm>>>(din, dout, dm, nrows, n, left, counter); }
  CK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int i = 0; i < 20; i++) {
    cudaMemsetAsync(counter, 0, 4); cudaEventRecord(e0); k<<<grid, T, shm>>>(din, dout, dm, nrows, n, left, counter); cudaEventRecord(e1);
    cudaEventSynchronize(e1); float x; cudaEventElapsedTime(&x, e0, e1); ms.push_back(x);
  }
  CK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  std::vector<float> o(N);
  CK(cudaMemcpy(o.data(), dout, N * 4, cudaMemcpyDeviceToHost));
  double maxerr = 0;
  auto check = [&](size_t i) {
    size_t r = i / n; long p = i % n; double acc = 0;
    for (int j = 0; j < W; j++) { long x = p - left + j; if (x >= 0 && x < n) acc += (double)h[r * n + x] * hm[r * W + j]; }
    maxerr = std::max(maxerr, std::fabs(acc - o[i]));
    if (!(std::fabs(acc - o[i]) < 1e-3)) { printf("MISMATCH %s at %zu: %g vs %g\n", name, i, o[i], acc); exit(1); }
  };
  for (size_t i = 0; i < N; i += 997) check(i);
  for (size_t r = 0; r < (size_t)nrows; r += 7) { for (int p = 0; p < 40; p++) { check(r * n + p); check(r * n + n - 1 - p); } }
  printf("%-28s %2d blocks/SM %3d regs %5zu B spill-ish(local %zu)  %.4f ms  %.1f%% of floor  maxerr %.2e\n", name, per_sm,
         fa.numRegs, shm, fa.localSizeBytes, ms[10], 100 * floor_ms / ms[10], maxerr);
  cudaFree(din); cudaFree(dout); cudaFree(dm); cudaFree(counter);
}

int main() {
  size_t bytes = 512u << 20; void *a, *b; CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int i = 0; i < 100; i++) cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
  std::vector<float> ms;
  for (int i = 0; i < 20; i++) { cudaEventRecord(e0); cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice); cudaEventRecord(e1); cudaEventSynchronize(e1); float x; cudaEventElapsedTime(&x, e0, e1); ms.push_back(x); }
  std::sort(ms.begin(), ms.end());
  double bw = 2.0 * bytes / (ms[10] * 1e-3);
  printf("DtoD %.0f GB/s\n", bw / 1e9);
  cudaFree(a); cudaFree(b);
  float floor_ms = 2.0 * 4 * (1 << 27) / bw * 1e3;
  for (int pass = 0; pass < 2; pass++) {
    run<31, 0, 4, true, false>(64, 1 << 21, floor_ms, "w31 V0 runs, no draws");
    run<31, 0, 4>(64, 1 << 21, floor_ms, "w31 V0 drawn");
    run<31, 1, 4>(64, 1 << 21, floor_ms, "w31 V1 drawn");
    run<31, 2, 4>(64, 1 << 21, floor_ms, "w31 V2 drawn");
    run<31, 2, 3>(64, 1 << 21, floor_ms, "w31 V2 drawn (3)");
    run<7, 0, 4, true, false>(1024, 1 << 17, floor_ms, "w7 V0 runs, no draws");
    run<7, 0, 4>(1024, 1 << 17, floor_ms, "w7 V0 drawn");
    run<7, 1, 4>(1024, 1 << 17, floor_ms, "w7 V1 drawn");
    run<7, 2, 4>(1024, 1 << 17, floor_ms, "w7 V2 drawn");
  }
}
