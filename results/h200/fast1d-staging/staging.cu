// Pipeline depth experiment for the fast 1D kernel (zero mode, interior + zero edges).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define R 4
struct alignas(8) Taps { float v[64]; };

__device__ __forceinline__ float fetch0(const float* in, size_t n, long long x) {
    return (x >= 0 && x < (long long)n) ? in[x] : 0.0f;
}

template <int CH, int D, int MINB>
__global__ void __launch_bounds__(256, MINB) fastk(const float* __restrict__ input, float* __restrict__ output, size_t n, size_t w, size_t left, const __grid_constant__ Taps taps) {
    const size_t LOADS = R + 1;
    extern __shared__ __align__(16) float smem[];
    size_t threads = blockDim.x, t = threadIdx.x, tile = R * threads;
    size_t span = R * threads + R * ((w + R - 1) / R);
    size_t tiles = (n + tile - 1) / tile, grid = gridDim.x;
    auto staged = [&](size_t b) { long long o = (long long)(b * tile) - (long long)left; return span <= LOADS * threads && o >= 0 && (size_t)o + span <= n; };
    float v[D][LOADS];
    size_t b = blockIdx.x;
#pragma unroll
    for (int d = 0; d < D; ++d) {
        size_t bb = b + d * grid;
#pragma unroll
        for (int k = 0; k < (int)LOADS; ++k) v[d][k] = 0.f;
        if (bb < tiles && staged(bb)) {
            const float* p = input + bb * tile - left;
#pragma unroll
            for (int k = 0; k < (int)LOADS; ++k) { size_t i = t + k * threads; if (i < span) v[d][k] = p[i]; }
        }
    }
    while (true) {
#pragma unroll
        for (int d = 0; d < D; ++d) {
            if (b >= tiles) return;
            size_t tile_start = b * tile;
            long long origin = (long long)tile_start - (long long)left;
            if (staged(b)) {
#pragma unroll
                for (int k = 0; k < (int)LOADS; ++k) { size_t i = t + k * threads; if (i < span) smem[i] = v[d][k]; }
            } else {
                for (size_t k = t; k < span; k += threads) smem[k] = fetch0(input, n, origin + (long long)k);
            }
            __syncthreads();
            size_t nb = b + D * grid;
            if (nb < tiles && staged(nb)) {
                const float* p = input + nb * tile - left;
#pragma unroll
                for (int k = 0; k < (int)LOADS; ++k) { size_t i = t + k * threads; if (i < span) v[d][k] = p[i]; }
            }
            size_t o = tile_start + R * t;
            if (o < n) {
                float acc[R] = {0.f, 0.f, 0.f, 0.f};
                size_t base = R * t, last = w - R * (CH - 1);
                float4 lo = *reinterpret_cast<const float4*>(&smem[base]);
#pragma unroll
                for (int c = 0; c < CH; ++c) {
                    float4 hi = *reinterpret_cast<const float4*>(&smem[base + (c + 1) * R]);
                    float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                    for (int jj = 0; jj < R; ++jj)
                        if (c + 1 < CH || (size_t)jj < last) {
                            float m = taps.v[c * R + jj];
#pragma unroll
                            for (int r = 0; r < R; ++r) acc[r] = fmaf(x[r + jj], m, acc[r]);
                        }
                    lo = hi;
                }
                float* p = output + o;
                if (o + R <= n) *reinterpret_cast<float4*>(p) = make_float4(acc[0], acc[1], acc[2], acc[3]);
                else for (int r = 0; r < R; ++r) if (o + r < n) p[r] = acc[r];
            }
            __syncthreads();
            b += grid;
        }
    }
}


template <int CH, int MINB, int VEC>
__global__ void __launch_bounds__(256, MINB) fastv(const float* __restrict__ input, float* __restrict__ output, size_t n, size_t w, size_t left, const __grid_constant__ Taps taps) {
    extern __shared__ __align__(16) float smem[];
    size_t threads = blockDim.x, t = threadIdx.x, tile = R * threads;
    size_t span = R * threads + R * ((w + R - 1) / R);
    size_t tiles = (n + tile - 1) / tile, grid = gridDim.x;
    const int L4 = 2;  // float4 loads per thread (span/4 <= 2*threads)
    auto staged = [&](size_t b) { long long o = (long long)(b * tile) - (long long)left; return o >= 0 && (size_t)o + span <= n && (o % 4) == 0; };
    float4 v[L4];
    size_t b = blockIdx.x;
    size_t s4 = span / 4;
    auto load = [&](size_t bb) { const float4* p = reinterpret_cast<const float4*>(input + bb * tile - left);
#pragma unroll
        for (int k = 0; k < L4; ++k) { size_t i = t + k * threads; if (i < s4) v[k] = p[i]; } };
    if (b < tiles && staged(b)) load(b);
    while (b < tiles) {
        size_t tile_start = b * tile;
        long long origin = (long long)tile_start - (long long)left;
        if (staged(b)) {
#pragma unroll
            for (int k = 0; k < L4; ++k) { size_t i = t + k * threads; if (i < s4) reinterpret_cast<float4*>(smem)[i] = v[k]; }
        } else {
            for (size_t k = t; k < span; k += threads) smem[k] = fetch0(input, n, origin + (long long)k);
        }
        __syncthreads();
        size_t nb = b + grid;
        if (nb < tiles && staged(nb)) load(nb);
        size_t o = tile_start + R * t;
        if (o < n) {
            float acc[R] = {0.f, 0.f, 0.f, 0.f};
            size_t base = R * t, last = w - R * (CH - 1);
            float4 lo = *reinterpret_cast<const float4*>(&smem[base]);
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                float4 hi = *reinterpret_cast<const float4*>(&smem[base + (c + 1) * R]);
                float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                for (int jj = 0; jj < R; ++jj)
                    if (c + 1 < CH || (size_t)jj < last) {
                        float m = taps.v[c * R + jj];
#pragma unroll
                        for (int r = 0; r < R; ++r) acc[r] = fmaf(x[r + jj], m, acc[r]);
                    }
                lo = hi;
            }
            float* p = output + o;
            if (o + R <= n) *reinterpret_cast<float4*>(p) = make_float4(acc[0], acc[1], acc[2], acc[3]);
            else for (int r = 0; r < R; ++r) if (o + r < n) p[r] = acc[r];
        }
        __syncthreads();
        b = nb;
    }
}


template <int CH, int MINB, int ROT>
__global__ void __launch_bounds__(256, MINB) fastvs(const float* __restrict__ input, float* __restrict__ output, size_t n, size_t w, size_t left, const __grid_constant__ Taps taps) {
    extern __shared__ __align__(16) float smem[];
    size_t threads = blockDim.x, t = threadIdx.x, tile = R * threads;
    size_t span = R * threads + R * ((w + R - 1) / R);
    size_t tiles = (n + tile - 1) / tile, grid = gridDim.x;
    const int L4 = 2;
    // q: elements from the aligned group start to the tile's origin (same for every tile)
    size_t q = (((size_t)input / 4) + (size_t)(-(long long)left)) & 3;
    size_t g = (span + q + 3) / 4;
    auto staged = [&](size_t b) { long long o = (long long)(b * tile) - (long long)left - (long long)q; return g <= L4 * threads && o >= 0 && (size_t)o + 4 * g <= n; };
    float4 v[L4];
    size_t b = blockIdx.x;
    auto load = [&](size_t bb) { const float4* p = reinterpret_cast<const float4*>(input + bb * tile - left - q);
#pragma unroll
        for (int k = 0; k < L4; ++k) { size_t i = t + k * threads; if (i < g) v[k] = p[i]; } };
    if (b < tiles && staged(b)) load(b);
    while (b < tiles) {
        size_t tile_start = b * tile;
        long long origin = (long long)tile_start - (long long)left;
        if (staged(b)) {
#pragma unroll
            for (int k = 0; k < L4; ++k) {
                size_t i = t + k * threads;
                if (i < g) {
                    float e[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
                    long long base = (long long)(4 * i) - (long long)q;
                    if (ROT) {
                        int rot = (int)((t >> 3) & 3);
#pragma unroll
                        for (int s = 0; s < 4; ++s) {
                            int kk = (s + rot) & 3;
                            float val = kk == 0 ? e[0] : kk == 1 ? e[1] : kk == 2 ? e[2] : e[3];
                            long long idx = base + kk;
                            if (idx >= 0 && idx < (long long)span) smem[idx] = val;
                        }
                    } else {
#pragma unroll
                        for (int kk = 0; kk < 4; ++kk) { long long idx = base + kk; if (idx >= 0 && idx < (long long)span) smem[idx] = e[kk]; }
                    }
                }
            }
        } else {
            for (size_t k = t; k < span; k += threads) smem[k] = fetch0(input, n, origin + (long long)k);
        }
        __syncthreads();
        size_t nb = b + grid;
        if (nb < tiles && staged(nb)) load(nb);
        size_t o = tile_start + R * t;
        if (o < n) {
            float acc[R] = {0.f, 0.f, 0.f, 0.f};
            size_t base = R * t, last = w - R * (CH - 1);
            float4 lo = *reinterpret_cast<const float4*>(&smem[base]);
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                float4 hi = *reinterpret_cast<const float4*>(&smem[base + (c + 1) * R]);
                float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                for (int jj = 0; jj < R; ++jj)
                    if (c + 1 < CH || (size_t)jj < last) {
                        float m = taps.v[c * R + jj];
#pragma unroll
                        for (int r = 0; r < R; ++r) acc[r] = fmaf(x[r + jj], m, acc[r]);
                    }
                lo = hi;
            }
            float* p = output + o;
            if (o + R <= n) *reinterpret_cast<float4*>(p) = make_float4(acc[0], acc[1], acc[2], acc[3]);
            else for (int r = 0; r < R; ++r) if (o + r < n) p[r] = acc[r];
        }
        __syncthreads();
        b = nb;
    }
}


// Tiles shifted by eps outputs so that each tile's first input is 16-byte aligned; outputs then
// start anywhere (vector store only when aligned).
template <int CH, int MINB>
__global__ void __launch_bounds__(256, MINB) fasto(const float* __restrict__ input, float* __restrict__ output, size_t n, size_t w, size_t left, const __grid_constant__ Taps taps) {
    extern __shared__ __align__(16) float smem[];
    size_t threads = blockDim.x, t = threadIdx.x, tile = R * threads;
    size_t span = R * threads + R * ((w + R - 1) / R);
    // delta: tile_start = b*tile - eps, with (input index + tile_start - left) % 4 == 0
    size_t eps = (((size_t)input / 4) - left) & 3;   // tile_start ≡ -eps, origin index ≡ idx - eps - left ≡ 0
    size_t tiles = (n + eps + tile - 1) / tile, grid = gridDim.x;
    const int L4 = 2;
    size_t s4 = span / 4;
    auto staged = [&](size_t b) { long long o = (long long)(b * tile) - (long long)eps - (long long)left; return s4 <= L4 * threads && o >= 0 && (size_t)o + span <= n; };
    float4 v[L4];
    size_t b = blockIdx.x;
    auto load = [&](size_t bb) { const float4* p = reinterpret_cast<const float4*>(input + bb * tile - eps - left);
#pragma unroll
        for (int k = 0; k < L4; ++k) { size_t i = t + k * threads; if (i < s4) v[k] = p[i]; } };
    if (b < tiles && staged(b)) load(b);
    while (b < tiles) {
        long long tile_start = (long long)(b * tile) - (long long)eps;
        long long origin = tile_start - (long long)left;
        if (staged(b)) {
#pragma unroll
            for (int k = 0; k < L4; ++k) { size_t i = t + k * threads; if (i < s4) reinterpret_cast<float4*>(smem)[i] = v[k]; }
        } else {
            for (size_t k = t; k < span; k += threads) smem[k] = fetch0(input, n, origin + (long long)k);
        }
        __syncthreads();
        size_t nb = b + grid;
        if (nb < tiles && staged(nb)) load(nb);
        long long o = tile_start + R * (long long)t;
        if (o + R > 0 && o < (long long)n) {
            float acc[R] = {0.f, 0.f, 0.f, 0.f};
            size_t base = R * t, last = w - R * (CH - 1);
            float4 lo = *reinterpret_cast<const float4*>(&smem[base]);
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                float4 hi = *reinterpret_cast<const float4*>(&smem[base + (c + 1) * R]);
                float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                for (int jj = 0; jj < R; ++jj)
                    if (c + 1 < CH || (size_t)jj < last) {
                        float m = taps.v[c * R + jj];
#pragma unroll
                        for (int r = 0; r < R; ++r) acc[r] = fmaf(x[r + jj], m, acc[r]);
                    }
                lo = hi;
            }
            float* p = output + o;
            if (o >= 0 && o + R <= (long long)n && ((size_t)p % 16) == 0) *reinterpret_cast<float4*>(p) = make_float4(acc[0], acc[1], acc[2], acc[3]);
            else for (int r = 0; r < R; ++r) if (o + r >= 0 && o + r < (long long)n) p[r] = acc[r];
        }
        __syncthreads();
        b = nb;
    }
}

__global__ void copy4(const float4* __restrict__ a, float4* __restrict__ b, size_t n4) {
    size_t i = blockIdx.x * (size_t)blockDim.x * 4 + threadIdx.x, s = (size_t)gridDim.x * blockDim.x * 4;
    for (; i < n4; i += s) {
        float4 x[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) if (i + k * blockDim.x < n4) x[k] = a[i + k * blockDim.x];
#pragma unroll
        for (int k = 0; k < 4; ++k) if (i + k * blockDim.x < n4) b[i + k * blockDim.x] = x[k];
    }
}

template <class F> float timeit(F f) {
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    for (int i = 0; i < 3; ++i) f();
    std::vector<float> ts;
    for (int i = 0; i < 20; ++i) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); return ts[10];
}

static float *din, *dout; static size_t N = (size_t)1 << 27; static std::vector<float> hin; static float dtod_gbs;

template <int CH, int D, int MINB>
void run_unused(int w) {
    auto k = fastk<CH, D, MINB>;
    size_t span = R * 256 + R * ((w + R - 1) / R);
    int per; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, 256, span * 4);
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    size_t tiles = (N + 1023) / 1024; int grid = (int)std::min<size_t>(tiles, (size_t)sms * per);
    Taps taps; for (int i = 0; i < 64; ++i) taps.v[i] = (i < w) ? 0.01f * (i + 1) : 0.f;
    size_t left = w / 2;
    cudaMemset(dout, 0xff, N * 4);
    float ms = timeit([&] { k<<<grid, 256, span * 4>>>(din, dout, N, w, left, taps); });
    cudaFuncAttributes at; cudaFuncGetAttributes(&at, k);
    // check a sample
    std::vector<float> h(N); cudaMemcpy(h.data(), dout, N * 4, cudaMemcpyDeviceToHost);
    double maxerr = 0; for (size_t i = 0; i < N; i += 997) { double s = 0; for (int j = 0; j < w; ++j) { long long x = (long long)i - (long long)left + j; if (x >= 0 && x < (long long)N) s += (double)hin[x] * taps.v[j]; } maxerr = std::max(maxerr, std::abs(s - h[i])); }
    for (size_t i = N - 2000; i < N; ++i) { double s = 0; for (int j = 0; j < w; ++j) { long long x = (long long)i - (long long)left + j; if (x >= 0 && x < (long long)N) s += (double)hin[x] * taps.v[j]; } maxerr = std::max(maxerr, std::abs(s - h[i])); }
    double gbs = 8.0 * N / ms / 1e6;
    printf("w=%3d D=%d minb=%d regs=%3d blocks/SM=%d  %.4f ms  %6.0f GB/s  %5.1f%% floor  maxerr %.2e\n", w, D, MINB, at.numRegs, per, ms, gbs, 100 * gbs / dtod_gbs, maxerr);
}


template <class K>
void runk(const char* name, K k, int w, size_t left, int waves, int minb_dummy) {
    size_t span = R * 256 + R * ((w + R - 1) / R);
    int per; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, 256, span * 4);
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    size_t tiles = (N + 1023) / 1024; int grid = waves == 0 ? (int)tiles : (int)std::min<size_t>(tiles, (size_t)sms * per * waves);
    Taps taps; for (int i = 0; i < 64; ++i) taps.v[i] = (i < w) ? 0.01f * (i + 1) : 0.f;
    cudaMemset(dout, 0xff, N * 4);
    float ms = timeit([&] { k<<<grid, 256, span * 4>>>(din, dout, N, w, left, taps); });
    cudaFuncAttributes at; cudaFuncGetAttributes(&at, k);
    std::vector<float> h(N); cudaMemcpy(h.data(), dout, N * 4, cudaMemcpyDeviceToHost);
    double maxerr = 0; for (size_t i = 0; i < N; i += (i < N - 3000 ? 997 : 1)) { double s = 0; for (int j = 0; j < w; ++j) { long long x = (long long)i - (long long)left + j; if (x >= 0 && x < (long long)N) s += (double)hin[x] * taps.v[j]; } maxerr = std::max(maxerr, std::abs(s - h[i])); }
    double gbs = 8.0 * N / ms / 1e6;
    printf("%-8s w=%3d left=%zu waves=%d regs=%3d blocks/SM=%d grid=%d  %.4f ms  %6.0f GB/s  %5.1f%% floor  maxerr %.2e\n", name, w, left, waves, at.numRegs, per, grid, ms, gbs, 100 * gbs / dtod_gbs, maxerr);
}

#define SWEEP(CH, W) run<CH,1,5>(W); run<CH,2,5>(W); run<CH,2,4>(W); run<CH,3,4>(W); run<CH,3,3>(W); run<CH,4,3>(W);
int main() {
    cudaMalloc(&din, N * 4); cudaMalloc(&dout, N * 4);
    hin.resize(N); srand(1); for (size_t i = 0; i < N; ++i) hin[i] = (float)rand() / RAND_MAX - 0.5f;
    cudaMemcpy(din, hin.data(), N * 4, cudaMemcpyHostToDevice);
    float ms = timeit([&] { cudaMemcpy(dout, din, N * 4, cudaMemcpyDeviceToDevice); });
    dtod_gbs = 8.0 * N / ms / 1e6;
    printf("DtoD %.4f ms %.0f GB/s\n", ms, dtod_gbs);
    for (int g : {1, 2, 4, 8}) {
        int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
        float m = timeit([&] { copy4<<<sms * 8 * g / 2, 256>>>((const float4*)din, (float4*)dout, N / 4); });
        printf("copy4 grid=%d: %.4f ms %.0f GB/s %.1f%%\n", sms * 8 * g / 2, m, 8.0 * N / m / 1e6, 100 * 8.0 * N / m / 1e6 / dtod_gbs);
    }



    for (int rep = 0; rep < 2; ++rep) {
        runk("scalar", fastk<1,1,5>, 3, 1, 1, 0);
        runk("vec4al", fastv<1,6,1>, 3, 0, 1, 0);
        runk("fasto5", fasto<1,5>, 3, 1, 1, 0);
        runk("fasto6", fasto<1,6>, 3, 1, 1, 0);
        runk("fasto6", fasto<1,6>, 3, 0, 1, 0);
        runk("scalar", fastk<2,1,5>, 7, 3, 1, 0);
        runk("fasto6", fasto<2,6>, 7, 3, 1, 0);
        runk("scalar", fastk<4,1,5>, 15, 7, 1, 0);
        runk("fasto5", fasto<4,5>, 15, 7, 1, 0);
        runk("fasto6", fasto<4,6>, 15, 7, 1, 0);
        runk("scalar", fastk<8,1,5>, 31, 15, 1, 0);
        runk("fasto5", fasto<8,5>, 31, 15, 1, 0);
        runk("fasto6", fasto<8,6>, 31, 15, 1, 0);
        runk("scalar", fastk<16,1,5>, 63, 31, 1, 0);
        runk("fasto5", fasto<16,5>, 63, 31, 1, 0);
    }
    cudaError_t e = cudaGetLastError(); printf("last error: %s\n", cudaGetErrorString(e));
}
