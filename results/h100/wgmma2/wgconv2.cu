// Prototype, not part of the library: the wgmma 1D correlation of results/h100/wgmma/wgconv.cu
// (zero mode, f32 data, n = 2^27; the formulation and layouts are in that file's header), with
// changes to test why that kernel ran its tensor cores at about half their rate:
//
// - Each small product has its own accumulator (no dependent wgmma inside a group), whatever CH.
// - CH = 2: steps alternate between two sets of accumulators, so the wgmma group issued at
//   step q does not depend on the group of step q - 1 still in flight (in wgconv.cu every step
//   accumulates into the registers of the step before). CH = 1: one set, as in wgconv.cu.
// - PROD = 2: the two small products of the three-product split as one bf16 m64n32k16 (A =
//   [lo(x) | hi(x)] in bf16, B = [hi(m) ; lo(m)] in bf16), beside the TF32 head product:
//   two instructions a step instead of three, the bf16 one at the TF32 one's issue time.
//   PROD = 3: three TF32 products; PROD = 1: one TF32 product.
//
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a wgconv2.cu
// Each row: outputs checked against an f64 reference at the library's bound
// ((w + 2) 2^-24 sum|terms|; one product: 3 2^-11 more) and the median of 25 launches.
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
typedef unsigned long long uint64_t;
#endif

constexpr int TILE = 2048;
__host__ __device__ constexpr int tile_in(int q) { return TILE - 32 + 8 * q; }
__host__ __device__ constexpr int buf_floats(int q) { return ((tile_in(q) + 31) / 32) * 40; }
__host__ __device__ constexpr int padpos(int i) { return i + (i >> 5) * 8; }

__device__ __forceinline__ uint32_t smaddr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint64_t mkdesc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr >> 4) & 0x3FFF) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) | ((uint64_t)((sbo >> 4) & 0x3FFF) << 32);
}
#define ACC16(d) "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]), \
  "+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15])
#define OUT16(d) "=f"(d[0]),"=f"(d[1]),"=f"(d[2]),"=f"(d[3]),"=f"(d[4]),"=f"(d[5]),"=f"(d[6]),"=f"(d[7]), \
  "=f"(d[8]),"=f"(d[9]),"=f"(d[10]),"=f"(d[11]),"=f"(d[12]),"=f"(d[13]),"=f"(d[14]),"=f"(d[15])
#define D16 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, "
// ADD = false: the first step of a set writes its accumulators (scale-d 0), so they need no zeroing.
template <bool ADD>
__device__ __forceinline__ void wg_tf32(float* d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint64_t b) {
  if (ADD)
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 " D16 "1, 1, 1;\n"
      : ACC16(d) : "r"(a0),"r"(a1),"r"(a2),"r"(a3),"l"(b));
  else
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 " D16 "0, 1, 1;\n"
      : OUT16(d) : "r"(a0),"r"(a1),"r"(a2),"r"(a3),"l"(b));
}
template <bool ADD>
__device__ __forceinline__ void wg_bf16(float* d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint64_t b) {
  if (ADD)
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 " D16 "1, 1, 1, 0;\n"
      : ACC16(d) : "r"(a0),"r"(a1),"r"(a2),"r"(a3),"l"(b));
  else
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 " D16 "0, 1, 1, 0;\n"
      : OUT16(d) : "r"(a0),"r"(a1),"r"(a2),"r"(a3),"l"(b));
}
__device__ __forceinline__ uint32_t head(uint32_t b) { return (b + 0x1000u) & 0xFFFFE000u; }
// bf16x2 of (lo, hi): lo in the low half (the smaller k index), round to nearest.
__device__ __forceinline__ uint32_t bf2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

template <int Q, int PROD, int CH, int MB>
__global__ void __launch_bounds__(128, MB)
wg_conv2(const float* __restrict__ x, float* __restrict__ y, const float* __restrict__ tab,
         long long n, int left, int lbo, int sbo, long long ntiles) {
  extern __shared__ __align__(1024) float sm[];
  constexpr int NT = PROD == 1 ? 1 : 2;
  constexpr int NACC = PROD == 3 ? 3 : PROD == 2 ? 2 : 1;
  constexpr int TIN = tile_in(Q);
  constexpr int BUF = buf_floats(Q);
  float* bufs = sm + NT * Q * 256;
  const int tid = threadIdx.x % 128;  // not threadIdx.x: see results/h100/wgmma2/README.md
  for (int i = tid; i < NT * Q * 256; i += 128) sm[i] = tab[i];
  __syncthreads();
  const int L4 = (left + 3) & ~3;
  const long long nwg = gridDim.x;
  long long T = blockIdx.x;
  auto issue = [&](long long tt, float* buf) {
    long long s = tt * TILE - L4;
    for (int j = tid; j < (TIN + 3) / 4; j += 128) {
      long long gi = s + 4 * j;
      bool in = gi >= 0 && gi < n;
      const float* src = x + (in ? gi : 0);
      uint32_t dst = smaddr(buf + padpos(4 * j));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(in ? 16 : 0));
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };
  if (T < ntiles) issue(T, bufs); else asm volatile("cp.async.commit_group;\n" ::: "memory");
  const uint32_t thi = smaddr(sm), tlo = smaddr(sm + Q * 256);
  const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  int b = 0;
  for (; T < ntiles; T += nwg) {
    float* cur = bufs + b * BUF;
    long long tn = T + nwg;
    if (tn < ntiles) issue(tn, bufs + (b ^ 1) * BUF);
    else asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    __syncthreads();
    float acc[CH][NACC][16];
    const int r0 = 32 * (16 * w + g) + 2 * t;
    float2 n0 = *reinterpret_cast<const float2*>(cur + padpos(r0));
    float2 n1 = *reinterpret_cast<const float2*>(cur + padpos(r0 + 256));
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      float2 v0 = n0, v1 = n1;
      if (q + 1 < Q) {
        int j0 = r0 + 8 * (q + 1);
        n0 = *reinterpret_cast<const float2*>(cur + padpos(j0));
        n1 = *reinterpret_cast<const float2*>(cur + padpos(j0 + 256));
      }
      const int c = q % CH;
      const bool add = q >= CH;
      uint32_t a0 = __float_as_uint(v0.x), a1 = __float_as_uint(v1.x), a2 = __float_as_uint(v0.y), a3 = __float_as_uint(v1.y);
      uint64_t dhi = mkdesc(thi + q * 1024, lbo, sbo);
      uint64_t dlo = mkdesc(tlo + q * 1024, lbo, sbo);
      if (PROD == 1) {
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        if (add) wg_tf32<true>(acc[c][0], a0, a1, a2, a3, dhi); else wg_tf32<false>(acc[c][0], a0, a1, a2, a3, dhi);
      } else {
        uint32_t h0 = head(a0), h1 = head(a1), h2 = head(a2), h3 = head(a3);
        float l0 = v0.x - __uint_as_float(h0), l1 = v1.x - __uint_as_float(h1);
        float l2 = v0.y - __uint_as_float(h2), l3 = v1.y - __uint_as_float(h3);
        if (PROD == 3) {
          asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
          uint32_t u0 = __float_as_uint(l0), u1 = __float_as_uint(l1), u2 = __float_as_uint(l2), u3 = __float_as_uint(l3);
          if (add) {
            wg_tf32<true>(acc[c][0], h0, h1, h2, h3, dhi);
            wg_tf32<true>(acc[c][1], u0, u1, u2, u3, dhi);
            wg_tf32<true>(acc[c][2], h0, h1, h2, h3, dlo);
          } else {
            wg_tf32<false>(acc[c][0], h0, h1, h2, h3, dhi);
            wg_tf32<false>(acc[c][1], u0, u1, u2, u3, dhi);
            wg_tf32<false>(acc[c][2], h0, h1, h2, h3, dlo);
          }
        } else {
          // A fragment of m16n8k16: a0 row g, k 2t..2t+1 (taps 2t, 2t+1: the low parts);
          // a1 row g + 8; a2 row g, k 2t+8..2t+9 (the same taps' heads); a3 row g + 8.
          uint32_t b0 = bf2(l0, l2), b1 = bf2(l1, l3);
          uint32_t b2 = bf2(__uint_as_float(h0), __uint_as_float(h2)), b3 = bf2(__uint_as_float(h1), __uint_as_float(h3));
          asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
          if (add) {
            wg_tf32<true>(acc[c][0], h0, h1, h2, h3, dhi);
            wg_bf16<true>(acc[c][1], b0, b1, b2, b3, dlo);
          } else {
            wg_tf32<false>(acc[c][0], h0, h1, h2, h3, dhi);
            wg_bf16<false>(acc[c][1], b0, b1, b2, b3, dlo);
          }
        }
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long o0 = T * TILE - (L4 - left);
    const bool inside = o0 >= 0 && o0 + TILE <= n;
#pragma unroll
    for (int i = 0; i < 16; i += 2) {
      int row = 16 * w + g + 8 * ((i >> 1) & 1);
      int col = (i >> 2) * 8 + 2 * t;
      long long o = o0 + 32 * row + col;
      float v[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float big = 0.f, small = 0.f;
#pragma unroll
        for (int c = 0; c < CH; ++c) {
          big += acc[c][0][i + e];
#pragma unroll
          for (int a = 1; a < NACC; ++a) small += acc[c][a][i + e];
        }
        v[e] = big + small;
      }
      if (inside) *reinterpret_cast<float2*>(y + o) = make_float2(v[0], v[1]);
      else { if (o >= 0 && o < n) y[o] = v[0]; if (o + 1 >= 0 && o + 1 < n) y[o + 1] = v[1]; }
    }
    __syncthreads();
    b ^= 1;
  }
}

#ifndef __CUDACC_RTC__
static float head_h(float v) { uint32_t b; memcpy(&b, &v, 4); b = (b + 0x1000u) & 0xFFFFE000u; float r; memcpy(&r, &b, 4); return r; }
static uint16_t bf16_h(float v) {
  uint32_t u; memcpy(&u, &v, 4);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
// TF32 tables: element (q, kl, nn) at byte q*1024 + (nn/8)*256 + (kl/4)*128 + (nn%8)*16 + (kl%4)*4,
// tap u = 8q + 2(kl%4) + kl/4 (wgconv.cu's permutation). bf16 table (PROD 2, after Q*256 floats):
// (q, kl 0..15, nn) at byte q*1024 + (nn/8)*256 + (kl/8)*128 + (nn%8)*16 + (kl%8)*2, tap
// u = 8q + kl%8, value head(m) for kl < 8 (times lo(x)) and m - head(m) for kl >= 8 (times hi(x)).
std::vector<float> build_table(const std::vector<float>& m, int Q, int prod) {
  int w = m.size();
  auto mk = [&](int u, int nn) { int k = u - nn; return (k >= 0 && k < w) ? m[k] : 0.f; };
  std::vector<float> tab((prod == 1 ? 1 : 2) * Q * 256, 0.f);
  for (int q = 0; q < Q; ++q)
    for (int kl = 0; kl < 8; ++kl)
      for (int nn = 0; nn < 32; ++nn) {
        float v = mk(8 * q + 2 * (kl % 4) + kl / 4, nn);
        int off = (q * 1024 + (nn / 8) * 256 + (kl / 4) * 128 + (nn % 8) * 16 + (kl % 4) * 4) / 4;
        if (prod == 1) tab[off] = v;
        else { float h = head_h(v); tab[off] = h; if (prod == 3) tab[Q * 256 + off] = v - h; }
      }
  if (prod == 2) {
    uint16_t* bt = reinterpret_cast<uint16_t*>(tab.data() + Q * 256);
    for (int q = 0; q < Q; ++q)
      for (int kl = 0; kl < 16; ++kl)
        for (int nn = 0; nn < 32; ++nn) {
          float v = mk(8 * q + kl % 8, nn);
          float h = head_h(v);
          int off = (q * 1024 + (nn / 8) * 256 + (kl / 8) * 128 + (nn % 8) * 16 + (kl % 8) * 2) / 2;
          bt[off] = bf16_h(kl < 8 ? h : v - h);
        }
  }
  return tab;
}

template <int Q, int PROD, int CH, int MB>
void run_one(int w, const float* dx, float* dy, long long n, const std::vector<float>& hx, std::vector<float>& hy, double floor_ms) {
  std::mt19937 rng(w * 7 + PROD);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<float> m(w);
  for (auto& v : m) v = U(rng);
  int left0 = w / 2;
  int fp = (4 - left0 % 4) % 4;
  std::vector<float> mp(fp, 0.f); mp.insert(mp.end(), m.begin(), m.end());
  if ((int)mp.size() + 31 > 8 * Q) { printf("front pad does not fit Q\n"); exit(1); }
  int left = left0 + fp;
  auto tab = build_table(mp, Q, PROD);
  float* dt; CK(cudaMalloc(&dt, tab.size() * 4)); CK(cudaMemcpy(dt, tab.data(), tab.size() * 4, cudaMemcpyHostToDevice));
  int nt = PROD == 1 ? 1 : 2;
  size_t smem = (size_t)(nt * Q * 256 + 2 * buf_floats(Q)) * 4;
  auto k = wg_conv2<Q, PROD, CH, MB>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, k));
  int per = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, 128, smem));
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int L4 = (left + 3) & ~3;
  long long ntiles = (n + (L4 - left) + TILE - 1) / TILE;
  int grid = sms * per;
  CK(cudaMemset(dy, 0xFF, n * 4));
  k<<<grid, 128, smem>>>(dx, dy, dt, n, left, 128, 256, ntiles);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
  std::mt19937_64 r2(99);
  long long bad = 0, checked = 0; double worst = 0;
  auto check = [&](long long o) {
    double s = 0, a = 0;
    for (int tt = 0; tt < w; ++tt) { long long i = o - left0 + tt; if (i >= 0 && i < n) { double p = (double)m[tt] * hx[i]; s += p; a += fabs(p); } }
    double bound = PROD == 1 ? (3.0 * std::ldexp(1.0, -11) + (w + 2) * std::ldexp(1.0, -24)) * a : (w + 2) * std::ldexp(1.0, -24) * a;
    double e = fabs((double)hy[o] - s);
    if (!(e <= bound)) ++bad;
    worst = std::max(worst, a > 0 ? e / a : e);
    ++checked;
  };
  for (long long o = 0; o < 5000 && o < n; ++o) check(o);
  for (long long o = std::max(0LL, n - 5000); o < n; ++o) check(o);
  for (int i = 0; i < 200000; ++i) check((long long)(r2() % n));
  float med = 0;
  {
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<float> ts;
    for (int r = 0; r < 25; ++r) {
      CK(cudaEventRecord(e0)); k<<<grid, 128, smem>>>(dx, dy, dt, n, left, 128, 256, ntiles); CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end()); med = ts[ts.size() / 2];
  }
  printf("%sw %3d Q %2d prod %d chains %d minb %d regs %3d blocks/SM %d smem %6zu: checked %lld bad %lld worst rel %.3g | %.4f ms  %.1f%% of floor\n",
         bad ? "CHECK FAILED " : "", w, Q, PROD, CH, MB, fa.numRegs, per, smem, checked, bad, worst, med, med > 0 ? 100.0 * floor_ms / med : 0.0);
  fflush(stdout);
  CK(cudaFree(dt));
}

int main(int argc, char** argv) {
  long long n = 1LL << 27;
  std::vector<float> hx(n), hy(n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  for (auto& v : hx) v = U(rng);
  float *dx, *dy; CK(cudaMalloc(&dx, n * 4)); CK(cudaMalloc(&dy, n * 4));
  CK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
  float* dz; CK(cudaMalloc(&dz, n * 4));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int r = 0; r < 25; ++r) { CK(cudaEventRecord(e0)); CK(cudaMemcpyAsync(dz, dx, n * 4, cudaMemcpyDeviceToDevice)); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms); }
  std::sort(ts.begin(), ts.end());
  double floor_ms = ts[12];
  printf("DtoD 512 MiB %.4f ms, %.0f GB/s: the floor\n", ts[12], 2.0 * n * 4 / (ts[12] * 1e-3) / 1e9);
  CK(cudaFree(dz));
  const char* only = argc > 1 ? argv[1] : "all";
  bool all = !strcmp(only, "all");
  // wgconv.cu's chains (CH 1, small products now in their own accumulators) and the
  // alternating sets (CH 2), three products; then two products; then one.
  if (all || !strcmp(only, "p3")) {
    run_one<16, 3, 1, 1>(96, dx, dy, n, hx, hy, floor_ms);
    run_one<20, 3, 1, 1>(127, dx, dy, n, hx, hy, floor_ms);
    run_one<12, 3, 2, 1>(63, dx, dy, n, hx, hy, floor_ms);
    run_one<16, 3, 2, 1>(96, dx, dy, n, hx, hy, floor_ms);
    run_one<20, 3, 2, 1>(127, dx, dy, n, hx, hy, floor_ms);
    run_one<20, 3, 2, 3>(127, dx, dy, n, hx, hy, floor_ms);
    run_one<36, 3, 2, 1>(255, dx, dy, n, hx, hy, floor_ms);
  }
  if (all || !strcmp(only, "p2")) {
    run_one<12, 2, 2, 1>(63, dx, dy, n, hx, hy, floor_ms);
    run_one<16, 2, 2, 1>(96, dx, dy, n, hx, hy, floor_ms);
    run_one<20, 2, 2, 1>(127, dx, dy, n, hx, hy, floor_ms);
    run_one<36, 2, 2, 1>(255, dx, dy, n, hx, hy, floor_ms);
    run_one<20, 2, 1, 1>(127, dx, dy, n, hx, hy, floor_ms);
    run_one<36, 2, 1, 1>(255, dx, dy, n, hx, hy, floor_ms);
  }
  if (all || !strcmp(only, "p1")) {
    run_one<20, 1, 2, 1>(127, dx, dy, n, hx, hy, floor_ms);
  }
  return 0;
}
#endif
