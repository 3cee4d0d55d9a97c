// Runs conv2d_boxr3_u8_w5 (the Rust PTX) directly: occupancy, rows per band, modes; checks zero mode against a CPU reference.
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
static int C = 3;
static void ref(const std::vector<uint8_t>& in, std::vector<uint8_t>& out, int W, int H, float t) {
  int rb = W * C;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < rb; x++) {
      int s = 0;
      for (int dy = -2; dy <= 2; dy++)
        for (int dx = -2; dx <= 2; dx++) {
          int yy = y + dy, xx = x + C * dx;
          if (yy < 0 || yy >= H || xx < 0 || xx >= rb) continue;
          s += in[(size_t)yy * rb + xx];
        }
      float f = fmaf((float)(8388608 + s), t, -8388608.0f * t);
      out[(size_t)y * rb + x] = (uint8_t)std::min(255.0f, std::max(0.0f, nearbyintf(f)));
    }
}

int main(int argc, char** argv) {
  CK(cudaFree(0));
  if (getenv("CH")) C = atoi(getenv("CH"));
  char kname[64]; snprintf(kname, 64, "conv2d_boxr%d_u8_w5", C);
  int nk = argc - 1; std::vector<CUfunction> fns(nk);
  for (int k = 0; k < nk; k++) {
    std::ifstream f(argv[k + 1]); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
    CUmodule mod; DK(cuModuleLoadData(&mod, ptx.c_str()));
    DK(cuModuleGetFunction(&fns[k], mod, kname));
    int nb; DK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, fns[k], 256, 49152));
    int regs; DK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fns[k]));
    DK(cuFuncSetAttribute(fns[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 49152));
    printf("%s: %d blocks/SM at 49152 B, %d regs\n", argv[k + 1], nb, regs);
  }
  int W = getenv("SIDE") ? atoi(getenv("SIDE")) : 4096, H = W; float t = 1.0f / 25.0f;
  size_t bytes = (size_t)W * C * H;
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
  struct { float t, nt, m, z; } taps = {t, -8388608.0f * t, 8388608.0f, 0.0f};
  unsigned w = W, hh = H; size_t pitch = (size_t)W * C;
  auto list = [](const char* e, const char* d) { std::vector<unsigned> v; std::stringstream ss(getenv(e) ? getenv(e) : d);
    std::string x; while (std::getline(ss, x, ',')) v.push_back(atoi(x.c_str())); return v; };
  std::vector<unsigned> rowsl = list("ROWS", "47,94"), modes = list("MODES", "0");
  int passes = getenv("PASSES") ? atoi(getenv("PASSES")) : 2;
  for (int pass = 0; pass < passes; pass++)
  for (unsigned mode : modes) for (unsigned rows : rowsl) for (int k = 0; k < nk; k++) {
    unsigned grid = C * ((H + rows - 1) / rows);
    void* args[] = {&din, &dout, &w, &hh, &pitch, &pitch, &rows, &mode, &taps};
    CUfunction fn = fns[k];
    auto go = [&] { DK(cuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, 49152, 0, args, nullptr)); };
    CK(cudaMemset(dout, 0xab, bytes)); go(); CK(cudaDeviceSynchronize());
    std::vector<uint8_t> got(bytes); CK(cudaMemcpy(got.data(), dout, bytes, cudaMemcpyDeviceToHost));
    size_t bad = 0; if (mode == 0) for (size_t i = 0; i < bytes; i++) bad += got[i] != want[i];
    float med = timeit(go);
    printf("C=%d pass %d %s mode=%u rows=%u grid=%u bad=%zu median %.4f ms  %.1f%% of floor\n", C, pass, argv[k + 1], mode, rows, grid, bad, med, 100.0 * floor_ms / med);
  }
  return 0;
}
