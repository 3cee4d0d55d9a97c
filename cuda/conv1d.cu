// CUDA C++ twins of the Rust 1D convolution kernels
// (kernels-gpu/src/conv/conv1d.rs): the same algorithms, the same
// parameters, the same names, f32 only. The `conv` benchmark compiles this
// file with `nvcc -O3 -ptx` for the present GPU, loads it next to the Rust
// module and times both on the same buffers, so the Rust/C++ time ratio
// compares code generation, not algorithms.
//
// The loops here are written plainly, as a CUDA programmer would, and
// nvcc unrolls them. Some of their Rust counterparts spell out a loop
// shape instead — the sums in 4-tap steps (conv::elem::dot) or 16/8/4-tap
// blocks (dot_blocks, the basic kernel), the fast kernel's chunk loop four
// chunks per iteration — where LLVM's own unrolling made slower code: the
// same taps in the same order, unrolled differently (docs/convolution.md,
// "CUDA C++ twins").

#include <cstddef>

#define FAST_OUTPUTS 4

// coalesce_kernels::LAUNCH_BOUNDS: the Rust build writes the same bounds
// into the sm_90+ PTX of the Rust kernels (.maxntid / .minnctapersm), so
// both sides compile under the same register budget.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define LAUNCH_BOUNDS(threads, blocks) __launch_bounds__(threads, blocks)
#else
#define LAUNCH_BOUNDS(threads, blocks)
#endif

// coalesce_kernels::conv::{PARAM_MASK_BYTES, FIXED_MASK_TAPS}: the mask
// parameters of the run-time and the compile-time constant-mask kernels,
// passed by value (a __grid_constant__ parameter, read in place in the
// parameter space) as the Rust kernels' ParamBytes parameter.
#define RUNTIME_TAPS 1000
#define FIXED_TAPS 64
template <int N>
struct alignas(8) Taps {
    float v[N];
};

// coalesce_kernels::conv::map_index: the input index position x takes
// under `mode`, or -1 for zero.
__device__ __forceinline__ long long map_index(long long x, long long n, unsigned mode) {
    if (0 <= x && x < n) return x;
    long long p;
    switch (mode) {
        case 1: return x < 0 ? 0 : n - 1;
        case 2:
            p = ((x % (2 * n)) + 2 * n) % (2 * n);
            return p < n ? p : 2 * n - 1 - p;
        case 3:
            if (n == 1) return 0;
            p = ((x % (2 * n - 2)) + (2 * n - 2)) % (2 * n - 2);
            return p < n ? p : 2 * n - 2 - p;
        case 4: return ((x % n) + n) % n;
        default: return -1;
    }
}

__device__ __forceinline__ float fetch(const float* input, size_t n, long long x, unsigned mode) {
    long long k = map_index(x, (long long)n, mode);
    return k < 0 ? 0.0f : input[k];
}

struct ParamMask {
    const float* t;  // the kernel's taps parameter, in the parameter space
    __device__ __forceinline__ float tap(size_t j) const { return t[j]; }
};
struct GlobalMask {
    const float* p;
    __device__ __forceinline__ float tap(size_t j) const { return p[j]; }
};

template <class M>
__device__ __forceinline__ void direct(const float* input, float* output, size_t n, M mask, size_t w, size_t left,
                                       unsigned mode) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
        long long start = (long long)i - (long long)left;
        float acc = 0.0f;
        if (start >= 0 && (size_t)start + w <= n) {
            const float* p = input + start;
            for (size_t j = 0; j < w; ++j) acc = fmaf(p[j], mask.tap(j), acc);
        } else {
            for (size_t j = 0; j < w; ++j) acc = fmaf(fetch(input, n, start + (long long)j, mode), mask.tap(j), acc);
        }
        output[i] = acc;
    }
}

template <class M>
__device__ __forceinline__ void tiled(const float* input, float* output, size_t n, M mask, size_t w, size_t left,
                                      unsigned mode) {
    extern __shared__ __align__(16) float smem[];
    size_t threads = blockDim.x, t = threadIdx.x, right = w - 1 - left;
    size_t tiles = (n + threads - 1) / threads;
    for (size_t b = blockIdx.x; b < tiles; b += gridDim.x) {
        size_t tile_start = b * threads;
        long long origin = (long long)tile_start - (long long)left;
        for (size_t h = (t + left) % threads; h < left; h += threads)
            smem[h] = fetch(input, n, origin + (long long)h, mode);
        smem[left + t] = fetch(input, n, (long long)(tile_start + t), mode);
        for (size_t h = t; h < right; h += threads)
            smem[left + threads + h] = fetch(input, n, (long long)(tile_start + threads + h), mode);
        __syncthreads();
        size_t i = tile_start + t;
        if (i < n) {
            float acc = 0.0f;
            for (size_t j = 0; j < w; ++j) acc = fmaf(smem[t + j], mask.tap(j), acc);
            output[i] = acc;
        }
        __syncthreads();
    }
}

template <class M>
__device__ __forceinline__ void tiled_l2(const float* input, float* output, size_t n, M mask, size_t w, size_t left,
                                         unsigned mode) {
    extern __shared__ __align__(16) float smem[];
    size_t threads = blockDim.x, t = threadIdx.x;
    size_t tiles = (n + threads - 1) / threads;
    for (size_t b = blockIdx.x; b < tiles; b += gridDim.x) {
        size_t tile_start = b * threads;
        size_t tile_end = tile_start + threads < n ? tile_start + threads : n;
        size_t i = tile_start + t;
        if (i < n) smem[t] = input[i];
        __syncthreads();
        if (i < n) {
            long long start = (long long)i - (long long)left;
            float acc = 0.0f;
            for (size_t j = 0; j < w; ++j) {
                long long x = start + (long long)j;
                float v = (x >= (long long)tile_start && x < (long long)tile_end) ? smem[x - tile_start]
                                                                                  : fetch(input, n, x, mode);
                acc = fmaf(v, mask.tap(j), acc);
            }
            output[i] = acc;
        }
        __syncthreads();
    }
}

// Whether fast's tile b lies inside the input and takes at most LOADS loads
// per thread (max_span = LOADS * threads): those tiles are prefetched into
// registers.
__device__ __forceinline__ bool fast_staged(size_t b, size_t tile, size_t left, size_t span, size_t max_span,
                                            size_t n) {
    long long origin = (long long)(b * tile) - (long long)left;
    return span <= max_span && origin >= 0 && (size_t)origin + span <= n;
}

// The inputs of a staged tile starting at input + origin into v, LOADS
// independent loads per thread.
template <size_t LOADS>
__device__ __forceinline__ void fast_load(float (&v)[LOADS], const float* input, size_t origin, size_t t,
                                          size_t threads, size_t span) {
    const float* p = input + origin;
#pragma unroll
    for (size_t k = 0; k < LOADS; ++k) {
        size_t i = t + k * threads;
        if (i < span) v[k] = p[i];
    }
}

// fast's outputs o … o + R − 1 (those below n).
__device__ __forceinline__ void fast_store(float* output, size_t n, size_t o, const float (&acc)[FAST_OUTPUTS]) {
    float* p = output + o;
    if (o + FAST_OUTPUTS <= n && ((size_t)p % 16) == 0) {
        *reinterpret_cast<float4*>(p) = make_float4(acc[0], acc[1], acc[2], acc[3]);
    } else {
        for (size_t r = 0; r < FAST_OUTPUTS; ++r)
            if (o + r < n) p[r] = acc[r];
    }
}

// CH = 0: chunk count at run time; CH > 0: CH = ceil(w / R) at compile
// time, mask in the taps parameter (the Rust kernels conv1d_fast{CH}_f32).
template <class M, int CH>
__device__ __forceinline__ void fast(const float* input, float* output, size_t n, M mask, size_t w, size_t left,
                                     unsigned mode) {
    const size_t R = FAST_OUTPUTS;
    const size_t LOADS = R + 1;
    if (CH > 0 && (w + R - 1) / R != (size_t)CH) return;
    extern __shared__ __align__(16) float smem[];
    size_t threads = blockDim.x, t = threadIdx.x, tile = R * threads;
    size_t full = w / R, rem = w - full * R;
    size_t span = R * threads + R * ((w + R - 1) / R);
    size_t tiles = (n + tile - 1) / tile;
    size_t grid = gridDim.x;
    float v[LOADS];
#pragma unroll
    for (size_t k = 0; k < LOADS; ++k) v[k] = 0.0f;
    size_t b = blockIdx.x;
    if (b < tiles && fast_staged(b, tile, left, span, LOADS * threads, n))
        fast_load(v, input, b * tile - left, t, threads, span);
    while (b < tiles) {
        size_t tile_start = b * tile;
        long long origin = (long long)tile_start - (long long)left;
        if (fast_staged(b, tile, left, span, LOADS * threads, n)) {
#pragma unroll
            for (size_t k = 0; k < LOADS; ++k) {
                size_t i = t + k * threads;
                if (i < span) smem[i] = v[k];
            }
        } else if (origin >= 0 && (size_t)origin + span <= n) {
            const float* p = input + origin;
            for (size_t k = t; k < span; k += threads) smem[k] = p[k];
        } else {
            for (size_t k = t; k < span; k += threads) smem[k] = fetch(input, n, origin + (long long)k, mode);
        }
        __syncthreads();
        size_t next = b + grid;
        if (next < tiles && fast_staged(next, tile, left, span, LOADS * threads, n))
            fast_load(v, input, next * tile - left, t, threads, span);
        size_t o = tile_start + R * t;
        if (CH > 0 && o < n) {
            float acc[R] = {0.0f, 0.0f, 0.0f, 0.0f};
            size_t base = R * t, last = w - R * (CH - 1);
            float4 lo = *reinterpret_cast<const float4*>(&smem[base]);
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                float4 hi = *reinterpret_cast<const float4*>(&smem[base + (c + 1) * R]);
                float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                for (int jj = 0; jj < (int)R; ++jj) {
                    if (c + 1 < CH || (size_t)jj < last) {
                        float m = mask.tap(c * R + jj);
#pragma unroll
                        for (size_t r = 0; r < R; ++r) acc[r] = fmaf(x[r + jj], m, acc[r]);
                    }
                }
                lo = hi;
            }
            fast_store(output, n, o, acc);
        } else if (o < n) {
            float acc[R] = {0.0f, 0.0f, 0.0f, 0.0f};
            size_t base = R * t;
            float4 lo = *reinterpret_cast<const float4*>(&smem[base]);
            for (size_t c = 0; c < full; ++c) {
                float4 hi = *reinterpret_cast<const float4*>(&smem[base + (c + 1) * R]);
                float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                for (size_t jj = 0; jj < R; ++jj) {
                    float m = mask.tap(c * R + jj);
#pragma unroll
                    for (size_t r = 0; r < R; ++r) acc[r] = fmaf(x[r + jj], m, acc[r]);
                }
                lo = hi;
            }
            if (rem > 0) {
                float4 hi = *reinterpret_cast<const float4*>(&smem[base + (full + 1) * R]);
                float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                for (size_t jj = 0; jj < R; ++jj) {
                    if (jj < rem) {
                        float m = mask.tap(full * R + jj);
#pragma unroll
                        for (size_t r = 0; r < R; ++r) acc[r] = fmaf(x[r + jj], m, acc[r]);
                    }
                }
            }
            fast_store(output, n, o, acc);
        }
        __syncthreads();
        b = next;
    }
}

#define KERNEL_GM(name, algo, THREADS, BLOCKS)                                                                \
    extern "C" __global__ void LAUNCH_BOUNDS(THREADS, BLOCKS)                                                 \
        name(const float* input, float* output, size_t n, const float* mask, unsigned w, unsigned left,       \
             unsigned mode) {                                                                                  \
        algo(input, output, n, GlobalMask{mask}, (size_t)w, (size_t)left, mode);                             \
    }
#define KERNEL_PARAM(name, algo, TAPS, THREADS, BLOCKS)                                                       \
    extern "C" __global__ void LAUNCH_BOUNDS(THREADS, BLOCKS)                                                 \
        name(const float* input, float* output, size_t n, const float* mask, unsigned w, unsigned left,       \
             unsigned mode, const __grid_constant__ Taps<TAPS> taps) {                                         \
        algo(input, output, n, ParamMask{taps.v}, (size_t)w, (size_t)left, mode);                            \
    }

KERNEL_GM(conv1d_basic_f32, direct, 256, 8)
KERNEL_PARAM(conv1d_const_f32, direct, RUNTIME_TAPS, 256, 8)
KERNEL_PARAM(conv1d_tiled_f32, tiled, RUNTIME_TAPS, 256, 6)
KERNEL_GM(conv1d_tiled_gm_f32, tiled, 256, 6)
KERNEL_PARAM(conv1d_tiled_l2_f32, tiled_l2, RUNTIME_TAPS, 256, 6)
KERNEL_GM(conv1d_tiled_l2_gm_f32, tiled_l2, 256, 6)
#define FAST(M, CH) fast<M, CH>
KERNEL_PARAM(conv1d_fast_f32, FAST(ParamMask, 0), RUNTIME_TAPS, 256, 5)
KERNEL_GM(conv1d_fast_gm_f32, FAST(GlobalMask, 0), 256, 4)
// Short-mask forms (coalesce_kernels::conv::SHORT_MASK_KERNELS): the same
// kernels with a FIXED_TAPS parameter, for masks of at most 64 taps.
KERNEL_PARAM(conv1d_const_short_f32, direct, FIXED_TAPS, 256, 8)
KERNEL_PARAM(conv1d_tiled_short_f32, tiled, FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_tiled_l2_short_f32, tiled_l2, FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast_short_f32, FAST(ParamMask, 0), FIXED_TAPS, 256, 5)
KERNEL_PARAM(conv1d_fast1_f32, FAST(ParamMask, 1), FIXED_TAPS, 256, 5)
KERNEL_PARAM(conv1d_fast2_f32, FAST(ParamMask, 2), FIXED_TAPS, 256, 5)
KERNEL_PARAM(conv1d_fast3_f32, FAST(ParamMask, 3), FIXED_TAPS, 256, 5)
KERNEL_PARAM(conv1d_fast4_f32, FAST(ParamMask, 4), FIXED_TAPS, 256, 5)
KERNEL_PARAM(conv1d_fast5_f32, FAST(ParamMask, 5), FIXED_TAPS, 256, 5)
KERNEL_PARAM(conv1d_fast6_f32, FAST(ParamMask, 6), FIXED_TAPS, 256, 5)
KERNEL_PARAM(conv1d_fast7_f32, FAST(ParamMask, 7), FIXED_TAPS, 256, 5)
KERNEL_PARAM(conv1d_fast8_f32, FAST(ParamMask, 8), FIXED_TAPS, 256, 5)
