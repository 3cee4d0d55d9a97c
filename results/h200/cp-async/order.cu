// Tile order and pipeline shape of a streaming kernel on the H200: the rows
// kernels' cp.async pipeline (16 KB tiles, two slots, a barrier per tile)
// copying 256 MiB to 256 MiB, with blocks walking contiguous runs of tiles or
// grid-strided tiles, against a grid-stride vector copy and cuMemcpyDtoD.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void copy_gs(const uint4* __restrict__ in, uint4* __restrict__ out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) out[i] = in[i];
}

__device__ __forceinline__ void cpa16(uint32_t dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N)); }

// ORDER 0: contiguous runs of tiles per block; 1: grid-stride tiles;
// 2: runs of RUN tiles handed out round-robin (block b takes run b, b+grid, ...).
// STORE 0: 4-byte stores, 128 contiguous bytes per warp instruction; 1: 16-byte stores.
// LOAD 0: cp.async.cg 16 B per thread; 1: cp.async.ca; 2: cp.async.cg .L2::128B;
// 3: one cp.async.bulk per tile (sm_90) completing on an mbarrier.
template <int TILE_BYTES, int STAGES, int ORDER, int STORE, int RUN, int LOAD>
__global__ void __launch_bounds__(256) pipe(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, size_t tiles) {
    extern __shared__ __align__(16) uint8_t sm[];
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(sm);
    const int t = threadIdx.x;
    const size_t grid = gridDim.x, bid = blockIdx.x;
    constexpr int SLOT = TILE_BYTES + 64;  // halo chunks as the rows kernels read
    constexpr int CHUNKS = TILE_BYTES / 16 + 2;
    auto tile_of = [&](size_t k) -> size_t {  // the block's k-th tile, or tiles
        if (ORDER == 0) {
            size_t first = tiles * bid / grid, end = tiles * (bid + 1) / grid;
            return first + k < end ? first + k : tiles;
        } else if (ORDER == 1) {
            size_t b = bid + k * grid;
            return b < tiles ? b : tiles;
        } else {
            size_t run = k / RUN, in_run = k % RUN;
            size_t b = (bid + run * grid) * RUN + in_run;
            return b < tiles ? b : tiles;
        }
    };
    const uint32_t bars = base + STAGES * SLOT;
    if (LOAD == 3) {
        if (t == 0) {
            for (int i = 0; i < STAGES; i++) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bars + 8 * i));
            asm volatile("fence.mbarrier_init.release.cluster;");
        }
        __syncthreads();
    }
    auto issue = [&](int slot, size_t b) {
        if (b < tiles) {
            const uint8_t* src = in + b * TILE_BYTES - 16;
            if (LOAD == 3) {
                if (t == 0) {
                    asm volatile("fence.proxy.async.shared::cta;");
                    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bars + 8 * slot), "r"(CHUNKS * 16));
                    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                                 :: "r"(base + slot * SLOT), "l"(src), "r"(CHUNKS * 16), "r"(bars + 8 * slot) : "memory");
                }
            } else {
                for (int c = t; c < CHUNKS; c += 256) {
                    uint32_t d = base + slot * SLOT + c * 16;
                    const uint8_t* g = src + c * 16;
                    if (LOAD == 0) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(g));
                    if (LOAD == 1) asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" :: "r"(d), "l"(g));
                    if (LOAD == 2) asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" :: "r"(d), "l"(g));
                }
            }
        }
        if (LOAD != 3) commit();
    };
    size_t k = 0;
    for (int s = 0; s < STAGES - 1; s++) issue(s, tile_of(s));
    while (true) {
        size_t b = tile_of(k);
        if (b >= tiles) break;
        issue((k + STAGES - 1) % STAGES, tile_of(k + STAGES - 1));
        if (LOAD == 3) {
            uint32_t bar = bars + 8 * (k % STAGES), parity = (k / STAGES) & 1;
            asm volatile("{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W%=; }" :: "r"(bar), "r"(parity) : "memory");
        } else {
            wait<STAGES - 1>();
        }
        __syncthreads();
        const uint32_t src = base + (k % STAGES) * SLOT + 16;
        uint8_t* dst = out + b * TILE_BYTES;
        if (STORE == 0) {
            for (int i = t; i < TILE_BYTES / 4; i += 256) {
                uint32_t v;
                asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(src + 4 * i));
                reinterpret_cast<uint32_t*>(dst)[i] = v;
            }
        } else {
            for (int i = t; i < TILE_BYTES / 16; i += 256) {
                uint4 v;
                asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(src + 16 * i));
                reinterpret_cast<uint4*>(dst)[i] = v;
            }
        }
        __syncthreads();
        k++;
    }
    if (LOAD != 3) wait<0>();
}

__global__ void fill(uint8_t* p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = (uint8_t)((i * 7) % 251);
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

static int g_reps = 20, g_warm = 3;
template <typename F> float timeit(F f) {
    int reps = g_reps;
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < g_warm; i++) f();
    std::vector<float> ts;
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(a)); for (int i = 0; i < (g_warm ? 4 : 1); i++) f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms / (g_warm ? 4 : 1));
    }
    CK(cudaGetLastError());
    return median(ts);
}

int main(int argc, char**) {
    int passes = 2;
    if (argc > 1) { g_reps = 1; g_warm = 0; passes = 1; }
    const size_t bytes = 256ull << 20;
    uint8_t *in, *out;
    CK(cudaMalloc(&in, bytes + 128)); CK(cudaMalloc(&out, bytes));
    CK(cudaMemset(in, 1, bytes + 128)); in += 64;
    fill<<<1024, 256>>>(in, bytes); CK(cudaDeviceSynchronize());
    std::vector<uint8_t> host(bytes);
    auto verify = [&](const char* name) {
        CK(cudaMemcpy(host.data(), out, bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < bytes; i++) if (host[i] != (uint8_t)((i * 7) % 251)) { printf("WRONG %s at %zu\n", name, i); return; }
    }; CK(cudaMemset(out, 0, bytes));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    float dtod = timeit([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); });
    double floor_gbs = 2.0 * bytes / dtod / 1e6;
    printf("DtoD 256 MiB: %.4f ms, %.0f GB/s (in + out)\n", dtod, floor_gbs);
    auto report = [&](const char* name, float ms) { printf("%-44s %.4f ms %5.0f GB/s %5.1f%% of DtoD\n", name, ms, 2.0 * bytes / ms / 1e6, 100.0 * dtod / ms); };
    report("copy_gs uint4 512x4*SMs", timeit([&] { copy_gs<<<4 * sms, 512>>>((const uint4*)in, (uint4*)out, bytes / 16); }));
#define RUNP(TB, ST, OR, STO, RUN, BPS, NAME, LD) do { \
        auto k = pipe<TB, ST, OR, STO, RUN, LD>; \
        int smem = (228 * 1024) / (BPS) - 1024 - 1024; \
        CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem)); \
        int per; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, 256, smem)); \
        size_t tiles = bytes / TB; \
        float ms = timeit([&] { k<<<per * sms, 256, smem>>>(in, out, tiles); }); \
        char lab[96]; snprintf(lab, 96, "%s %d/SM", NAME, per); report(lab, ms); \
        if (pass == 0) { CK(cudaMemset(out, 0, bytes)); k<<<per * sms, 256, smem>>>(in, out, tiles); CK(cudaDeviceSynchronize()); verify(NAME); } \
    } while (0)
    for (int pass = 0; pass < passes; pass++) {
        printf("-- pass %d\n", pass + 1);
        RUNP(16384, 2, 0, 0, 1, 3, "runs   cg     16K 2st", 0);
        RUNP(16384, 2, 1, 0, 1, 3, "stride cg     16K 2st", 0);
        RUNP(16384, 2, 0, 0, 1, 3, "runs   ca     16K 2st", 1);
        RUNP(16384, 2, 1, 0, 1, 3, "stride ca     16K 2st", 1);
        RUNP(16384, 2, 0, 0, 1, 3, "runs   cg128B 16K 2st", 2);
        RUNP(16384, 2, 1, 0, 1, 3, "stride cg128B 16K 2st", 2);
        RUNP(16384, 2, 0, 0, 1, 3, "runs   bulk   16K 2st", 3);
        RUNP(16384, 2, 1, 0, 1, 3, "stride bulk   16K 2st", 3);
        RUNP(16384, 3, 0, 0, 1, 3, "runs   bulk   16K 3st", 3);
        RUNP(16384, 3, 1, 0, 1, 3, "stride bulk   16K 3st", 3);
        RUNP(16384, 3, 0, 0, 1, 3, "runs   ca     16K 3st", 1);
    }
    return 0;
}
