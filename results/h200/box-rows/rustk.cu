// Runs conv2d_boxr3_u8_w5 (the Rust PTX, its entry cut out of the build's coalesce_kernels.sm_90.ptx with the header and the
// dynamic shared memory's .extern) directly: occupancy, rows per band, modes; checks zero mode against a CPU reference.
// Build: nvcc -O3 -arch=sm_90a -o rustk rustk.cu -lcuda; run: ./rustk boxr3.ptx (rustk.txt: the first build, whose taps
// parameter was 8 bytes, t and -2^23 t; rustk-prmt.txt: the committed arithmetic, 16 bytes, of which the launch passes 12).
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <string>
#include <fstream>
#include <sstream>
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
#define DK(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { const char* s; cuGetErrorString(e, &s); printf("%s:%d %s\n", __FILE__, __LINE__, s); exit(1);} } while (0)
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
      out[(size_t)y * rb + x] = (uint8_t)std::min(255.0f, std::max(0.0f, nearbyintf(f)));
    }
}
int main(int argc, char** argv) {
  CK(cudaFree(0));
  std::ifstream f(argv[1]); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
  CUmodule mod; DK(cuModuleLoadData(&mod, ptx.c_str()));
  CUfunction fn; DK(cuModuleGetFunction(&fn, mod, "conv2d_boxr3_u8_w5"));
  int nb; DK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, fn, 256, 49152));
  int regs; DK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
  printf("occupancy: %d blocks/SM at 49152 B, %d regs\n", nb, regs);
  int W = 4096, H = 4096; float t = 1.0f / 25.0f;
  size_t bytes = (size_t)W * 3 * H;
  std::vector<uint8_t> h(bytes); srand(7); for (auto& v : h) v = rand() & 0xff;
  std::vector<uint8_t> want(bytes); ref(h, want, W, H, t);
  uint8_t *din, *dout; CK(cudaMalloc(&din, bytes)); CK(cudaMalloc(&dout, bytes));
  CK(cudaMemcpy(din, h.data(), bytes, cudaMemcpyHostToDevice));
  size_t big = 512ull << 20; uint8_t *ba, *bb; CK(cudaMalloc(&ba, big)); CK(cudaMalloc(&bb, big));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto timeit = [&](auto&& op) {
    std::vector<float> ts;
    for (int rep = 0; rep < 30; rep++) { cudaEventRecord(a); for (int q = 0; q < 20; q++) op();
      cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); if (rep >= 5) ts.push_back(ms / 20); }
    std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
  };
  float t512 = timeit([&] { cudaMemcpyAsync(bb, ba, big, cudaMemcpyDeviceToDevice); });
  double floor_ms = 2.0 * bytes / (2.0 * big / (t512 * 1e-3)) * 1e3;
  float t48 = timeit([&] { cudaMemcpyAsync(dout, din, bytes, cudaMemcpyDeviceToDevice); });
  printf("floor %.4f ms; DtoD 48 MiB %.4f ms = %.1f%% of floor\n", floor_ms, t48, 100.0 * floor_ms / t48);
  struct { float t, nt, m; } taps = {t, -8388608.0f * t, 8388608.0f};
  unsigned w = W, hh = H; size_t pitch = (size_t)W * 3;
  for (unsigned mode : {0u, 2u}) for (unsigned rows : {47u, 94u, 32u}) {
    unsigned grid = 3 * ((H + rows - 1) / rows);
    void* args[] = {&din, &dout, &w, &hh, &pitch, &pitch, &rows, &mode, &taps};
    auto go = [&] { DK(cuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, 49152, 0, args, nullptr)); };
    CK(cudaMemset(dout, 0xab, bytes)); go(); CK(cudaDeviceSynchronize());
    std::vector<uint8_t> got(bytes); CK(cudaMemcpy(got.data(), dout, bytes, cudaMemcpyDeviceToHost));
    size_t bad = 0; if (mode == 0) for (size_t i = 0; i < bytes; i++) bad += got[i] != want[i];
    float med = timeit(go);
    printf("rust boxr3_w5 mode=%u rows=%u grid=%u bad=%zu median %.4f ms  %.1f%% of floor\n", mode, rows, grid, bad, med, 100.0 * floor_ms / med);
  }
  return 0;
}
