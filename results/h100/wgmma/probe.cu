// wgmma / mma.sync TF32 throughput probe (sm_90a)
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

__device__ __forceinline__ uint64_t desc(const void* p, uint32_t lbo, uint32_t sbo) {
  uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
  uint64_t d = 0;
  d |= (uint64_t)((a >> 4) & 0x3FFF);
  d |= (uint64_t)((lbo >> 4) & 0x3FFF) << 16;
  d |= (uint64_t)((sbo >> 4) & 0x3FFF) << 32;
  return d;
}

#define FENCE() asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory")
#define COMMIT() asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory")
#define WAIT0() asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory")

template <int N> struct W;
template <> struct W<8> { static __device__ __forceinline__ void rs(float* d, const uint32_t* a, uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1, 1, 1;\n"
    : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]) : "r"(a[0]),"r"(a[1]),"r"(a[2]),"r"(a[3]),"l"(b)); } };
template <> struct W<16> { static __device__ __forceinline__ void rs(float* d, const uint32_t* a, uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, 1, 1, 1;\n"
    : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]) : "r"(a[0]),"r"(a[1]),"r"(a[2]),"r"(a[3]),"l"(b)); } };
template <> struct W<32> { static __device__ __forceinline__ void rs(float* d, const uint32_t* a, uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, 1;\n"
    : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),
      "+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15])
    : "r"(a[0]),"r"(a[1]),"r"(a[2]),"r"(a[3]),"l"(b)); } };
// SS N=16
__device__ __forceinline__ void ss16(float* d, uint64_t a, uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, 1, 1, 1;\n"
    : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]) : "l"(a),"l"(b)); }

// each warpgroup: ITER rounds of CH independent accumulators x 1 wgmma each (RS)
template <int N, int CH>
__global__ void rs_probe(float* out, int iters) {
  __shared__ __align__(1024) float sm[4096];
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) sm[i] = 1.0f + (i & 7) * 0.125f;
  __syncthreads();
  uint32_t a[4];
  for (int i = 0; i < 4; ++i) a[i] = __float_as_uint(1.0f + threadIdx.x * 1e-3f + i);
  float d[CH][N / 2];
  for (int c = 0; c < CH; ++c) for (int i = 0; i < N / 2; ++i) d[c][i] = 0.f;
  uint64_t b = desc(sm, 128, 256);
  for (int it = 0; it < iters; ++it) {
    FENCE();
#pragma unroll
    for (int c = 0; c < CH; ++c) W<N>::rs(d[c], a, b);
    COMMIT();
    WAIT0();
  }
  float s = 0.f;
  for (int c = 0; c < CH; ++c) for (int i = 0; i < N / 2; ++i) s += d[c][i];
  if (s == 12345.f) out[threadIdx.x] = s;
}

template <int CH>
__global__ void ss16_probe(float* out, int iters) {
  __shared__ __align__(1024) float sm[4096];
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) sm[i] = 1.0f + (i & 7) * 0.125f;
  __syncthreads();
  float d[CH][8];
  for (int c = 0; c < CH; ++c) for (int i = 0; i < 8; ++i) d[c][i] = 0.f;
  uint64_t a = desc(sm, 128, 256), b = desc(sm + 2048, 128, 256);
  for (int it = 0; it < iters; ++it) {
    FENCE();
#pragma unroll
    for (int c = 0; c < CH; ++c) ss16(d[c], a, b);
    COMMIT();
    WAIT0();
  }
  float s = 0.f;
  for (int c = 0; c < CH; ++c) for (int i = 0; i < 8; ++i) s += d[c][i];
  if (s == 12345.f) out[threadIdx.x] = s;
}

template <int CH>
__global__ void mma_probe(float* out, int iters) {
  uint32_t a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = __float_as_uint(1.0f + threadIdx.x * 1e-3f + i);
  b[0] = a[0]; b[1] = a[1];
  float d[CH][4];
  for (int c = 0; c < CH; ++c) for (int i = 0; i < 4; ++i) d[c][i] = 0.f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < CH; ++c)
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[c][0]),"+f"(d[c][1]),"+f"(d[c][2]),"+f"(d[c][3]) : "r"(a[0]),"r"(a[1]),"r"(a[2]),"r"(a[3]),"r"(b[0]),"r"(b[1]));
  }
  float s = 0.f;
  for (int c = 0; c < CH; ++c) for (int i = 0; i < 4; ++i) s += d[c][i];
  if (s == 12345.f) out[threadIdx.x] = s;
}

template <typename K>
void timeit(const char* name, K kern, int blocks, int threads, int iters, double flop_per_iter_per_unit, int units_per_block, float* out) {
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  kern<<<blocks, threads>>>(out, iters);
  cudaDeviceSynchronize();
  float best = 1e30f;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(e0); kern<<<blocks, threads>>>(out, iters); cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms;
  }
  cudaError_t err = cudaGetLastError();
  double flops = flop_per_iter_per_unit * iters * units_per_block * (double)blocks;
  printf("%-34s blocks %4d threads %4d  %8.3f ms  %7.1f TFLOPS %s\n", name, blocks, threads, best, flops / best / 1e9, err ? cudaGetErrorString(err) : "");
}

int main() {
  float* out; cudaMalloc(&out, 4096 * sizeof(float));
  int sms = 132; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int it = 20000;
  for (int wg = 1; wg <= 4; wg *= 2) {
    int th = 128 * wg;
    char nm[64];
    snprintf(nm, 64, "mma.sync m16n8k8 ch4 (w%d)", wg * 4);
    timeit(nm, mma_probe<4>, sms * 2, th, it, 2.0 * 16 * 8 * 8 * 4, wg * 4, out);
    snprintf(nm, 64, "rs m64n8k8 ch4 (wg%d)", wg);
    timeit(nm, rs_probe<8, 4>, sms * 2, th, it / 4, 2.0 * 64 * 8 * 8 * 4, wg, out);
    snprintf(nm, 64, "rs m64n16k8 ch2 (wg%d)", wg);
    timeit(nm, rs_probe<16, 2>, sms * 2, th, it / 4, 2.0 * 64 * 16 * 8 * 2, wg, out);
    snprintf(nm, 64, "rs m64n16k8 ch4 (wg%d)", wg);
    timeit(nm, rs_probe<16, 4>, sms * 2, th, it / 4, 2.0 * 64 * 16 * 8 * 4, wg, out);
    snprintf(nm, 64, "rs m64n32k8 ch4 (wg%d)", wg);
    timeit(nm, rs_probe<32, 4>, sms * 2, th, it / 8, 2.0 * 64 * 32 * 8 * 4, wg, out);
    snprintf(nm, 64, "ss m64n16k8 ch4 (wg%d)", wg);
    timeit(nm, ss16_probe<4>, sms * 2, th, it / 4, 2.0 * 64 * 16 * 8 * 4, wg, out);
  }
  return 0;
}
