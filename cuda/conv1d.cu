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

// coalesce_kernels::dev::sync::grid_dependency_wait: on sm_90 and newer every
// kernel first waits for the grid before it on the stream to finish and its
// writes to be visible, as the Rust kernels do. The host launches a kernel
// whose PTX starts so as a programmatic dependent of that grid
// (coalesce::ptx::waiting_entries), the twins as the Rust kernels.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

#define FAST_OUTPUTS 4
// coalesce_kernels::conv::conv1d::{FAST_LOADS, FAST_STAGES}.
#define FAST_LOADS 5
#define FAST_STAGES 4

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

// The inputs of tile b (origin = b * tile - left) into smem + off at the top
// of its iteration, when they were not copied ahead.
__device__ __forceinline__ void fast_fill(float* st, const float* input, size_t n, long long origin, size_t span,
                                          size_t t, size_t threads, unsigned mode) {
    if (origin >= 0 && (size_t)origin + span <= n) {
        const float* p = input + origin;
        for (size_t k = t; k < span; k += threads) st[k] = p[k];
    } else {
        for (size_t k = t; k < span; k += threads) st[k] = fetch(input, n, origin + (long long)k, mode);
    }
}

// Thread t's outputs of the tile starting at tile_start, its inputs at st.
template <class M, int CH>
__device__ __forceinline__ void fast_compute(const float* st, float* output, size_t n, M mask, size_t w,
                                             size_t tile_start, size_t t) {
    const size_t R = FAST_OUTPUTS;
    size_t full = w / R, rem = w - full * R;
    size_t o = tile_start + R * t;
    if (CH > 0 && o < n) {
        float acc[R] = {0.0f, 0.0f, 0.0f, 0.0f};
        size_t base = R * t, last = w - R * (CH - 1);
        float4 lo = *reinterpret_cast<const float4*>(&st[base]);
#pragma unroll
        for (int c = 0; c < CH; ++c) {
            float4 hi = *reinterpret_cast<const float4*>(&st[base + (c + 1) * R]);
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
        float4 lo = *reinterpret_cast<const float4*>(&st[base]);
        for (size_t c = 0; c < full; ++c) {
            float4 hi = *reinterpret_cast<const float4*>(&st[base + (c + 1) * R]);
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
            float4 hi = *reinterpret_cast<const float4*>(&st[base + (full + 1) * R]);
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
}

// CH = 0: chunk count at run time; CH > 0: CH = ceil(w / R) at compile
// time, mask in the taps parameter (the Rust kernels conv1d_fast{CH}_f32).
// sm_80+: tiles of at most LOADS loads per thread arrive by cp.async into a
// ring of FAST_STAGES shared buffers; before sm_80 they are prefetched into
// registers.
template <class M, int CH>
__device__ __forceinline__ void fast(const float* input, float* output, size_t n, M mask, size_t w, size_t left,
                                     unsigned mode) {
    const size_t R = FAST_OUTPUTS;
    const size_t LOADS = FAST_LOADS;
    if (CH > 0 && (w + R - 1) / R != (size_t)CH) return;
    extern __shared__ __align__(16) float smem[];
    size_t threads = blockDim.x, t = threadIdx.x, tile = R * threads;
    size_t span = R * threads + R * ((w + R - 1) / R);
    size_t tiles = (n + tile - 1) / tile;
    size_t grid = gridDim.x;
    size_t b = blockIdx.x;
#if __CUDA_ARCH__ >= 800
    if (span <= LOADS * threads) {
        const int S = FAST_STAGES;
        auto issue = [&](size_t bb, size_t stage) {
            if (bb < tiles && fast_staged(bb, tile, left, span, LOADS * threads, n)) {
                const float* p = input + bb * tile - left;
#pragma unroll
                for (size_t k = 0; k < LOADS; ++k) {
                    size_t i = t + k * threads;
                    if (i < span) {
                        unsigned d = (unsigned)__cvta_generic_to_shared(smem + stage * span + i);
                        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(p + i) : "memory");
                    }
                }
            }
            asm volatile("cp.async.commit_group;" ::: "memory");
        };
#pragma unroll
        for (int d = 0; d < S - 1; ++d) issue(b + d * grid, d);
        size_t stage = 0;
        for (; b < tiles; b += grid) {
            float* st = smem + stage * span;
            if (!fast_staged(b, tile, left, span, LOADS * threads, n))
                fast_fill(st, input, n, (long long)(b * tile) - (long long)left, span, t, threads, mode);
            asm volatile("cp.async.wait_group %0;" ::"n"(S - 2) : "memory");
            __syncthreads();
            issue(b + (S - 1) * grid, stage == 0 ? S - 1 : stage - 1);
            fast_compute<M, CH>(st, output, n, mask, w, b * tile, t);
            stage = stage + 1 == S ? 0 : stage + 1;
        }
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        return;
    }
    const size_t max_span = 0;  // copied ahead only above
#else
    const size_t max_span = LOADS * threads;
#endif
    float v[LOADS];
#pragma unroll
    for (size_t k = 0; k < LOADS; ++k) v[k] = 0.0f;
    if (b < tiles && fast_staged(b, tile, left, span, max_span, n))
        fast_load(v, input, b * tile - left, t, threads, span);
    while (b < tiles) {
        if (fast_staged(b, tile, left, span, max_span, n)) {
#pragma unroll
            for (size_t k = 0; k < LOADS; ++k) {
                size_t i = t + k * threads;
                if (i < span) smem[i] = v[k];
            }
        } else {
            fast_fill(smem, input, n, (long long)(b * tile) - (long long)left, span, t, threads, mode);
        }
        __syncthreads();
        size_t next = b + grid;
        if (next < tiles && fast_staged(next, tile, left, span, max_span, n))
            fast_load(v, input, next * tile - left, t, threads, span);
        fast_compute<M, CH>(smem, output, n, mask, w, b * tile, t);
        __syncthreads();
        b = next;
    }
}

#define KERNEL_GM(name, algo, THREADS, BLOCKS)                                                                \
    extern "C" __global__ void LAUNCH_BOUNDS(THREADS, BLOCKS)                                                 \
        name(const float* input, float* output, size_t n, const float* mask, unsigned w, unsigned left,       \
             unsigned mode) {                                                                                \
        grid_dependency_wait();                                                                              \
        algo(input, output, n, GlobalMask{mask}, (size_t)w, (size_t)left, mode);                             \
    }
#define KERNEL_PARAM(name, algo, TAPS, THREADS, BLOCKS)                                                       \
    extern "C" __global__ void LAUNCH_BOUNDS(THREADS, BLOCKS)                                                 \
        name(const float* input, float* output, size_t n, const float* mask, unsigned w, unsigned left,       \
             unsigned mode, const __grid_constant__ Taps<TAPS> taps) {                                       \
        grid_dependency_wait();                                                                              \
        algo(input, output, n, ParamMask{taps.v}, (size_t)w, (size_t)left, mode);                            \
    }

KERNEL_GM(conv1d_basic_f32, direct, 256, 8)
KERNEL_PARAM(conv1d_const_f32, direct, RUNTIME_TAPS, 256, 8)
KERNEL_PARAM(conv1d_tiled_f32, tiled, RUNTIME_TAPS, 256, 6)
KERNEL_GM(conv1d_tiled_gm_f32, tiled, 256, 6)
KERNEL_PARAM(conv1d_tiled_l2_f32, tiled_l2, RUNTIME_TAPS, 256, 6)
KERNEL_GM(conv1d_tiled_l2_gm_f32, tiled_l2, 256, 6)
#define FAST(M, CH) fast<M, CH>
KERNEL_PARAM(conv1d_fast_f32, FAST(ParamMask, 0), RUNTIME_TAPS, 256, 4)
KERNEL_GM(conv1d_fast_gm_f32, FAST(GlobalMask, 0), 256, 4)
// Short-mask forms (coalesce_kernels::conv::SHORT_MASK_KERNELS): the same
// kernels with a FIXED_TAPS parameter, for masks of at most 64 taps.
KERNEL_PARAM(conv1d_const_short_f32, direct, FIXED_TAPS, 256, 8)
KERNEL_PARAM(conv1d_tiled_short_f32, tiled, FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_tiled_l2_short_f32, tiled_l2, FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast1_f32, FAST(ParamMask, 1), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast2_f32, FAST(ParamMask, 2), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast3_f32, FAST(ParamMask, 3), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast4_f32, FAST(ParamMask, 4), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast5_f32, FAST(ParamMask, 5), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast6_f32, FAST(ParamMask, 6), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast7_f32, FAST(ParamMask, 7), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast8_f32, FAST(ParamMask, 8), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast9_f32, FAST(ParamMask, 9), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast10_f32, FAST(ParamMask, 10), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast11_f32, FAST(ParamMask, 11), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast12_f32, FAST(ParamMask, 12), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast13_f32, FAST(ParamMask, 13), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast14_f32, FAST(ParamMask, 14), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast15_f32, FAST(ParamMask, 15), FIXED_TAPS, 256, 6)
KERNEL_PARAM(conv1d_fast16_f32, FAST(ParamMask, 16), FIXED_TAPS, 256, 6)

// ---- Tensor cores (kernels-gpu/src/conv/tensor.rs) ----
//
// The mask as a banded Toeplitz matrix A (16 x 8 per step) times the input
// as a Hankel matrix B (8 x 8: eight columns of 16 outputs), with
// mma.sync.m16n8k8 TF32; the step's k index permuted so that lane (g, t)
// holds input rows 2t and 2t + 1 (one 64-bit shared load). f32 accuracy
// from three products of split operands (heads rounded to nearest with
// ties away, the remainders passed whole), the two small products
// accumulated apart; from 192 taps (conv1d_tensor_2p_f32) the two small
// products in one bf16 mma.m16n8k16 (k rows 0-7 the inputs' remainders,
// 8-15 the inputs, both rounded to bf16; the table packs the taps' heads
// and remainders to match: tc_mask_table2). Tiles are double-buffered: the next tile's inputs
// arrive by cp.async while the current one is computed. A tile with an
// infinite or NaN output is computed again with plain FMAs. The host
// passes the mask table (coalesce_kernels::conv::tensor::tc_mask_table).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define TC_WARPS 4
#define TC_THREADS (32 * TC_WARPS)
#define TC_COLUMN_TILES 8
#define TC_TILE (16 * 8 * TC_COLUMN_TILES * TC_WARPS)
// Tiles' first inputs 64-byte aligned (coalesce_kernels::conv::tensor::TC_INPUT_ALIGN).
#define TC_SH_ALIGN 16

__device__ __forceinline__ size_t tc_ksteps(size_t w) { return 2 * ((w + 15 + 15) / 16); }
__device__ __forceinline__ size_t tc_padded(size_t i) { return 24 * (i / 16) + i % 16; }
// Zero taps in front of the mask so that `left` is a multiple of 8 where that adds no step
// (coalesce_kernels::conv::tensor::tc_front_pad); the table holds the padded taps.
__device__ __forceinline__ size_t tc_front_pad(size_t w, size_t left) {
    const size_t pad = (8 - left % 8) % 8;
    return tc_ksteps(w + pad) == tc_ksteps(w) ? pad : 0;
}

__device__ __forceinline__ void mma_tf32(float (&acc)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_bf16(float (&acc)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// lo and hi rounded to bf16 (nearest, ties to even), lo in the low half.
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// x's TF32 head (rounded to nearest, ties away) and the remainder x - head.
__device__ __forceinline__ void split_tf32(float x, unsigned& head, unsigned& rest) {
    head = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    rest = __float_as_uint(x - __uint_as_float(head));
}

__device__ __forceinline__ bool non_finite(float x) { return (__float_as_uint(x) & 0x7f800000u) == 0x7f800000u; }

// PRODUCTS per step: 1 (TF32), 2 (TF32 head + bf16 small products), 3.
template <int PRODUCTS>
__device__ __forceinline__ void tensor(const float* input, float* output, size_t n, const float* mask, size_t w,
                                       size_t left, unsigned mode, const float* table) {
    extern __shared__ __align__(16) float smem[];
    const size_t t = threadIdx.x, lane = t % 32, warp = t / 32, g = lane / 4, tq = lane % 4;
    const size_t steps = tc_ksteps(w), span = TC_TILE + 8 * steps;
    const size_t table_floats = steps * 2 * 32 * 4, buf_floats = tc_padded(span);
    for (size_t i = t; 4 * i < table_floats; i += TC_THREADS) {
        unsigned d = (unsigned)__cvta_generic_to_shared(smem + 4 * i);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(table + 4 * i));
    }
    asm volatile("cp.async.commit_group;");
    const size_t pad = tc_front_pad(w, left);
    left += pad;
    const size_t misaligned = ((size_t)input / 4) % TC_SH_ALIGN;
    const size_t sh = (misaligned + TC_SH_ALIGN - left % TC_SH_ALIGN) % TC_SH_ALIGN;
    const size_t tiles = (n + sh + TC_TILE - 1) / TC_TILE;
    auto first = [&](size_t b) { return (long long)(b * TC_TILE) - (long long)sh; };
    auto interior = [&](size_t b) {
        long long origin = first(b) - (long long)left;
        return origin >= 0 && (size_t)origin + span <= n;
    };
    auto prefetch = [&](size_t b, float* dst) {
        const float* p = input + (first(b) - (long long)left);
        for (size_t k = t; k < span / 4; k += TC_THREADS) {
            unsigned d = (unsigned)__cvta_generic_to_shared(dst + tc_padded(4 * k));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(p + 4 * k));
        }
    };
    const size_t col0 = warp * 8 * TC_COLUMN_TILES + g;
    size_t b = blockIdx.x, cur = 0;
    if (b < tiles && interior(b)) prefetch(b, smem + table_floats);
    asm volatile("cp.async.commit_group;");
    while (b < tiles) {
        const size_t next = b + gridDim.x;
        if (next < tiles && interior(next)) prefetch(next, smem + table_floats + (cur ^ 1) * buf_floats);
        asm volatile("cp.async.commit_group;");
        float* data = smem + table_floats + cur * buf_floats;
        asm volatile("cp.async.wait_group 1;" ::: "memory");
        if (!interior(b)) {
            const long long origin = first(b) - (long long)left;
            for (size_t i = t; i < span; i += TC_THREADS) data[tc_padded(i)] = fetch(input, n, origin + (long long)i, mode);
        }
        __syncthreads();
        const float* bp = data + 24 * col0 + 2 * tq;
        const unsigned* ap = reinterpret_cast<const unsigned*>(smem) + 4 * lane;
        float big[TC_COLUMN_TILES][4] = {}, small[TC_COLUMN_TILES][4] = {};
        for (size_t p = 0; p < steps / 2; ++p) {
#pragma unroll
            for (size_t half = 0; half < 2; ++half) {
                const size_t q = 2 * p + half;
                const size_t off = 24 * p + 8 * half;
                const uint4 h = *reinterpret_cast<const uint4*>(ap + q * 256);
                const uint4 l =
                    PRODUCTS > 1 ? *reinterpret_cast<const uint4*>(ap + q * 256 + 128) : make_uint4(0, 0, 0, 0);
                const unsigned a_hi[4] = {h.x, h.y, h.z, h.w}, a_lo[4] = {l.x, l.y, l.z, l.w};
#pragma unroll
                for (int k = 0; k < TC_COLUMN_TILES; ++k) {
                    const float2 x = *reinterpret_cast<const float2*>(bp + off + k * 24 * 8);
                    if (PRODUCTS == 1) {
                        mma_tf32(big[k], a_hi, __float_as_uint(x.x), __float_as_uint(x.y));
                    } else {
                        unsigned h0, l0, h1, l1;
                        split_tf32(x.x, h0, l0);
                        split_tf32(x.y, h1, l1);
                        mma_tf32(big[k], a_hi, h0, h1);
                        if (PRODUCTS == 3) {
                            mma_tf32(small[k], a_hi, l0, l1);
                            mma_tf32(small[k], a_lo, h0, h1);
                        } else {
                            const unsigned lo = pack_bf16x2(__uint_as_float(l0), __uint_as_float(l1));
                            const unsigned whole = pack_bf16x2(x.x, x.y);
                            mma_bf16(small[k], a_lo, lo, whole);
                        }
                    }
                }
            }
        }
        bool bad = false;
#pragma unroll
        for (int k = 0; k < TC_COLUMN_TILES; ++k)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                if (PRODUCTS > 1) big[k][r] += small[k][r];
                bad |= non_finite(big[k][r]);
            }
        const long long tile_first = first(b);
        if (__syncthreads_or(bad)) {
            for (size_t o = t; o < TC_TILE; o += TC_THREADS) {
                const long long at = tile_first + (long long)o;
                if (at >= 0 && (size_t)at < n) {
                    float acc = 0.0f;
                    for (size_t j = 0; j < w; ++j) acc = fmaf(data[tc_padded(o + pad + j)], mask[j], acc);
                    output[at] = acc;
                }
            }
        } else if (tile_first >= 0 && (size_t)tile_first + TC_TILE <= n) {
            // Every output inside: one base, fixed offsets, no checks.
            const int d[4] = {0, 16, 8, 24};
            float* base = output + tile_first + 16 * warp * 8 * TC_COLUMN_TILES + 32 * tq + g;
#pragma unroll
            for (int k = 0; k < TC_COLUMN_TILES; ++k)
#pragma unroll
                for (int r = 0; r < 4; ++r) base[128 * k + d[r]] = big[k][r];
        } else {
            const long long d[4] = {0, 16, 8, 24};
#pragma unroll
            for (int k = 0; k < TC_COLUMN_TILES; ++k) {
                const long long o = tile_first + (long long)(16 * (warp * 8 * TC_COLUMN_TILES + 8 * k) + 32 * tq + g);
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const long long at = o + d[r];
                    if (at >= 0 && (size_t)at < n) output[at] = big[k][r];
                }
            }
        }
        __syncthreads();
        cur ^= 1;
        b = next;
    }
}

extern "C" __global__ void LAUNCH_BOUNDS(128, 4) conv1d_tensor_f32(const float* input, float* output, size_t n,
                                                                    const float* mask, unsigned w, unsigned left,
                                                                    unsigned mode, const float* table) {
    grid_dependency_wait();
    tensor<3>(input, output, n, mask, w, left, mode, table);
}

extern "C" __global__ void LAUNCH_BOUNDS(128, 4) conv1d_tensor_2p_f32(const float* input, float* output, size_t n,
                                                                     const float* mask, unsigned w, unsigned left,
                                                                     unsigned mode, const float* table) {
    grid_dependency_wait();
    tensor<2>(input, output, n, mask, w, left, mode, table);
}

extern "C" __global__ void LAUNCH_BOUNDS(128, 4) conv1d_tensor_tf32_f32(const float* input, float* output, size_t n,
                                                                         const float* mask, unsigned w, unsigned left,
                                                                         unsigned mode, const float* table) {
    grid_dependency_wait();
    tensor<1>(input, output, n, mask, w, left, mode, table);
}
#endif
