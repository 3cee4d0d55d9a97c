// Prototype, not part of the library: 1D correlation (zero mode, f32 data) on Hopper's
// wgmma (sm_90a), to measure what the warpgroup instructions give the wide-mask kernels.
//
// Formulation (the transpose of conv1d_tensor_f32's): a warpgroup owns 64 rows of 32 outputs;
// row c starts 32c outputs into the tile. D[c][j] = sum_u A[c][u] * B[u][j] with
// A[c][u] = x[s + 32c + u] (the data, from registers: the mma.m16n8k8 A fragment per warp) and
// B[u][j] = m[u - j] (the mask's band, 8Q x 32, in shared memory in the canonical K-major
// layout without swizzle: core matrices of 8 rows x 16 bytes, LBO = 128 bytes between the two
// k halves, SBO = 256 bytes between groups of 8 columns). One wgmma.m64n32k8 per 8 taps and
// product; Q = ceil((w + 31) / 8) (taps padded in front so that `left` is a multiple of 4 and
// the outputs leave as aligned 8-byte stores). f32 accuracy: three TF32 products of split
// operands as in the library (heads rounded to nearest, the small products accumulated apart).
// The k index is permuted (k -> 2(k % 4) + k / 4) so that each lane's two A elements of a row
// are neighbours (one 64-bit shared load); inputs are stored 40 floats per 32 (conflict-free).
//
// Macros: PF=1 loads the next step's A fragment before the current step's wgmma (kept);
// WAITN = wgmma groups left in flight per step; WGS = warpgroups per block (sharing the tables);
// MINB = the launch bound's blocks per SM.
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -DPF=1 wgconv.cu
// Each row prints the outputs checked against an f64 reference at the library's bound
// ((w + 2) 2^-24 sum|terms|; TF32: 3 2^-11 more) and the median of 25 launches on n = 2^27.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

#ifndef WGS
#define WGS 1
#endif
#ifndef PF
#define PF 0
#endif
#ifndef WAITN
#define WAITN 1
#endif
#ifndef MINB
#define MINB 1
#endif
constexpr int TILE = 2048 * WGS;
__host__ __device__ constexpr int tile_in(int q) { return TILE - 32 + 8 * q; }
__host__ __device__ constexpr int buf_floats(int q) { return ((tile_in(q) + 31) / 32) * 40; }
__host__ __device__ constexpr int padpos(int i) { return i + (i >> 5) * 8; }

__device__ __forceinline__ uint32_t smaddr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint64_t mkdesc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr >> 4) & 0x3FFF) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) | ((uint64_t)((sbo >> 4) & 0x3FFF) << 32);
}
__device__ __forceinline__ void wg32(float* d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
    "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, 1;\n"
    : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),
      "+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15])
    : "r"(a0),"r"(a1),"r"(a2),"r"(a3),"l"(b));
}
__device__ __forceinline__ uint32_t head(uint32_t b) { return (b + 0x1000u) & 0xFFFFE000u; }

template <int Q, int PROD, int NBUF>
__global__ void __launch_bounds__(128 * WGS, MINB)
wg_conv(const float* __restrict__ x, float* __restrict__ y, const float* __restrict__ tab,
        long long n, int left, int lbo, int sbo, long long ntiles) {
  extern __shared__ __align__(1024) float sm[];
  constexpr int NT = PROD == 1 ? 1 : 2;
  constexpr int TIN = tile_in(Q);
  constexpr int BUF = buf_floats(Q);
  float* bufs = sm + NT * Q * 256;
  const int tid = threadIdx.x % (128 * WGS);
  float* mybuf = bufs;
  for (int i = threadIdx.x; i < NT * Q * 256; i += blockDim.x) sm[i] = tab[i];
  __syncthreads();
  const int L4 = (left + 3) & ~3;
  const long long nwg = gridDim.x;
  long long T = blockIdx.x;
  auto issue = [&](long long tt, float* buf) {
    long long s = tt * TILE - L4;
    for (int j = tid; j < (TIN + 3) / 4; j += 128 * WGS) {
      long long gi = s + 4 * j;
      bool in = gi >= 0 && gi < n;
      const float* src = x + (in ? gi : 0);
      uint32_t dst = smaddr(buf + padpos(4 * j));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(in ? 16 : 0));
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };
#pragma unroll
  for (int k = 0; k < NBUF - 1; ++k) {
    long long tk = T + k * nwg;
    if (tk < ntiles) issue(tk, mybuf + k * BUF); else asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  const uint32_t thi = smaddr(sm), tlo = smaddr(sm + Q * 256);
  const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;  // w: warp in block, rows 16w..16w+15
  int b = 0;
  for (; T < ntiles; T += nwg) {
    float* cur = mybuf + b * BUF;
    long long tn = T + (NBUF - 1) * nwg;
    int bn = b == 0 ? NBUF - 1 : b - 1;
    if (tn < ntiles) issue(tn, mybuf + bn * BUF);
    else asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.wait_group %0;\n" :: "n"(NBUF - 1) : "memory");
    __syncthreads();
    float big[16], small[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) { big[i] = 0.f; small[i] = 0.f; }
    const int r0 = 32 * (16 * w + g) + 2 * t;
#if PF
    float2 n0 = *reinterpret_cast<const float2*>(cur + padpos(r0));
    float2 n1 = *reinterpret_cast<const float2*>(cur + padpos(r0 + 256));
#endif
#pragma unroll
    for (int q = 0; q < Q; ++q) {
#if PF
      float2 v0 = n0, v1 = n1;
      if (q + 1 < Q) {
        int j0 = r0 + 8 * (q + 1);
        n0 = *reinterpret_cast<const float2*>(cur + padpos(j0));
        n1 = *reinterpret_cast<const float2*>(cur + padpos(j0 + 256));
      }
#else
      int i0 = r0 + 8 * q, i1 = i0 + 256;
      float2 v0 = *reinterpret_cast<const float2*>(cur + padpos(i0));
      float2 v1 = *reinterpret_cast<const float2*>(cur + padpos(i1));
#endif
      uint32_t a0 = __float_as_uint(v0.x), a1 = __float_as_uint(v1.x), a2 = __float_as_uint(v0.y), a3 = __float_as_uint(v1.y);
      uint64_t dhi = mkdesc(thi + q * 1024, lbo, sbo);
      if (PROD == 1) {
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        wg32(big, a0, a1, a2, a3, dhi);
      } else {
        uint32_t h0 = head(a0), h1 = head(a1), h2 = head(a2), h3 = head(a3);
        uint32_t l0 = __float_as_uint(v0.x - __uint_as_float(h0)), l1 = __float_as_uint(v1.x - __uint_as_float(h1));
        uint32_t l2 = __float_as_uint(v0.y - __uint_as_float(h2)), l3 = __float_as_uint(v1.y - __uint_as_float(h3));
        uint64_t dlo = mkdesc(tlo + q * 1024, lbo, sbo);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        wg32(big, h0, h1, h2, h3, dhi);
        wg32(small, l0, l1, l2, l3, dhi);
        wg32(small, h0, h1, h2, h3, dlo);
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(WAITN) : "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const long long o0 = T * TILE - (L4 - left);
    const bool inside = o0 >= 0 && o0 + TILE <= n;
#pragma unroll
    for (int i = 0; i < 16; i += 2) {
      int row = 16 * w + g + 8 * ((i >> 1) & 1);
      int col = (i >> 2) * 8 + 2 * t;
      long long o = o0 + 32 * row + col;
      float v0 = PROD == 1 ? big[i] : big[i] + small[i];
      float v1 = PROD == 1 ? big[i + 1] : big[i + 1] + small[i + 1];
      if (inside) *reinterpret_cast<float2*>(y + o) = make_float2(v0, v1);
      else { if (o >= 0 && o < n) y[o] = v0; if (o + 1 >= 0 && o + 1 < n) y[o + 1] = v1; }
    }
    __syncthreads();
    b = b + 1 == NBUF ? 0 : b + 1;
  }
}

// host table: element (q, kl, nn) at byte q*1024 + (nn/8)*NS + (kl/4)*KS + (nn%8)*16 + (kl%4)*4
static float head_h(float v) { uint32_t b; memcpy(&b, &v, 4); b = (b + 0x1000u) & 0xFFFFE000u; float r; memcpy(&r, &b, 4); return r; }
std::vector<float> build_table(const std::vector<float>& m, int Q, int prod, int KS, int NS) {
  int w = m.size();
  int nt = prod == 1 ? 1 : 2;
  std::vector<float> tab(nt * Q * 256, 0.f);
  for (int q = 0; q < Q; ++q)
    for (int kl = 0; kl < 8; ++kl)
      for (int nn = 0; nn < 32; ++nn) {
        int u = 8 * q + 2 * (kl % 4) + kl / 4;
        int k = u - nn;
        float v = (k >= 0 && k < w) ? m[k] : 0.f;
        int off = (q * 1024 + (nn / 8) * NS + (kl / 4) * KS + (nn % 8) * 16 + (kl % 4) * 4) / 4;
        if (prod == 1) tab[off] = v;
        else { float h = head_h(v); tab[off] = h; tab[Q * 256 + off] = v - h; }
      }
  return tab;
}

template <int Q, int PROD, int NBUF>
void run_one(int w, const float* dx, float* dy, long long n, const std::vector<float>& hx, std::vector<float>& hy,
             double floor_ms, int lbo, int sbo, int KS, int NS, const char* cfg, bool timeit) {
  std::mt19937 rng(w * 7 + PROD);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<float> m(w);
  for (auto& v : m) v = U(rng);
  int left0 = w / 2;
  int fp = (4 - left0 % 4) % 4;
  std::vector<float> mp(fp, 0.f); mp.insert(mp.end(), m.begin(), m.end());
  if ((int)mp.size() + 31 > 8 * Q) { printf("front pad does not fit Q\n"); exit(1); }
  int left = left0 + fp;
  auto tab = build_table(mp, Q, PROD, KS, NS);
  float* dt; CK(cudaMalloc(&dt, tab.size() * 4)); CK(cudaMemcpy(dt, tab.data(), tab.size() * 4, cudaMemcpyHostToDevice));
  int nt = PROD == 1 ? 1 : 2;
  size_t smem = (size_t)(nt * Q * 256 + NBUF * buf_floats(Q)) * 4;
  auto k = wg_conv<Q, PROD, NBUF>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int per = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, 128 * WGS, smem));
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int L4 = (left + 3) & ~3;
  long long ntiles = (n + (L4 - left) + TILE - 1) / TILE;
  int grid = sms * per;
  CK(cudaMemset(dy, 0xFF, n * 4));
  k<<<grid, 128 * WGS, smem>>>(dx, dy, dt, n, left, lbo, sbo, ntiles);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
  // check
  std::mt19937_64 r2(99);
  long long bad = 0, checked = 0; double worst = 0;
  auto check = [&](long long o) {
    double s = 0, a = 0;
    for (int tt = 0; tt < w; ++tt) { long long i = o - left0 + tt; if (i >= 0 && i < n) { double p = (double)m[tt] * hx[i]; s += p; a += fabs(p); } }
    double bound = PROD == 1 ? (3.0 * std::ldexp(1.0, -11) + (w + 2) * std::ldexp(1.0, -24)) * a : (w + 2) * std::ldexp(1.0, -24) * a;
    double e = fabs((double)hy[o] - s);
    double rel = a > 0 ? e / a : e;
    if (!(e <= bound)) ++bad;
    worst = std::max(worst, rel);
    ++checked;
  };
  for (long long o = 0; o < 5000 && o < n; ++o) check(o);
  for (long long o = std::max(0LL, n - 5000); o < n; ++o) check(o);
  for (int i = 0; i < 200000; ++i) check((long long)(r2() % n));
  float med = 0;
  if (timeit && bad == 0) {
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<float> ts;
    for (int r = 0; r < 25; ++r) {
      CK(cudaEventRecord(e0)); k<<<grid, 128 * WGS, smem>>>(dx, dy, dt, n, left, lbo, sbo, ntiles); CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end()); med = ts[ts.size() / 2];
  }
  printf("nbuf %d w %3d Q %2d prod %d cfg %s blocks/SM %d smem %zu: checked %lld bad %lld worst rel %.3g | %.4f ms  %.1f%% of floor\n",
         NBUF, w, Q, PROD, cfg, per, smem, checked, bad, worst, med, med > 0 ? 100.0 * floor_ms / med : 0.0);
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
  // floor: DtoD of 512 MiB
  float* dz; CK(cudaMalloc(&dz, n * 4));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int r = 0; r < 25; ++r) { CK(cudaEventRecord(e0)); CK(cudaMemcpyAsync(dz, dx, n * 4, cudaMemcpyDeviceToDevice)); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms); }
  std::sort(ts.begin(), ts.end());
  double bw = 2.0 * n * 4 / (ts[12] * 1e-3);
  double floor_ms = 2.0 * n * 4 / bw * 1e3;
  printf("DtoD 512 MiB %.4f ms, %.0f GB/s, floor %.4f ms\n", ts[12], bw / 1e9, floor_ms);
  CK(cudaFree(dz));
  run_one<12, 3, 2>(63, dx, dy, n, hx, hy, floor_ms, 128, 256, 128, 256, "A", true);
  run_one<16, 3, 2>(96, dx, dy, n, hx, hy, floor_ms, 128, 256, 128, 256, "A", true);
  run_one<20, 3, 2>(127, dx, dy, n, hx, hy, floor_ms, 128, 256, 128, 256, "A", true);
  run_one<36, 3, 2>(255, dx, dy, n, hx, hy, floor_ms, 128, 256, 128, 256, "A", true);
  run_one<20, 1, 2>(127, dx, dy, n, hx, hy, floor_ms, 128, 256, 128, 256, "A", true);
  return 0;
}
