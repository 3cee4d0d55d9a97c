// Prototype, not part of the library: a fused separable correlation (zero mode, f32, 8192²)
// with both passes on tensor cores (mma.sync m16n8k8 TF32), to measure whether the separable
// filter's wide masks (21 × 21 to 31 × 31, instruction-bound on FMAs) reach 80% of the floor.
//
// Formulation (per pass, as the library's 2D tensor kernel): the data is A (16 × 8: 16 rows of
// 8 inputs for the row pass, 16 columns of 8 intermediate rows for the column pass), a Toeplitz
// block of the taps is B (8 inputs × 8 outputs: B[u][j] = m[8q + u − j]), S = ⌈(2H + 8)/8⌉
// steps cover a window of 2H + 1 taps for 8 outputs. Each data fragment is loaded and split once
// and meets every step that uses it.
//
// Block: 8 warps, a tile of 96 rows × 64 columns of outputs (the row pass in items of 16 rows ×
// 32 columns, two per warp; the column pass in items of 16 columns × 8·CN rows), walked grid-stride by a persistent
// grid. The input tile (128 rows × 100 columns from 16 left of the tile, zero outside the image)
// arrives by 16-byte cp.async while the block runs the previous tile's column pass; the row
// pass writes the intermediate (rounded to f32, 128 × 64) to shared memory; the column pass
// reads it and stores the outputs.
//
// Precision P: 3 = three TF32 products of split operands (the small ones accumulated apart),
// RND = the inputs' remainders rounded to TF32 (else truncated by the tensor core); 1 = one
// TF32 product (the fast precision's cost). No non-finite handling (a library kernel would
// recompute a tile with an infinite or NaN output).
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 septc.cu
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

constexpr int TX = 64, TY = 96, WARPS = 8, THREADS = 32 * WARPS;
constexpr int IP = 100;   // input tile pitch (floats), 4 mod 32: a fragment's 8 rows × 4 columns in distinct banks
constexpr int TP = 72;    // intermediate pitch, 8 mod 32: 4 rows × 8 columns in distinct banks
constexpr int RIN = 128;  // rows of both tiles (8 bands of 16)
constexpr int CHUNKS = IP / 4;
constexpr int TAP_PAD = 16;  // zeros either side of the host's tap arrays
__host__ __device__ constexpr int steps_of(int H) { return (2 * H + 15) / 8; }
constexpr size_t SMEM = (size_t)(RIN * IP + RIN * TP) * 4;

__device__ __forceinline__ uint32_t smaddr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n"); }
__device__ __forceinline__ void wait0() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void mma(float* d, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// x = head + remainder: the head rounded to TF32 (to nearest), the remainder exact in f32, then
// rounded to TF32 too when RND.
template <bool RND>
__device__ __forceinline__ void split(float x, uint32_t& h, uint32_t& l) {
  uint32_t hb = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  h = hb;
  uint32_t lb = __float_as_uint(x - __uint_as_float(hb));
  l = RND ? ((lb + 0x1000u) & 0xffffe000u) : lb;
}

// One pass over a warp's data: NT blocks of 8 outputs, fragments f = 0 … NT + S − 2 read by
// `frag(f, a)`; block k takes step q = f − k. Results (16 × 8 per block) in acc[k].
template <int S, int NT, int P, bool RND, typename Frag>
__device__ __forceinline__ void pass(float (&acc)[NT][4], const uint32_t (&bh)[S][2], const uint32_t (&bl)[S][2], Frag frag) {
  float sml[NT][4];
#pragma unroll
  for (int k = 0; k < NT; ++k)
#pragma unroll
    for (int r = 0; r < 4; ++r) acc[k][r] = 0.f, sml[k][r] = 0.f;
#pragma unroll
  for (int f = 0; f < NT + S - 1; ++f) {
    float x[4];
    frag(f, x);
    uint32_t h[4], l[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (P == 1) h[i] = __float_as_uint(x[i]);
      else split<RND>(x[i], h[i], l[i]);
    }
#pragma unroll
    for (int k = 0; k < NT; ++k) {
      const int q = f - k;
      if (q >= 0 && q < S) {
        mma(acc[k], h, bh[q][0], bh[q][1]);
        if (P == 3) {
          mma(sml[k], h, bl[q][0], bl[q][1]);
          mma(sml[k], l, bh[q][0], bh[q][1]);
        }
      }
    }
  }
  if (P == 3) {
#pragma unroll
    for (int k = 0; k < NT; ++k)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[k][r] += sml[k][r];
  }
}

// This lane's B fragments of a pass: b0 = B[tq][g], b1 = B[tq + 4][g], B[u][j] = m[8q + u − j].
template <int S>
__device__ __forceinline__ void load_b(uint32_t (&b)[S][2], const float* taps, int g, int tq) {
#pragma unroll
  for (int q = 0; q < S; ++q) {
    b[q][0] = __float_as_uint(__ldg(taps + 8 * q + tq - g));
    b[q][1] = __float_as_uint(__ldg(taps + 8 * q + tq + 4 - g));
  }
}

// taps: [hi x, lo x, hi y, lo y], each pointing at tap 0 of an array with TAP_PAD zeros either side.
template <int H, int P, bool RND, int CN>
__global__ void __launch_bounds__(THREADS, 2)
sep_tc(const float* __restrict__ in, float* __restrict__ out, int width, int height,
       const float* txh, const float* txl, const float* tyh, const float* tyl, int tiles_x, int ntiles,
       unsigned* nonfinite) {
  constexpr int S = steps_of(H);
  static_assert(8 * (TY / 8 + S - 1) <= RIN, "column pass rows");
  static_assert(16 - H + 8 * (TX / 8 + S - 1) <= IP, "row pass columns");
  extern __shared__ __align__(16) float smem[];
  float* tin = smem;
  float* tmid = smem + RIN * IP;
  const int t = threadIdx.x % THREADS;
  const int lane = t % 32, warp = t / 32;
  const int g = lane / 4, tq = lane % 4;
  auto load = [&](int tile) {
    const int y0 = (tile / tiles_x) * TY - H, x0 = (tile % tiles_x) * TX - 16;
    for (int i = t; i < RIN * CHUNKS; i += THREADS) {
      const int r = i / CHUNKS, c = i % CHUNKS;
      const int y = y0 + r, x = x0 + 4 * c;
      const bool ok = y >= 0 && y < height && x >= 0 && x < width;
      cp16(smaddr(tin + r * IP + 4 * c), ok ? in + (size_t)y * width + x : in, ok);
    }
  };
  int tile = blockIdx.x;
  if (tile < ntiles) load(tile);
  commit();
  while (tile < ntiles) {
    wait0();
    __syncthreads();
    {  // Row pass: 16 items (8 bands of 16 rows × 2 halves of 32 columns), two per warp.
      uint32_t bh[S][2], bl[S][2];
      load_b<S>(bh, txh, g, tq);
      if (P == 3) load_b<S>(bl, txl, g, tq);
#pragma unroll 1
      for (int it = warp; it < 2 * RIN / 16; it += WARPS) {
        const int band = it / 2, c0 = (TX / 2) * (it % 2);
        float acc[TX / 16][4];
        const float* base = tin + (16 * band + g) * IP + (16 - H) + c0 + tq;
        pass<S, TX / 16, P, RND>(acc, bh, bl, [&](int f, float* x) {
          x[0] = base[8 * f];
          x[1] = base[8 * IP + 8 * f];
          x[2] = base[8 * f + 4];
          x[3] = base[8 * IP + 8 * f + 4];
        });
#pragma unroll
        for (int k = 0; k < TX / 16; ++k) {
          float* d = tmid + (16 * band + g) * TP + c0 + 8 * k + 2 * tq;
          *reinterpret_cast<float2*>(d) = make_float2(acc[k][0], acc[k][1]);
          *reinterpret_cast<float2*>(d + 8 * TP) = make_float2(acc[k][2], acc[k][3]);
        }
      }
    }
    __syncthreads();
    const int next = tile + gridDim.x;
    if (next < ntiles) load(next);
    commit();
    {  // Column pass: items of 16 columns × 8·CN rows, (TY / 8 / CN) · 4 of them over the warps.
      uint32_t bh[S][2], bl[S][2];
      load_b<S>(bh, tyh, g, tq);
      if (P == 3) load_b<S>(bl, tyl, g, tq);
#pragma unroll 1
      for (int it = warp; it < 4 * (TY / 8 / CN); it += WARPS) {
        const int cx = 16 * (it % 4), ry = 8 * CN * (it / 4);
        float acc[CN][4];
        const float* base = tmid + (ry + tq) * TP + cx + g;
        pass<S, CN, P, RND>(acc, bh, bl, [&](int f, float* x) {
          x[0] = base[8 * f * TP];
          x[1] = base[8 * f * TP + 8];
          x[2] = base[(8 * f + 4) * TP];
          x[3] = base[(8 * f + 4) * TP + 8];
        });
        const int oy = (tile / tiles_x) * TY + ry + 2 * tq, ox = (tile % tiles_x) * TX + cx + g;
        // A library kernel recomputes outputs that come out infinite or NaN (0·∞ from the band's
        // zero taps); here the vote and a count stand for it, so that its cost is in the time.
        bool bad = false;
#pragma unroll
        for (int k = 0; k < CN; ++k)
#pragma unroll
          for (int r = 0; r < 4; ++r) bad |= (__float_as_uint(acc[k][r]) & 0x7f800000u) == 0x7f800000u;
        if (__any_sync(0xffffffffu, bad) && lane == 0) atomicAdd(nonfinite, 1u);
#pragma unroll
        for (int k = 0; k < CN; ++k) {
          const int y = oy + 8 * k;
          if (y < height) {
            out[(size_t)y * width + ox] = acc[k][0];
            out[(size_t)y * width + ox + 8] = acc[k][2];
          }
          if (y + 1 < height) {
            out[(size_t)(y + 1) * width + ox] = acc[k][1];
            out[(size_t)(y + 1) * width + ox + 8] = acc[k][3];
          }
        }
      }
    }
    tile = next;
  }
}

#ifndef __CUDACC_RTC__
static float tf32_head(float v) {
  uint32_t b; memcpy(&b, &v, 4); b = (b + 0x1000u) & 0xffffe000u; float h; memcpy(&h, &b, 4); return h;
}

struct Taps { float* d[4]; };

Taps upload(const std::vector<float>& mx, const std::vector<float>& my) {
  Taps t;
  const std::vector<float>* src[2] = {&mx, &my};
  for (int a = 0; a < 2; ++a) {
    const auto& m = *src[a];
    std::vector<float> hi(m.size() + 2 * TAP_PAD, 0.f), lo(hi.size(), 0.f);
    for (size_t i = 0; i < m.size(); ++i) { hi[TAP_PAD + i] = tf32_head(m[i]); lo[TAP_PAD + i] = tf32_head(m[i] - hi[TAP_PAD + i]); }
    for (int s = 0; s < 2; ++s) {
      float* p; CK(cudaMalloc(&p, hi.size() * 4));
      CK(cudaMemcpy(p, (s ? lo : hi).data(), hi.size() * 4, cudaMemcpyHostToDevice));
      t.d[2 * a + s] = p;
    }
  }
  return t;
}

template <int H, int P, bool RND, int CN = 6>
void run_one(const float* dx, float* dy, int W, int Hh, const std::vector<float>& hx, std::vector<float>& hy, double floor_ms) {
  const int w = 2 * H + 1;
  std::mt19937 rng(w * 31 + P);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<float> mx(w), my(w);
  for (auto& v : mx) v = U(rng);
  for (auto& v : my) v = U(rng);
  Taps tp = upload(mx, my);
  auto k = sep_tc<H, P, RND, CN>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));
  cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, k));
  int per = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, THREADS, SMEM));
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int tiles_x = (W + TX - 1) / TX, tiles_y = (Hh + TY - 1) / TY, ntiles = tiles_x * tiles_y;
  const int grid = std::min(ntiles, sms * std::max(per, 1));
  const size_t n = (size_t)W * Hh;
  unsigned* flag; CK(cudaMalloc(&flag, 4)); CK(cudaMemset(flag, 0, 4));
  auto launch = [&] {
    k<<<grid, THREADS, SMEM>>>(dx, dy, W, Hh, tp.d[0] + TAP_PAD, tp.d[1] + TAP_PAD, tp.d[2] + TAP_PAD, tp.d[3] + TAP_PAD, tiles_x, ntiles, flag);
  };
  CK(cudaMemset(dy, 0xFF, n * 4));
  launch();
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
  // The library's separable bound: the row pass's (w + 2)·2^-24·Σ|terms| per intermediate, carried
  // through the column taps, plus the column pass's own.
  // One product (P = 1): 3·2^-11 more per pass, as the library's TF32 bound.
  const double u = std::ldexp(1.0, -24), gx = (w + 2) * u + (P == 1 ? 3 * std::ldexp(1.0, -11) : 0.0), gy = gx;
  long long bad = 0, checked = 0; double worst = 0;
  auto check = [&](int y, int x) {
    double val = 0, carried = 0, abs = 0;
    for (int j = 0; j < w; ++j) {
      const int r = y - H + j;
      double rv = 0, ra = 0;
      if (r >= 0 && r < Hh)
        for (int i = 0; i < w; ++i) {
          const int c = x - H + i;
          if (c >= 0 && c < W) { double p = (double)mx[i] * hx[(size_t)r * W + c]; rv += p; ra += fabs(p); }
        }
      const double rb = gx * ra;
      val += my[j] * rv; carried += fabs(my[j]) * rb; abs += fabs(my[j]) * (fabs(rv) + rb);
    }
    const double bound = carried + gy * abs + 2 * w * 1.2e-38;
    const double e = fabs((double)hy[(size_t)y * W + x] - val);
    if (!(e <= bound)) ++bad;
    worst = std::max(worst, e / bound);
    ++checked;
  };
  std::mt19937_64 r2(7);
  for (int i = 0; i < 4000; ++i) { check(i % 40, (int)(r2() % W)); check(Hh - 1 - i % 40, (int)(r2() % W)); check((int)(r2() % Hh), i % 40); check((int)(r2() % Hh), W - 1 - i % 40); }
  for (int i = 0; i < 60000; ++i) check((int)(r2() % Hh), (int)(r2() % W));
  std::vector<float> ts;
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int r = 0; r < 30; ++r) {
    CK(cudaEventRecord(e0)); launch(); CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  const double med = ts[ts.size() / 2];
  printf("%s%2dx%-2d P %d rnd %d CN %d S %d regs %3d spill %zu blocks/SM %d grid %d: checked %lld bad %lld worst %.3f of bound | %.4f ms (min %.4f) %.1f%% of floor\n",
         bad ? "CHECK FAILED " : "", w, w, P, (int)RND, CN, steps_of(H), fa.numRegs, fa.localSizeBytes, per, grid, checked, bad, worst, med, ts[0],
         100.0 * floor_ms / med);
  fflush(stdout);
  unsigned nf = 0; CK(cudaMemcpy(&nf, flag, 4, cudaMemcpyDeviceToHost));
  if (nf) printf("  %u warp-items saw a non-finite output\n", nf);
  CK(cudaFree(flag));
  for (auto p : tp.d) CK(cudaFree(p));
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
  const char* only = argc > 1 ? argv[1] : "all";
  const bool all = !strcmp(only, "all");
  if (all || !strcmp(only, "p3")) {
    run_one<10, 3, true, 6>(dx, dy, W, Hh, hx, hy, floor_ms);
    run_one<10, 3, true, 3>(dx, dy, W, Hh, hx, hy, floor_ms);
    run_one<12, 3, true, 6>(dx, dy, W, Hh, hx, hy, floor_ms);
    run_one<12, 3, true, 3>(dx, dy, W, Hh, hx, hy, floor_ms);
    run_one<15, 3, true, 6>(dx, dy, W, Hh, hx, hy, floor_ms);
    run_one<15, 3, true, 3>(dx, dy, W, Hh, hx, hy, floor_ms);
    run_one<15, 3, false, 6>(dx, dy, W, Hh, hx, hy, floor_ms);
    run_one<8, 3, true, 6>(dx, dy, W, Hh, hx, hy, floor_ms);
  }
  if (!strcmp(only, "h15")) run_one<15, 3, true, 6>(dx, dy, W, Hh, hx, hy, floor_ms);
  if (!strcmp(only, "h10")) run_one<10, 3, true, 3>(dx, dy, W, Hh, hx, hy, floor_ms);
  if (all || !strcmp(only, "p1")) {
    run_one<10, 1, false, 6>(dx, dy, W, Hh, hx, hy, floor_ms);
    run_one<15, 1, false, 6>(dx, dy, W, Hh, hx, hy, floor_ms);
  }
  return 0;
}
#endif
