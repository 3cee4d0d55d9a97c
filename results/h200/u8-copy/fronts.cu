// Copies of 48 MiB (4096 rows x 12288 bytes): cuMemcpyDtoD, a grid-stride kernel, and banded copies (nb bands
// walked row by row). Build: nvcc -O3 -arch=sm_90a -o fronts fronts.cu; run: ./fronts (copies.txt).
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__global__ void gs_copy(const uint4* __restrict__ a, uint4* __restrict__ b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] = __ldg(a + i);
}
// per band: bpb blocks split each row; U rows in flight per thread
template <int U>
__global__ void band_copy(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, int rb, int H, int nb, int bpb) {
  int band = blockIdx.x / bpb, part = blockIdx.x % bpb;
  int rows = (H + nb - 1) / nb;
  int y0 = band * rows, y1 = min(H, y0 + rows);
  int chunk = rb / 16;  // uint4 per row
  for (int c = part * blockDim.x + threadIdx.x; c < chunk; c += bpb * blockDim.x) {
    for (int y = y0; y < y1; y += U) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; u++) if (y + u < y1) v[u] = __ldg(reinterpret_cast<const uint4*>(in + (size_t)(y + u) * rb) + c);
#pragma unroll
      for (int u = 0; u < U; u++) if (y + u < y1) reinterpret_cast<uint4*>(out + (size_t)(y + u) * rb)[c] = v[u];
    }
  }
}
int main() {
  int rb = 12288, H = 4096;
  size_t bytes = (size_t)rb * H;
  uint8_t *a, *b;
  CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes)); cudaMemset(a, 1, bytes);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  auto timeit = [&](auto launch) {
    std::vector<float> ts;
    for (int r = 0; r < 30; r++) { cudaEventRecord(e0); for (int q = 0; q < 20; q++) launch(); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) ts.push_back(ms / 20); }
    std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
  };
  float td = timeit([&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); });
  printf("DtoD %.4f ms\n", td);
  for (int g : {1, 2, 4, 8}) {
    float t = timeit([&] { gs_copy<<<sms * g * 2, 1024>>>((const uint4*)a, (uint4*)b, bytes / 16); });
    printf("grid-stride %d blocks of 1024: %.4f ms\n", sms * g * 2, t);
  }
  for (int nb : {64, 128, 256, 512}) {
    for (int threads : {256, 768}) {
      // blocks per band so that total blocks ~ sms * (2048/threads)
      int total = sms * (2048 / threads);
      int bpb = std::max(1, total / nb);
      float t = timeit([&] { band_copy<4><<<nb * bpb, threads>>>(a, b, rb, H, nb, bpb); });
      printf("bands %4d x %3d blocks of %4d (U=4): %.4f ms\n", nb, bpb, threads, t);
    }
  }
  CK(cudaGetLastError());
  return 0;
}
