// u8 RGB 4096² 5x5 box through a ring of bulk-copied rows in shared memory (sm_90), checked against a CPU
// reference, timed against cuMemcpyDtoD. Build: nvcc -O3 -arch=sm_90a -o box box.cu; run: ./box 2 (ring.txt).
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ uint32_t sa(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void bulk(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n\t"
               "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%2], [%3], %1, [%0];"
               :: "r"(bar), "r"(bytes), "r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void arrive(uint32_t bar) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory"); }
__device__ __forceinline__ void waitp(uint32_t bar, uint32_t par) {
  uint32_t ok;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(bar), "r"(par) : "memory");
  } while (!ok);
}
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t s) { return __byte_perm(a, b, s); }
__device__ __forceinline__ uint32_t pack4(float a, float b, float c, float d) {
  uint32_t r;
  asm("{ .reg .s32 a, b, c, d, hi; cvt.rni.s32.f32 a, %1; cvt.rni.s32.f32 b, %2; cvt.rni.s32.f32 c, %3; cvt.rni.s32.f32 d, %4;"
      " cvt.pack.sat.u8.s32.b32 hi, d, c, 0; cvt.pack.sat.u8.s32.b32 %0, b, a, hi; }" : "=r"(r) : "f"(a), "f"(b), "f"(c), "f"(d));
  return r;
}

// T threads, 16 bytes each: a strip of 16T bytes; slot = 16 pad + 16T + 16 pad.
template <int T, int S, int MINB, int MODE>
__global__ void __launch_bounds__(T, MINB) box5(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, int W, int H,
                                                 size_t pin, size_t pout, int rows, int strips, float t, int alt) {
  extern __shared__ __align__(128) uint8_t sm[];
  constexpr int SLOT = 16 * T + 32;
  const uint32_t base = sa(sm);
  const uint32_t bars = base + S * SLOT;
  const int tid = threadIdx.x;
  const int strip = blockIdx.x % strips, band = blockIdx.x / strips;
  const int rb = W * 3;
  const int x0 = strip * 16 * T;
  const int y0 = band * rows;
  if (y0 >= H) return;
  const int y1 = min(H, y0 + rows);
  const bool up = alt && (band & 1);
  const int N = (y1 - y0) + 4;
  const int cx0 = max(x0 - 16, 0);
  const int rb16 = (rb + 15) & ~15;
  const int cx1 = min(x0 + 16 * T + 16, rb16);
  const uint32_t cbytes = cx1 - cx0;
  const uint32_t coff = 16 + (cx0 - x0);
  auto row_of = [&](int i) { return up ? (y1 + 1 - i) : (y0 - 2 + i); };
  auto issue = [&](int i) {
    int r = row_of(i);
    uint32_t s = i % S;
    uint32_t bar = bars + 8 * s;
    if (r < 0 || r >= H) arrive(bar);
    else bulk(base + s * SLOT + coff, in + (size_t)r * pin + cx0, cbytes, bar);
  };
  if (tid == 0) {
    for (int s = 0; s < S; s++) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bars + 8 * s));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  if (tid == 0) for (int i = 0; i < S && i < N; i++) issue(i);
  const int x = x0 + 16 * tid;  // first byte this thread writes
  // bytes x-8 .. x+24 valid where 0 <= pos < rb
  const bool edge = (x - 8 < 0) || (x + 24 > rb);
  const float magic = 8388608.0f;
  const float nt = -8388608.0f * t;
  uint32_t ring[5][8];
  uint32_t V[8];
#pragma unroll
  for (int q = 0; q < 8; q++) { V[q] = 0; for (int j = 0; j < 5; j++) ring[j][q] = 0; }
  uint8_t* orow = out + x;
  for (int i0 = 0; i0 < N; i0 += 5) {
#pragma unroll
    for (int k = 0; k < 5; k++) {
      const int i = i0 + k;
      if (i >= N) return;
      const int r = row_of(i);
      const uint32_t s = i % S;
      waitp(bars + 8 * s, (i / S) & 1);
      uint32_t w[8];
      const uint32_t at = base + s * SLOT + 16 + 16 * tid;
      asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "r"(at - 8));
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(w[2]), "=r"(w[3]), "=r"(w[4]), "=r"(w[5]) : "r"(at));
      asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(w[6]), "=r"(w[7]) : "r"(at + 16));
      const bool live = r >= 0 && r < H;
      if (!live) {
#pragma unroll
        for (int j = 0; j < 8; j++) w[j] = 0;
      } else if (edge) {
#pragma unroll
        for (int j = 0; j < 8; j++) {
#pragma unroll
          for (int b = 0; b < 4; b++) {
            int p = x - 8 + 4 * j + b;
            if (p < 0 || p >= rb) w[j] &= ~(0xffu << (8 * b));
          }
        }
      }
      __syncthreads();
      if (tid == 0 && i + S < N) issue(i + S);
      if (MODE == 1) {
        if (i >= 4 && x + 16 <= rb) { const int y = up ? r + 2 : r - 2; uint4 o4 = make_uint4(w[2], w[3], w[4], w[5]); *reinterpret_cast<uint4*>(orow + (size_t)y * pout) = o4; }
        continue;
      }
      // P(k) = (byte k, byte k+8) for k = -6 .. 13 ; byte k is w[(k+8)/4] byte (k+8)%4
      uint32_t P[20];
#pragma unroll
      for (int wi = 0; wi < 6; wi++) {
        // words wi and wi+2: E = (a.b0, a.b2, c.b0, c.b2), O = (a.b1, a.b3, c.b1, c.b3)
        uint32_t E = prmt(w[wi], w[wi + 2], 0x6420);
        uint32_t O = prmt(w[wi], w[wi + 2], 0x7531);
#pragma unroll
        for (int o = 0; o < 4; o++) {
          int kk = 4 * wi + o - 8;
          if (kk < -6 || kk > 13) continue;
          uint32_t src = (o & 1) ? O : E;
          uint32_t sel = (o & 2) ? 0x4341 : 0x4240;  // (lo, 0, hi, 0)
          P[kk + 6] = prmt(src, 0, sel);
        }
      }
      uint32_t h[8];
#pragma unroll
      for (int q = 0; q < 8; q++) h[q] = P[q] + P[q + 3] + P[q + 6] + P[q + 9] + P[q + 12];
#pragma unroll
      for (int q = 0; q < 8; q++) { V[q] = V[q] + h[q] - ring[k][q]; ring[k][q] = h[q]; }
      if (i >= 4) {
        const int y = up ? r + 2 : r - 2;
        float f[16];
#pragma unroll
        for (int q = 0; q < 8; q++) {
          f[q] = fmaf(__uint_as_float(prmt(V[q], __float_as_uint(magic), 0x7610)), t, nt);
          f[q + 8] = fmaf(__uint_as_float(prmt(V[q], __float_as_uint(magic), 0x7632)), t, nt);
        }
        uint4 o4;
        o4.x = pack4(f[0], f[1], f[2], f[3]);
        o4.y = pack4(f[4], f[5], f[6], f[7]);
        o4.z = pack4(f[8], f[9], f[10], f[11]);
        o4.w = pack4(f[12], f[13], f[14], f[15]);
        uint8_t* p = orow + (size_t)y * pout;
        if (x + 16 <= rb) {
          *reinterpret_cast<uint4*>(p) = o4;
        } else if (x < rb) {
          uint32_t ww[4] = {o4.x, o4.y, o4.z, o4.w};
          for (int b = 0; b < rb - x; b++) p[b] = (ww[b / 4] >> (8 * (b % 4))) & 0xff;
        }
      }
    }
  }
}

static void ref(const std::vector<uint8_t>& in, std::vector<uint8_t>& out, int W, int H, float t) {
  int rb = W * 3;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < rb; x++) {
      int s = 0;
      for (int dy = -2; dy <= 2; dy++)
        for (int dx = -2; dx <= 2; dx++) {
          int yy = y + dy, xx = x + 3 * dx;
          if (yy < 0 || yy >= H || xx < 0 || xx >= rb) continue;
          s += in[(size_t)yy * rb + xx];
        }
      float f = fmaf((float)(8388608 + s), t, -8388608.0f * t);
      float rr = nearbyintf(f);
      out[(size_t)y * rb + x] = (uint8_t)std::min(255.0f, std::max(0.0f, rr));
    }
}

template <int T, int S, int MINB, int MODE = 0>
static void run(const char* name, const uint8_t* din, uint8_t* dout, int W, int H, float t, int alt, const std::vector<uint8_t>& want,
                double floor_ms, int bands_mul) {
  auto k = box5<T, S, MINB, MODE>;
  int smem = S * (16 * T + 32) + 8 * S;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int nb = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k, T, smem));
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int rb = W * 3;
  int strips = (rb + 16 * T - 1) / (16 * T);
  int bands = (sms * nb * bands_mul + strips - 1) / strips;
  int rows = (H + bands - 1) / bands;
  bands = (H + rows - 1) / rows;
  int grid = bands * strips;
  CK(cudaMemset(dout, 0xab, (size_t)rb * H));
  k<<<grid, T, smem>>>(din, dout, W, H, rb, rb, rows, strips, t, alt);
  CK(cudaDeviceSynchronize());
  std::vector<uint8_t> got((size_t)rb * H);
  CK(cudaMemcpy(got.data(), dout, got.size(), cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); i++) bad += got[i] != want[i];
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ts;
  for (int rep = 0; rep < 30; rep++) {
    cudaEventRecord(a);
    for (int q = 0; q < 20; q++) k<<<grid, T, smem>>>(din, dout, W, H, rb, rb, rows, strips, t, alt);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b);
    if (rep >= 5) ts.push_back(ms / 20);
  }
  std::sort(ts.begin(), ts.end());
  float med = ts[ts.size() / 2];
  printf("%-22s T=%4d S=%d alt=%d bpsm=%d grid=%5d rows=%3d  bad=%zu  median %.4f ms  min %.4f  %.1f%% of floor\n", name, T, S, alt, nb, grid,
         rows, bad, med, ts[0], 100.0 * floor_ms / med);
}

int main(int argc, char** argv) {
  int W = 4096, H = 4096;
  float t = 1.0f / 25.0f;
  size_t bytes = (size_t)W * 3 * H;
  std::vector<uint8_t> h(bytes);
  srand(7);
  for (auto& v : h) v = rand() & 0xff;
  std::vector<uint8_t> want(bytes);
  ref(h, want, W, H, t);
  uint8_t *din, *dout;
  CK(cudaMalloc(&din, bytes));
  CK(cudaMalloc(&dout, bytes));
  CK(cudaMemcpy(din, h.data(), bytes, cudaMemcpyHostToDevice));
  // floor: DtoD bandwidth at 512 MiB
  size_t big = 512ull << 20;
  uint8_t *ba, *bb;
  CK(cudaMalloc(&ba, big)); CK(cudaMalloc(&bb, big));
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  auto timecopy = [&](uint8_t* d, uint8_t* s, size_t n) {
    std::vector<float> ts;
    for (int rep = 0; rep < 30; rep++) {
      cudaEventRecord(a); for (int q = 0; q < 20; q++) cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice); cudaEventRecord(b); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b); if (rep >= 5) ts.push_back(ms / 20);
    }
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
  };
  float t512 = timecopy(bb, ba, big);
  double bw = 2.0 * big / (t512 * 1e-3);
  double floor_ms = 2.0 * bytes / bw * 1e3;
  float t48 = timecopy(dout, din, bytes);
  printf("DtoD 512 MiB %.4f ms (%.1f GB/s); floor for the image %.4f ms; DtoD 48 MiB %.4f ms = %.1f%% of floor\n", t512, bw / 1e9, floor_ms,
         t48, 100.0 * floor_ms / t48);
  int which = argc > 1 ? atoi(argv[1]) : 0;
  if (which == 2) {
    for (int alt = 0; alt < 2; alt++) {
      run<768, 4, 1>("full-row", din, dout, W, H, t, alt, want, floor_ms, 1);
      run<768, 6, 1>("full-row", din, dout, W, H, t, alt, want, floor_ms, 1);
      run<384, 6, 2>("half-row", din, dout, W, H, t, alt, want, floor_ms, 1);
      run<256, 6, 3>("third-row", din, dout, W, H, t, alt, want, floor_ms, 1);
      run<256, 8, 3>("third-row", din, dout, W, H, t, alt, want, floor_ms, 1);
      run<256, 8, 3>("third-row x2", din, dout, W, H, t, alt, want, floor_ms, 2);
      run<768, 4, 1, 1>("full-row nocompute", din, dout, W, H, t, alt, want, floor_ms, 1);
      run<256, 8, 3, 1>("third-row nocompute", din, dout, W, H, t, alt, want, floor_ms, 1);
    }
  }
  if (which == 0 || which == 1) run<768, 4, 1>("full-row", din, dout, W, H, t, 0, want, floor_ms, 1);
  if (which == 0) {
    run<768, 4, 1, 1>("full-row nocompute", din, dout, W, H, t, 0, want, floor_ms, 1);
    run<768, 8, 1, 1>("full-row nocompute", din, dout, W, H, t, 0, want, floor_ms, 1);
    run<256, 8, 3, 1>("third-row nocompute", din, dout, W, H, t, 0, want, floor_ms, 1);
    run<256, 8, 3, 1>("third-row nocomp x2", din, dout, W, H, t, 0, want, floor_ms, 2);
    run<256, 4, 3, 0>("third-row S4", din, dout, W, H, t, 0, want, floor_ms, 1);
    run<768, 2, 1, 0>("full-row S2", din, dout, W, H, t, 0, want, floor_ms, 1);
    run<768, 3, 1, 0>("full-row S3", din, dout, W, H, t, 0, want, floor_ms, 1);
  }
  float t48b = timecopy(dout, din, bytes);
  printf("DtoD 48 MiB again %.4f ms\n", t48b);
  return 0;
}
