// CUDA C++ twins of the Rust 2D convolution kernels (f32), for comparing
// what nvcc makes of the same algorithms with what rustc's NVPTX backend
// makes of them. Same names, same parameter lists (the host checks the
// PTX parameter sizes at launch), same algorithms, same shared-memory
// layouts (kernels-gpu/src/conv/conv2d.rs holds the layout functions),
// same mask parameters. The tap loops of the lesson kernels are plain
// loops here; on the Rust side they run in explicit 4-tap steps
// (conv::elem::dot), the same taps in the same order (see cuda/conv1d.cu).
//
//     nvcc -O3 -arch=sm_90 -ptx cuda/conv2d.cu -o conv2d.ptx
//
// and launch through Gpu::load_ptx + Conv2d::run_on / Separable::run_on.
//
// Parameters of every kernel: (input, output, width, height, pitch, mask,
// mw, mh, left_x, left_y, mode); element (x, y) at y * pitch + x; mask
// row-major mh x mw; mode: 0 zero, 1 nearest, 2 reflect, 3 mirror, 4 wrap,
// applied per axis. The constant-mask kernels take one more, `taps`: the
// taps by value in the parameter space (a __grid_constant__ parameter,
// read in place), as the Rust kernels' ParamBytes parameter.

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

// coalesce_kernels::conv::{PARAM_MASK_BYTES, FIXED_MASK_TAPS}: the mask
// parameters of the run-time and the strip kernels.
#define RUNTIME_TAPS 1000
#define FIXED_TAPS 64
template <int N>
struct alignas(8) Taps {
    float v[N];
};

// coalesce_kernels::LAUNCH_BOUNDS: the Rust build writes the same bounds
// into the sm_90+ PTX of the Rust kernels (.maxntid / .minnctapersm), so
// both sides compile under the same register budget.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define LAUNCH_BOUNDS(threads, blocks) __launch_bounds__(threads, blocks)
#else
#define LAUNCH_BOUNDS(threads, blocks)
#endif

#define FAST_X 4
#define FAST_Y 4
// Rows of loads in flight per thread in the load phase (LR): 4 for the
// fast 2D kernel and the row pass, 2 for the column pass.
#define LOAD_ROWS_FAST 4
#define LOAD_ROWS_COLS 2
#define LOAD_COLS 1

// Position x (any integer) of an axis of length n mapped to the input
// index it takes under mode, or -1 for a zero (map_index).
// I = long long (map_index) or int (map_index32, for the strip kernels).
template <class I>
__device__ __forceinline__ I map_index_t(I x, I n, unsigned mode) {
    if (0 <= x && x < n) return x;
    I p;
    switch (mode) {
    case 1:
        return x < 0 ? 0 : n - 1;
    case 2:
        p = ((x % (2 * n)) + 2 * n) % (2 * n);
        return p < n ? p : 2 * n - 1 - p;
    case 3:
        if (n == 1) return 0;
        p = ((x % (2 * n - 2)) + (2 * n - 2)) % (2 * n - 2);
        return p < n ? p : 2 * n - 2 - p;
    case 4:
        return ((x % n) + n) % n;
    default:
        return -1;
    }
}

__device__ __forceinline__ long long map_index(long long x, long long n, unsigned mode) {
    return map_index_t<long long>(x, n, mode);
}

struct Image {
    const float* p;
    size_t width, height, pitch;
    unsigned mode;

    __device__ __forceinline__ float at(size_t x, size_t y) const { return p[y * pitch + x]; }

    __device__ __forceinline__ float fetch(long long x, long long y) const {
        long long i = map_index(x, (long long)width, mode);
        long long j = map_index(y, (long long)height, mode);
        return (i >= 0 && j >= 0) ? at((size_t)i, (size_t)j) : 0.0f;
    }

    __device__ __forceinline__ bool contains(long long x0, long long y0, size_t w, size_t h) const {
        return x0 >= 0 && y0 >= 0 && (size_t)x0 + w <= width && (size_t)y0 + h <= height;
    }
};

struct ParamTaps {
    const float* t;  // the kernel's taps parameter, in the parameter space
    __device__ __forceinline__ float at(size_t k) const { return t[k]; }
};

struct GlobalTaps {
    const float* m;
    __device__ __forceinline__ float at(size_t k) const { return m[k]; }
};

extern __shared__ __align__(16) float conv2d_smem[];

template <class M>
__device__ __forceinline__ void direct(Image img, float* output, M mask, size_t mw, size_t mh, size_t lx, size_t ly) {
    size_t bdx = blockDim.x, bdy = blockDim.y;
    for (size_t y = blockIdx.y * bdy + threadIdx.y; y < img.height; y += (size_t)gridDim.y * bdy) {
        for (size_t x = blockIdx.x * bdx + threadIdx.x; x < img.width; x += (size_t)gridDim.x * bdx) {
            long long sx = (long long)x - (long long)lx, sy = (long long)y - (long long)ly;
            float acc = 0.0f;
            if (img.contains(sx, sy, mw, mh)) {
                const float* base = img.p + (size_t)sy * img.pitch + (size_t)sx;
                for (size_t j = 0; j < mh; j++) {
                    const float* row = base + j * img.pitch;
                    for (size_t i = 0; i < mw; i++) acc = fmaf(row[i], mask.at(j * mw + i), acc);
                }
            } else {
                for (size_t j = 0; j < mh; j++)
                    for (size_t i = 0; i < mw; i++)
                        acc = fmaf(img.fetch(sx + (long long)i, sy + (long long)j), mask.at(j * mw + i), acc);
            }
            output[y * img.pitch + x] = acc;
        }
    }
}

template <class M>
__device__ __forceinline__ void tiled(Image img, float* output, M mask, size_t mw, size_t mh, size_t lx, size_t ly) {
    size_t bdx = blockDim.x, bdy = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
    size_t threads = bdx * bdy, t = ty * bdx + tx;
    size_t sw = bdx + mw - 1;
    size_t total = (bdy + mh - 1) * sw;
    float* s = conv2d_smem;
    size_t tiles_x = (img.width + bdx - 1) / bdx, tiles_y = (img.height + bdy - 1) / bdy;
    for (size_t tyi = blockIdx.y; tyi < tiles_y; tyi += gridDim.y) {
        for (size_t txi = blockIdx.x; txi < tiles_x; txi += gridDim.x) {
            size_t x0 = txi * bdx, y0 = tyi * bdy;
            long long ox = (long long)x0 - (long long)lx, oy = (long long)y0 - (long long)ly;
            bool inside = img.contains(ox, oy, sw, bdy + mh - 1);
            for (size_t k = t; k < total; k += threads) {
                size_t r = k / sw, c = k - r * sw;
                s[k] = inside ? img.at((size_t)(ox + (long long)c), (size_t)(oy + (long long)r))
                              : img.fetch(ox + (long long)c, oy + (long long)r);
            }
            __syncthreads();
            size_t x = x0 + tx, y = y0 + ty;
            if (x < img.width && y < img.height) {
                float acc = 0.0f;
                for (size_t j = 0; j < mh; j++)
                    for (size_t i = 0; i < mw; i++) acc = fmaf(s[(ty + j) * sw + tx + i], mask.at(j * mw + i), acc);
                output[y * img.pitch + x] = acc;
            }
            __syncthreads();
        }
    }
}

// acc[q] += x[q + jj] * tap(k0 + jj) for the first n taps of a chunk.
template <class M>
__device__ __forceinline__ void chunk(float acc[FAST_X], const float x[2 * FAST_X], M mask, size_t k0, size_t n) {
#pragma unroll
    for (int jj = 0; jj < FAST_X; jj++) {
        if ((size_t)jj < n) {
            float m = mask.at(k0 + jj);
#pragma unroll
            for (int q = 0; q < FAST_X; q++) acc[q] = fmaf(x[q + jj], m, acc[q]);
        }
    }
}

template <int LR, class M>
__device__ __forceinline__ void fast(Image img, float* output, M mask, size_t mw, size_t mh, size_t lx, size_t ly) {
    size_t bdx = blockDim.x, bdy = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
    size_t tw = FAST_X * bdx, th = FAST_Y * bdy;
    size_t sw = FAST_X * bdx + FAST_X * ((mw + FAST_X - 1) / FAST_X);
    size_t lw = tw + mw - 1, sh = th + mh - 1;
    size_t full = mw / FAST_X, rem = mw - full * FAST_X;
    float* s = conv2d_smem;
    size_t tiles_x = (img.width + tw - 1) / tw, tiles_y = (img.height + th - 1) / th;
    for (size_t tyi = blockIdx.y; tyi < tiles_y; tyi += gridDim.y) {
        for (size_t txi = blockIdx.x; txi < tiles_x; txi += gridDim.x) {
            size_t x0 = txi * tw, y0 = tyi * th;
            long long ox = (long long)x0 - (long long)lx, oy = (long long)y0 - (long long)ly;
            if (img.contains(ox, oy, lw, sh)) {
                const float* base = img.p + (size_t)oy * img.pitch + (size_t)ox;
                // In-tile indices in 32 bits.
                unsigned sh32 = (unsigned)sh, lw32 = (unsigned)lw, sw32 = (unsigned)sw;
                unsigned bdx32 = (unsigned)bdx, bdy32 = (unsigned)bdy;
                for (unsigned r0 = (unsigned)ty; r0 < sh32; r0 += LR * bdy32) {
                    for (unsigned c0 = (unsigned)tx; c0 < lw32; c0 += LOAD_COLS * bdx32) {
                        float v[LR][LOAD_COLS];
#pragma unroll
                        for (int u = 0; u < LR; u++) {
                            unsigned r = r0 + u * bdy32;
#pragma unroll
                            for (int w = 0; w < LOAD_COLS; w++) {
                                unsigned c = c0 + w * bdx32;
                                v[u][w] = (r < sh32 && c < lw32) ? base[(size_t)r * img.pitch + c] : 0.0f;
                            }
                        }
#pragma unroll
                        for (int u = 0; u < LR; u++) {
                            unsigned r = r0 + u * bdy32;
#pragma unroll
                            for (int w = 0; w < LOAD_COLS; w++) {
                                unsigned c = c0 + w * bdx32;
                                if (r < sh32 && c < lw32) s[r * sw32 + c] = v[u][w];
                            }
                        }
                    }
                }
            } else {
                // At the edges: each axis through map_index, the row once per row.
                for (size_t r = ty; r < sh; r += bdy) {
                    long long yy = map_index(oy + (long long)r, (long long)img.height, img.mode);
                    for (size_t c = tx; c < lw; c += bdx) {
                        long long xx = map_index(ox + (long long)c, (long long)img.width, img.mode);
                        s[r * sw + c] = (yy >= 0 && xx >= 0) ? img.at((size_t)xx, (size_t)yy) : 0.0f;
                    }
                }
            }
            __syncthreads();
            size_t x = x0 + FAST_X * tx, yb = y0 + FAST_Y * ty;
            if (x < img.width && yb < img.height) {
                float acc[FAST_Y][FAST_X];
#pragma unroll
                for (int rr = 0; rr < FAST_Y; rr++)
#pragma unroll
                    for (int q = 0; q < FAST_X; q++) acc[rr][q] = 0.0f;
                // In-tile arithmetic in 32 bits.
                unsigned sw32 = (unsigned)sw, mw32 = (unsigned)mw, mh32 = (unsigned)mh;
                unsigned full32 = (unsigned)full, rem32 = (unsigned)rem;
                unsigned row0 = (unsigned)(FAST_Y * ty) * sw32 + FAST_X * (unsigned)tx;
                for (unsigned ir = 0; ir < FAST_Y + mh32 - 1; ir++) {
                    unsigned row = row0 + ir * sw32;
                    float4 lo = *reinterpret_cast<const float4*>(s + row);
                    for (unsigned cc = 0; cc < full32; cc++) {
                        float4 hi = *reinterpret_cast<const float4*>(s + row + FAST_X * (cc + 1));
                        float xs[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                        for (unsigned rr = 0; rr < FAST_Y; rr++)
                            if (rr <= ir && ir - rr < mh32) chunk(acc[rr], xs, mask, (ir - rr) * mw32 + FAST_X * cc, FAST_X);
                        lo = hi;
                    }
                    if (rem32 > 0) {
                        float4 hi = rem32 > 1 ? *reinterpret_cast<const float4*>(s + row + FAST_X * (full32 + 1)) : lo;
                        float xs[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                        for (unsigned rr = 0; rr < FAST_Y; rr++)
                            if (rr <= ir && ir - rr < mh32) chunk(acc[rr], xs, mask, (ir - rr) * mw32 + FAST_X * full32, rem);
                    }
                }
#pragma unroll
                for (int rr = 0; rr < FAST_Y; rr++) {
                    size_t y = yb + rr;
                    if (y < img.height) {
                        float* p = output + y * img.pitch + x;
                        if (x + FAST_X <= img.width && ((size_t)p) % 16 == 0) {
                            *reinterpret_cast<float4*>(p) = make_float4(acc[rr][0], acc[rr][1], acc[rr][2], acc[rr][3]);
                        } else {
#pragma unroll
                            for (int q = 0; q < FAST_X; q++)
                                if (x + q < img.width) p[q] = acc[rr][q];
                        }
                    }
                }
            }
            __syncthreads();
        }
    }
}

// map_index in 32-bit arithmetic (map_index32), for the strip kernels.
__device__ __forceinline__ int map_index32(int x, int n, unsigned mode) { return map_index_t<int>(x, n, mode); }

#define STRIP_H 16
#define STRIP_CHUNKS 5
// Rows in each warp's ring (STRIP_RING) of the sliding loop.
#define STRIP_RING 8
// Chunks the window reaches past either edge of the warp's 128 columns
// (strip_ext: 1 up to 9 x 9, 2 for 11 x 11 and 13 x 13) and elements per
// ring row (strip_row: 32 lanes' chunks and strip_ext chunks either side).
__host__ __device__ constexpr int strip_ext(int mw) { return (mw / 2 + FAST_X - 1) / FAST_X; }
__host__ __device__ constexpr int strip_row(int mw) { return FAST_X * (32 + 2 * strip_ext(mw)); }

// The blocked loop of f32 masks of 7 rows and more (strip_blocked): output
// rows per pass (STRIP_PASS), passes whose rows are in flight
// (STRIP_PASS_AHEAD) and ring rows (strip_pass_ring: a pass's rows and
// those in flight, in whole groups of STRIP_PASS); the rows in each warp's
// ring for a mask of mh rows (strip_ring).
#define STRIP_PASS 4
#define STRIP_PASS_AHEAD 1
__host__ __device__ constexpr int strip_pass_ring(int mh) {
    return (STRIP_PASS + mh - 1 + STRIP_PASS_AHEAD * STRIP_PASS + STRIP_PASS - 1) / STRIP_PASS * STRIP_PASS;
}
__host__ __device__ constexpr bool strip_blocked(int mh) { return mh >= 7; }
__host__ __device__ constexpr int strip_ring(int mh) { return strip_blocked(mh) ? strip_pass_ring(mh) : STRIP_RING; }
// Output rows per lane (strip_rows): 8 from 9 x 9, STRIP_H otherwise.
__host__ __device__ constexpr int strip_rows(int mh) { return strip_blocked(mh) && mh >= 9 ? STRIP_H / 2 : STRIP_H; }
// Output rows per lane of the band kernel when the launch puts `slots` rows
// of threads over an image of `height` rows (strip_band_rows): the height in
// whole passes at which they cover the image, at least strip_rows.
__host__ __device__ constexpr unsigned strip_band_rows(int mh, unsigned height, unsigned slots) {
    if (slots == 0) return strip_rows(mh);
    unsigned band = (height + slots - 1) / slots;
    band = (band + STRIP_PASS - 1) / STRIP_PASS * STRIP_PASS;
    return band > (unsigned)strip_rows(mh) ? band : (unsigned)strip_rows(mh);
}

// Chunks per window row of a centred mask of width mw (strip_chunks).
__host__ __device__ constexpr int strip_chunks(int mw) {
    return (((-(mw / 2)) & (FAST_X - 1)) + mw - 1 + FAST_X - 1) / FAST_X + 1;
}

// The ghost cells lane `lane` of a warp starting at column x0 writes into
// each ring row (strip_ring_fix): bits 0-7 the ring element lane l - 4E
// takes (RING_FIX_LEFT), bits 8-15 and 16-23 the ring elements of column
// width + l and of its source (RING_FIX_RIGHT); 0 in zero mode,
// RING_FIX_NONE when a source lies outside the ring.
#define RING_FIX_LEFT (1u << 24)
#define RING_FIX_RIGHT (1u << 25)
#define RING_FIX_NONE 0xffffffffu
__device__ __forceinline__ unsigned strip_ring_fix(unsigned x0, unsigned width, unsigned lane, unsigned ext,
                                                   unsigned mode) {
    if (lane >= FAST_X * ext || map_index32(-1, 1, mode) < 0) return 0;
    if (width >= (1u << 30) || x0 >= width) return RING_FIX_NONE;
    const int span = (int)(FAST_X * (32 + 2 * ext)), origin = (int)x0 - (int)(FAST_X * ext);
    auto source = [&](int c) {
        int e = map_index32(c, (int)width, mode) - origin;
        return e >= 0 && e < span ? e : -1;
    };
    unsigned fix = 0;
    if (x0 == 0) {
        int e = source((int)lane - (int)(FAST_X * ext));
        if (e < 0) return RING_FIX_NONE;
        fix |= RING_FIX_LEFT | (unsigned)e;
    }
    int dst = (int)(width + lane) - origin;
    if (dst < span) {
        int e = source((int)(width + lane));
        if (e < 0) return RING_FIX_NONE;
        fix |= RING_FIX_RIGHT | (unsigned)dst << 8 | (unsigned)e << 16;
    }
    return fix;
}

// Writes the warp's ghost cells into the ring slots of input rows lo ..
// hi - 1 (slot row % ring), then waits for every lane (StripStep::fix_rows);
// nothing in a warp without ghost cells. `read` is the lane's chunk 0 of
// slot 0, `row` the ring row's elements.
__device__ __forceinline__ void fix_rows(unsigned fix, unsigned read, unsigned row, unsigned lo, unsigned hi,
                                         unsigned ring) {
    if (__ballot_sync(0xffffffffu, fix != 0) == 0) return;
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    const unsigned at = read - 4 * FAST_X * lane;
#pragma unroll 1
    for (unsigned r = lo; r < hi; r++) {
        const unsigned slot = at + 4 * (r % ring) * row;
        float v;
        if (fix & RING_FIX_LEFT) {
            asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(slot + 4 * (fix & 0xff)));
            asm volatile("st.shared.f32 [%0], %1;" ::"r"(slot + 4 * lane), "f"(v));
        }
        if (fix & RING_FIX_RIGHT) {
            asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(slot + 4 * ((fix >> 16) & 0xff)));
            asm volatile("st.shared.f32 [%0], %1;" ::"r"(slot + 4 * ((fix >> 8) & 0xff)), "f"(v));
        }
    }
    __syncwarp();
}

// fix_rows for rows lo .. lo + N - 1 with every source read before any
// ghost cell is written, so that the reads' latencies overlap: the band
// kernel's form (StripStep::fix_rows_gathered).
template <int N>
__device__ __forceinline__ void fix_rows_gathered(unsigned fix, unsigned read, unsigned row, unsigned lo,
                                                  unsigned ring) {
    if (__ballot_sync(0xffffffffu, fix != 0) == 0) return;
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    const unsigned at = read - 4 * FAST_X * lane;
    const bool left = (fix & RING_FIX_LEFT) != 0, right = (fix & RING_FIX_RIGHT) != 0;
    float got[N][2];
#pragma unroll
    for (int k = 0; k < N; k++) {
        const unsigned slot = at + 4 * ((lo + k) % ring) * row;
        if (left) asm volatile("ld.shared.f32 %0, [%1];" : "=f"(got[k][0]) : "r"(slot + 4 * (fix & 0xff)));
        if (right) asm volatile("ld.shared.f32 %0, [%1];" : "=f"(got[k][1]) : "r"(slot + 4 * ((fix >> 16) & 0xff)));
    }
#pragma unroll
    for (int k = 0; k < N; k++) {
        const unsigned slot = at + 4 * ((lo + k) % ring) * row;
        if (left) asm volatile("st.shared.f32 [%0], %1;" ::"r"(slot + 4 * lane), "f"(got[k][0]));
        if (right) asm volatile("st.shared.f32 [%0], %1;" ::"r"(slot + 4 * ((fix >> 8) & 0xff)), "f"(got[k][1]));
    }
    __syncwarp();
}

// Asynchronous copy of 16 bytes, or of one float (src-size 0: zeros);
// commit and wait (dev::pipeline).
__device__ __forceinline__ void copy16(unsigned dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void copy_f32(unsigned dst, const float* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0) : "memory");
}
__device__ __forceinline__ void commit_group() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_group() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// copy16 through L1 (dev::pipeline::copy16_l1): the strip kernels' rows.
__device__ __forceinline__ void copy16_l1(unsigned dst, const void* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}

// Copies the four floats at p to shared address dst (copy4_async).
__device__ __forceinline__ void copy4_async(unsigned dst, const float* p, bool valid, bool vector) {
    if (vector) {
        copy16_l1(dst, p, valid);
    } else {
#pragma unroll
        for (int k = 0; k < 4; k++) copy_f32(dst + 4 * k, p + k, valid);
    }
}

// The register kernel's rows (Rows): pitch, height and mode.
struct StripRows {
    size_t pitch;
    int height;
    unsigned mode;
};

// How a lane copies its part of each window row into its warp's ring of
// rows of `row` elements (RowCopy), E = strip_ext chunks either side: its
// own chunk (ring chunk lane + E) and, for lanes l < 2E, the chunk
// extra_step chunks away (chunk l before the warp's, or 32 + l after).
struct RowCopy {
    unsigned row;
    unsigned own_dst;
    const float* own_src;
    bool own_ok, extra;
    int extra_step;
    bool extra_ok;

    template <bool VEC>
    __device__ __forceinline__ void issue(StripRows rows, int y, int slot) const {
        int j = map_index32(y, rows.height, rows.mode);
        issue_at<VEC>(j < 0 ? 0 : (size_t)j * rows.pitch, j >= 0, slot);
    }

    // The row at element offset off, already mapped (RowCopy::issue_at).
    template <bool VEC>
    __device__ __forceinline__ void issue_at(size_t off, bool valid, unsigned slot) const {
        unsigned bytes = slot * row * 4;
        copy4_async(own_dst + bytes, own_src + off, valid && own_ok, VEC);
        if (extra) {
            int step = extra_step * FAST_X;
            copy4_async(own_dst + bytes + step * 4, own_src + off + step, valid && extra_ok, VEC);
        }
    }
};

// The CHUNKS 4-wide chunks of a lane's window in the ring row at element
// `slot` (StripStep::read_row): `read` is the lane's chunk 0 of slot 0.
template <int CHUNKS>
__device__ __forceinline__ void read_row(unsigned read, unsigned slot, float (&cur)[STRIP_CHUNKS][FAST_X]) {
#pragma unroll
    for (int c = 0; c < STRIP_CHUNKS; c++) {
        if (c < CHUNKS) {
            float4 t;
            asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                         : "=f"(t.x), "=f"(t.y), "=f"(t.z), "=f"(t.w)
                         : "r"(read + 4 * (slot + FAST_X * c)));
            cur[c][0] = t.x;
            cur[c][1] = t.y;
            cur[c][2] = t.z;
            cur[c][3] = t.w;
        }
    }
}

// A lane's four outputs of one row at `o` (StripStep::store_row): one
// 16-byte store when VEC, else element by element.
template <bool VEC>
__device__ __forceinline__ void store_row(float* o, const float (&v)[FAST_X]) {
    if (VEC) {
        *reinterpret_cast<float4*>(o) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
        for (int q = 0; q < FAST_X; q++) o[q] = v[q];
    }
}

// One input row of a strip (StripStep::run): waits for row ir, starts
// the copy of row ir + STRIP_RING - 1, adds mask row j to accumulator
// ACC(j), stores accumulator `done` as output row ir + 1 - MH when
// complete. ROT: the accumulator of mask row j is (U + MH - j) % MH
// (rotating by name); else MH - 1 - j (shifted by the caller).
template <int MW, int MH, bool VEC, bool ROT, int U>
__device__ __forceinline__ void strip_step(const float* taps, const RowCopy& copy, StripRows rows, unsigned read,
                                           int y0, float* out, unsigned rows_out, bool store,
                                           float (&acc)[MH][FAST_X], int ir, int done) {
    constexpr int s = (-(MW / 2)) & (FAST_X - 1);
    constexpr int chunks = strip_chunks(MW);
    constexpr int steps = STRIP_H + MH - 1;
    wait_group<STRIP_RING - 2>();
    __syncwarp();
    int next = ir + STRIP_RING - 1;
    if (next < steps) copy.issue<VEC>(rows, y0 + next, next % STRIP_RING);
    commit_group();
    float cur[STRIP_CHUNKS][FAST_X];
    read_row<chunks>(read, (ir % STRIP_RING) * copy.row, cur);
#pragma unroll
    for (int j = 0; j < MH; j++)
#pragma unroll
        for (int i = 0; i < MW; i++) {
            float m = taps[j * MW + i];
            const int k = ROT ? (U + MH - j) % MH : MH - 1 - j;
#pragma unroll
            for (int q = 0; q < FAST_X; q++) {
                int e = s + i + q;
                acc[k][q] = fmaf(cur[e / FAST_X][e % FAST_X], m, acc[k][q]);
            }
        }
    if (store && ir + 1 >= MH && (unsigned)(ir + 1 - MH) < rows_out)
        store_row<VEC>(out + (size_t)(ir + 1 - MH) * rows.pitch, acc[done]);
}

// One pass of the blocked loop (StripStep::pass; f32 masks of 7 rows and
// more, strip_blocked): output rows p .. p + STRIP_PASS - 1 of the strip
// from input rows p .. p + STRIP_PASS + MH - 2 (ring slot row mod
// strip_pass_ring(MH)). Waits for this pass's rows, starts the copies of the
// new rows of the pass STRIP_PASS_AHEAD after it (`interior`: without the
// mode's map), adds input row i to every output row r it reaches (mask
// row i - r), stores the rows inside the image. Rows are read in groups
// of STRIP_PASS consecutive slots. BAND (the band kernel): the strip is
// out_rows rows, and each pass checks whether its new rows lie inside.
template <int MW, int MH, bool VEC, bool BAND>
__device__ __forceinline__ void strip_blocked_pass(const float* taps, const RowCopy& copy, StripRows rows,
                                                   unsigned read, int y0, float* out, unsigned rows_out, bool store,
                                                   unsigned p, bool interior, unsigned fix, unsigned out_rows) {
    constexpr int R = STRIP_PASS;
    constexpr int s = (-(MW / 2)) & (FAST_X - 1);
    constexpr int chunks = strip_chunks(MW);
    const unsigned steps = (BAND ? out_rows : (unsigned)strip_rows(MH)) + MH - 1;
    constexpr unsigned ring = strip_pass_ring(MH);
    wait_group<STRIP_PASS_AHEAD - 1>();
    __syncwarp();
    // This pass's new rows (the first pass's all R + MH - 1).
    if (BAND && p == 0)
        fix_rows_gathered<R + MH - 1>(fix, read, copy.row, 0, ring);
    else if (BAND)
        fix_rows_gathered<R>(fix, read, copy.row, p + MH - 1, ring);
    else
        fix_rows(fix, read, copy.row, p == 0 ? 0 : p + MH - 1, p + R + MH - 1, ring);
    const unsigned first = p + MH - 1 + STRIP_PASS_AHEAD * R;
    if (BAND) interior = y0 + (int)first >= 0 && y0 + (int)(first + R) <= rows.height;
    if (interior) {
        size_t off = (size_t)(unsigned)(y0 + (int)first) * rows.pitch;
#pragma unroll
        for (int k = 0; k < R; k++) {
            if (first + k < steps) copy.issue_at<VEC>(off, true, (first + k) % ring);
            off += rows.pitch;
        }
    } else {
#pragma unroll
        for (int k = 0; k < R; k++) {
            unsigned r = first + k;
            if (r < steps) copy.issue<VEC>(rows, y0 + (int)r, r % ring);
        }
    }
    commit_group();
    const unsigned quad = p / R;
    float acc[R][FAST_X];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int q = 0; q < FAST_X; q++) acc[r][q] = 0.0f;
#pragma unroll
    for (int i = 0; i < R + MH - 1; i++) {
        unsigned group = ((quad + i / R) % (ring / R)) * R * copy.row;
        float cur[STRIP_CHUNKS][FAST_X];
        read_row<chunks>(read, group + (i % R) * copy.row, cur);
#pragma unroll
        for (int rr = 0; rr < R; rr++) {
            const int j = i - rr;
            if (j >= 0 && j < MH) {
#pragma unroll
                for (int x = 0; x < MW; x++) {
                    float m = taps[j * MW + x];
#pragma unroll
                    for (int q = 0; q < FAST_X; q++) {
                        int e = s + x + q;
                        acc[rr][q] = fmaf(cur[e / FAST_X][e % FAST_X], m, acc[rr][q]);
                    }
                }
            }
        }
    }
    if (store) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (p + r < rows_out) store_row<VEC>(out + (size_t)(p + r) * rows.pitch, acc[r]);
        }
    }
}

// One pass step U of the rotating form (the unrolled loop of `strip`).
template <int MW, int MH, bool VEC, int U>
__device__ __forceinline__ void strip_pass(const float* taps, const RowCopy& copy, StripRows rows, unsigned read,
                                           int y0, float* out, unsigned rows_out, bool store,
                                           float (&acc)[MH][FAST_X], int base) {
    if constexpr (U < MH) {
        constexpr int steps = STRIP_H + MH - 1;
        int ir = base + U;
        if (ir < steps) {
            constexpr int done = (U + 1) % MH;
            strip_step<MW, MH, VEC, true, U>(taps, copy, rows, read, y0, out, rows_out, store, acc, ir, done);
#pragma unroll
            for (int q = 0; q < FAST_X; q++) acc[done][q] = 0.0f;
        }
        strip_pass<MW, MH, VEC, U + 1>(taps, copy, rows, read, y0, out, rows_out, store, acc, base);
    }
}

// The sliding form of `strip` (one input row at a time): masks of up to
// 5 rows rotate their accumulators by name, taller ones shift them.
template <int MW, int MH, bool VEC>
__device__ __forceinline__ void strip_sliding(const float* taps, RowCopy copy, StripRows rows, unsigned read, int y0,
                                              float* out, unsigned rows_out, bool store) {
    constexpr int steps = STRIP_H + MH - 1;
    float acc[MH][FAST_X];
#pragma unroll
    for (int k = 0; k < MH; k++)
#pragma unroll
        for (int q = 0; q < FAST_X; q++) acc[k][q] = 0.0f;
#pragma unroll
    for (int r = 0; r < STRIP_RING - 1; r++) {
        if (r < steps) copy.issue<VEC>(rows, y0 + r, r);
        commit_group();
    }
    if constexpr (MH * sizeof(float) <= 24) {
#pragma unroll 1
        for (int base = 0; base < steps; base += MH)
            strip_pass<MW, MH, VEC, 0>(taps, copy, rows, read, y0, out, rows_out, store, acc, base);
    } else {
#pragma unroll 1
        for (int ir = 0; ir < steps; ir++) {
            strip_step<MW, MH, VEC, false, 0>(taps, copy, rows, read, y0, out, rows_out, store, acc, ir, 0);
#pragma unroll
            for (int k = 0; k + 1 < MH; k++)
#pragma unroll
                for (int q = 0; q < FAST_X; q++) acc[k][q] = acc[k + 1][q];
#pragma unroll
            for (int q = 0; q < FAST_X; q++) acc[MH - 1][q] = 0.0f;
        }
    }
    wait_group<0>();
    __syncwarp();
}

// One strip (FAST_X columns x strip_rows(MH) rows per lane; BAND: out_rows)
// from the warp's ring of rows: the strip kernel of
// kernels-gpu/src/conv/conv2d.rs (`strip`). Every lane copies and waits;
// lanes with `store` store. Masks of up to 5 rows (strip_unrolled) rotate
// the accumulators by name, MH rows per pass; taller ones shift them after
// each row.
template <int MW, int MH, bool VEC, bool BAND>
__device__ __forceinline__ void strip(const float* taps, RowCopy copy, StripRows rows, unsigned read, int y0,
                                      float* out, unsigned rows_out, bool store, unsigned fix, unsigned band_rows) {
    static_assert(strip_blocked(MH) || !BAND, "bands run the blocked loop");
    const unsigned out_rows = BAND ? band_rows : (unsigned)strip_rows(MH);
    const int steps = (int)out_rows + MH - 1;
    if constexpr (strip_blocked(MH)) {
        // The first pass's rows as one group, then the new rows of each of
        // the next STRIP_PASS_AHEAD - 1 passes as one group each; strips
        // whose window lies inside the image copy without the mode's map,
        // unrolled (the others loop). A band checks its first passes' rows
        // here, each later pass its own.
        constexpr int head_max = STRIP_PASS + MH - 1 + (STRIP_PASS_AHEAD - 1) * STRIP_PASS;
        const int head = BAND && steps > head_max ? head_max : steps;
        const bool interior = y0 >= 0 && y0 + head <= rows.height;
#pragma unroll
        for (int group = 0; group < STRIP_PASS_AHEAD; group++) {
            const int start = group == 0 ? 0 : STRIP_PASS + MH - 1 + (group - 1) * STRIP_PASS;
            const int end = STRIP_PASS + MH - 1 + group * STRIP_PASS;
            if (interior) {
#pragma unroll
                for (int r = start; r < end; r++)
                    if (r < steps) copy.issue_at<VEC>((size_t)(y0 + r) * rows.pitch, true, r);
            } else {
#pragma unroll 1
                for (int r = start; r < end && r < steps; r++) copy.issue<VEC>(rows, y0 + r, r);
            }
            commit_group();
        }
#pragma unroll 1
        for (unsigned p = 0; p < out_rows; p += STRIP_PASS)
            strip_blocked_pass<MW, MH, VEC, BAND>(taps, copy, rows, read, y0, out, rows_out, store, p, interior, fix,
                                                  out_rows);
        wait_group<0>();
        __syncwarp();
    } else {
        strip_sliding<MW, MH, VEC>(taps, copy, rows, read, y0, out, rows_out, store);
    }
}

// The edge strips (edge_strips): for each lane set in `edges`, the whole
// warp computes that lane's strip, two outputs per lane, both axes
// through the mode's map in 32 bits.
template <int MW, int MH>
__device__ __forceinline__ void edge_strips(const float* taps, const Image& img, float* output, unsigned edges,
                                            unsigned x, unsigned y, unsigned strip_h) {
    int w = (int)img.width, h = (int)img.height;
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    while (edges != 0) {
        unsigned l = __ffs(edges) - 1;
        edges &= edges - 1;
        unsigned ex = __shfl_sync(0xffffffffu, x, l), ey = __shfl_sync(0xffffffffu, y, l);
        for (size_t o = lane; o < FAST_X * strip_h; o += 32) {
            int xx = (int)ex + (int)(o % FAST_X), yy = (int)ey + (int)(o / FAST_X);
            if (xx < w && yy < h) {
                int sx = xx - MW / 2, sy = yy - MH / 2;
                float acc = 0.0f;
                for (int j = 0; j < MH; j++) {
                    int r = map_index32(sy + j, h, img.mode);
                    for (int i = 0; i < MW; i++) {
                        int c = map_index32(sx + i, w, img.mode);
                        float v = (c >= 0 && r >= 0) ? img.at((size_t)c, (size_t)r) : 0.0f;
                        acc = fmaf(v, taps[j * MW + i], acc);
                    }
                }
                output[(size_t)yy * img.pitch + (size_t)xx] = acc;
            }
        }
    }
}

// The register form of the fast kernel (`slide`): warps with a lane whose
// window columns lie inside the image run strip(); the warp then computes
// the left and right edge strips together. BAND (the band kernel): each
// strip is a band of strip_band_rows rows, from the launch's rows of threads.
template <int MW, int MH, bool BAND>
__device__ __forceinline__ void slide(Image img, float* output, const float* taps) {
    unsigned bdx = blockDim.x, bdy = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
    unsigned width = (unsigned)img.width, height = (unsigned)img.height;
    const unsigned strip_h = BAND ? strip_band_rows(MH, height, gridDim.y * bdy) : (unsigned)strip_rows(MH);
    unsigned tw = FAST_X * bdx, th = strip_h * bdy;
    size_t row_bytes = img.pitch * sizeof(float);
    bool vector = ((size_t)img.p) % 16 == 0 && ((size_t)output) % 16 == 0 && row_bytes % 16 == 0;
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    unsigned warp = (ty * bdx + tx) / 32;
    StripRows rows{img.pitch, (int)height, img.mode};
    constexpr unsigned ext = strip_ext(MW), row = strip_row(MW);
    unsigned ring = (unsigned)__cvta_generic_to_shared(conv2d_smem) + 4 * (warp * strip_ring(MH) * row);
    // Whole chunks: every lane from the ring (zero mode: the copies' zeros
    // are the ghost cells; nearest, reflect, mirror: the blocked loop's
    // edge warps write theirs, strip_ring_fix).
    const bool whole = width % FAST_X == 0;
    unsigned tiles_x = (width + tw - 1) / tw, tiles_y = (height + th - 1) / th;
    for (unsigned tyi = blockIdx.y; tyi < tiles_y; tyi += gridDim.y) {
        for (unsigned txi = blockIdx.x; txi < tiles_x; txi += gridDim.x) {
            unsigned x = txi * tw + FAST_X * tx, y = tyi * th + strip_h * ty;
            bool active = x < width && y < height;
            const unsigned x0 = x - FAST_X * lane;
            unsigned fix = 0;
            if (whole && (x0 == 0 || x0 + FAST_X * (32 + ext) > width)) {
                if (strip_blocked(MH))
                    fix = strip_ring_fix(x0, width, lane, ext, img.mode);
                else if (map_index32(-1, 1, img.mode) >= 0)
                    fix = RING_FIX_NONE;
            }
            const bool ring_ok = whole && __ballot_sync(0xffffffffu, fix == RING_FIX_NONE) == 0;
            bool inside = ring_ok || (x >= FAST_X * ext && x + FAST_X * (ext + 1) <= width);
            if (__ballot_sync(0xffffffffu, active && inside) != 0) {
                bool before = lane < ext;
                int extra_step = before ? -(int)ext : (int)(32 - ext);
                unsigned c = x + (unsigned)(extra_step * FAST_X);
                RowCopy copy{row,
                             ring + 4 * FAST_X * (lane + ext),
                             img.p + x,
                             x + FAST_X <= width,
                             lane < 2 * ext,
                             extra_step,
                             (!before || x >= FAST_X * ext) && c + FAST_X <= width};
                unsigned read = ring + 4 * FAST_X * lane;
                int y0 = (int)y - MH / 2;
                float* out = output + (size_t)y * img.pitch + x;
                if (!ring_ok) fix = 0;
                if (vector)
                    strip<MW, MH, true, BAND>(taps, copy, rows, read, y0, out, height - y, active && inside, fix,
                                              strip_h);
                else
                    strip<MW, MH, false, BAND>(taps, copy, rows, read, y0, out, height - y, active && inside, fix,
                                               strip_h);
            }
            unsigned edges = __ballot_sync(0xffffffffu, active && !inside);
            edge_strips<MW, MH>(taps, img, output, edges, x, y, strip_h);
        }
    }
}

#define CONV2D_PARAMS                                                                                        \
    const float *input, float *output, size_t width, size_t height, size_t pitch, const float *mask, unsigned mw, \
        unsigned mh, unsigned left_x, unsigned left_y, unsigned mode
#define RUNTIME_PARAM const __grid_constant__ Taps<RUNTIME_TAPS> taps
#define FIXED_PARAM const __grid_constant__ Taps<FIXED_TAPS> taps
#define IMAGE Image{input, width, height, pitch, mode}

extern "C" __global__ void LAUNCH_BOUNDS(256, 4) conv2d_basic_f32(CONV2D_PARAMS) {
    grid_dependency_wait();
    direct(IMAGE, output, GlobalTaps{mask}, mw, mh, left_x, left_y);
}

// The constant-mask kernels, each in its run-time form (RUNTIME_PARAM) and
// its short-mask form (FIXED_PARAM, for masks of at most 64 taps:
// coalesce_kernels::conv::SHORT_MASK_KERNELS). The tiled kernel carries no
// launch bounds (see coalesce_kernels::conv::LAUNCH_BOUNDS).
#define KERNEL_PARAM(name, algo, PARAM, THREADS, BLOCKS)                                                   \
    extern "C" __global__ void LAUNCH_BOUNDS(THREADS, BLOCKS) name(CONV2D_PARAMS, PARAM) {                  \
        grid_dependency_wait();                                                                             \
        algo(IMAGE, output, ParamTaps{taps.v}, mw, mh, left_x, left_y);                                     \
    }
#define KERNEL_PARAM_UNBOUNDED(name, algo, PARAM)                                                          \
    extern "C" __global__ void name(CONV2D_PARAMS, PARAM) {                                                 \
        grid_dependency_wait();                                                                             \
        algo(IMAGE, output, ParamTaps{taps.v}, mw, mh, left_x, left_y);                                     \
    }

KERNEL_PARAM(conv2d_const_f32, direct, RUNTIME_PARAM, 256, 4)
KERNEL_PARAM(conv2d_const_short_f32, direct, FIXED_PARAM, 256, 4)
KERNEL_PARAM_UNBOUNDED(conv2d_tiled_f32, tiled, RUNTIME_PARAM)
KERNEL_PARAM_UNBOUNDED(conv2d_tiled_short_f32, tiled, FIXED_PARAM)
KERNEL_PARAM(conv2d_fast_f32, fast<LOAD_ROWS_FAST>, RUNTIME_PARAM, 256, 4)
KERNEL_PARAM(conv2d_fast_short_f32, fast<LOAD_ROWS_FAST>, FIXED_PARAM, 256, 4)

// Separable passes: the fast kernel with a 1 x mw mask (rows) or an
// mh x 1 mask (columns), taps from global memory.
extern "C" __global__ void LAUNCH_BOUNDS(256, 4) conv2d_rows_f32(CONV2D_PARAMS) {
    grid_dependency_wait();
    fast<LOAD_ROWS_FAST>(IMAGE, output, GlobalTaps{mask}, mw, 1, left_x, 0);
}

extern "C" __global__ void LAUNCH_BOUNDS(256, 4) conv2d_cols_f32(CONV2D_PARAMS) {
    grid_dependency_wait();
    fast<LOAD_ROWS_COLS>(IMAGE, output, GlobalTaps{mask}, 1, mh, 0, left_y);
}

// The fast kernel's register form for centred 3 x 3, 5 x 5 and 7 x 7
// masks, and 9 x 9, 11 x 11 and 13 x 13 (mask in `taps`; mw, mh, left_x,
// left_y, mask unused).
#define STRIP_KERNEL(name, n, PARAM, BAND, THREADS, BLOCKS)                                                \
    extern "C" __global__ void LAUNCH_BOUNDS(THREADS, BLOCKS) name(CONV2D_PARAMS, PARAM) {                  \
        grid_dependency_wait();                                                                             \
        slide<n, n, BAND>(IMAGE, output, taps.v);                                                           \
    }
STRIP_KERNEL(conv2d_strip3_f32, 3, FIXED_PARAM, false, 256, 2)
STRIP_KERNEL(conv2d_strip5_f32, 5, FIXED_PARAM, false, 256, 3)
STRIP_KERNEL(conv2d_strip7_f32, 7, FIXED_PARAM, false, 256, 2)
STRIP_KERNEL(conv2d_strip9_f32, 9, RUNTIME_PARAM, false, 128, 5)
STRIP_KERNEL(conv2d_strip11_f32, 11, RUNTIME_PARAM, false, 128, 4)
STRIP_KERNEL(conv2d_strip13_f32, 13, RUNTIME_PARAM, false, 128, 4)
// The band kernel (conv2d_band9_f32): 9 x 9 strips as bands, one wave.
STRIP_KERNEL(conv2d_band9_f32, 9, RUNTIME_PARAM, true, 128, 5)

// ---- The fused separable convolution (conv2d_sep_f32) ----
//
// Per SEP_TX x SEP_TY output tile: the input tile with its halo in shared
// memory (modes per axis), the row pass over every tile row into a shared
// intermediate (rounded to float, as the two-pass form's intermediate
// image), then the column pass from it. Each thread computes 4 outputs at
// a time from a register window, whole 4-tap chunks first, then the last
// chunk's taps below the width.
#define SEP_TX 64
#define SEP_TY 64
#define SEP_THREADS 256

__device__ __forceinline__ size_t sep_chunked(size_t taps) { return FAST_X * ((taps + FAST_X - 1) / FAST_X); }

template <class At4>
__device__ __forceinline__ void window4(float acc[FAST_X], size_t w, const float* taps, At4 at4) {
    float lo[FAST_X], hi[FAST_X];
    at4(0, lo);
    const size_t full = w / FAST_X, rem = w % FAST_X;
    for (size_t c = 0; c <= full; ++c) {
        const size_t used = c < full ? FAST_X : rem;
        if (used == 0) break;
        at4(FAST_X * c + FAST_X, hi);
        const float x[2 * FAST_X] = {lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]};
        const float4 m = *reinterpret_cast<const float4*>(taps + FAST_X * c);
        const float mm[FAST_X] = {m.x, m.y, m.z, m.w};
#pragma unroll
        for (int jj = 0; jj < FAST_X; ++jj)
            if ((size_t)jj < used)
#pragma unroll
                for (int r = 0; r < FAST_X; ++r) acc[r] = fmaf(x[r + jj], mm[jj], acc[r]);
#pragma unroll
        for (int r = 0; r < FAST_X; ++r) lo[r] = hi[r];
    }
}

extern "C" __global__ void conv2d_sep_f32(const float* input, float* output, size_t width, size_t height,
                                          size_t pitch, const float* mask_x, const float* mask_y, unsigned mw,
                                          unsigned mh, unsigned left_x, unsigned left_y, unsigned mode) {
    grid_dependency_wait();
    extern __shared__ __align__(16) float s[];
    const Image img{input, width, height, pitch, mode};
    const size_t t = threadIdx.x, cx = sep_chunked(mw), cy = sep_chunked(mh);
    const size_t pitch_in = SEP_TX + cx, rows = SEP_TY + cy;
    float* taps_x = s;
    float* taps_y = s + cx;
    float* tile = s + cx + cy;
    float* mid = tile + rows * pitch_in;
    for (size_t j = t; j < (mw > mh ? mw : mh); j += SEP_THREADS) {
        if (j < mw) taps_x[j] = mask_x[j];
        if (j < mh) taps_y[j] = mask_y[j];
    }
    const size_t tiles_x = (width + SEP_TX - 1) / SEP_TX, tiles = tiles_x * ((height + SEP_TY - 1) / SEP_TY);
    for (size_t b = blockIdx.x; b < tiles; b += gridDim.x) {
        const size_t x0 = (b % tiles_x) * SEP_TX, y0 = (b / tiles_x) * SEP_TY;
        const long long ox = (long long)x0 - left_x, oy = (long long)y0 - left_y;
        const size_t span_x = SEP_TX + mw - 1, span_y = SEP_TY + mh - 1;
        const bool inside = img.contains(ox, oy, span_x, span_y);
        for (size_t r = t / 32; r < rows; r += SEP_THREADS / 32) {
            for (size_t c = t % 32; c < pitch_in; c += 32) {
                const bool used = c < span_x && r < span_y;
                if (inside) {
                    const float* src = input + (size_t)(oy + (long long)r) * pitch + (size_t)(ox + (long long)c);
                    copy_f32((unsigned)__cvta_generic_to_shared(tile + r * pitch_in + c), src, used);
                } else {
                    tile[r * pitch_in + c] = used ? img.fetch(ox + (long long)c, oy + (long long)r) : 0.0f;
                }
            }
        }
        commit_group();
        wait_group<0>();
        __syncthreads();
        const size_t chunks_per_row = SEP_TX / FAST_X;
        for (size_t k = t; k < rows * chunks_per_row; k += SEP_THREADS) {
            const size_t r = k / chunks_per_row, x4 = FAST_X * (k % chunks_per_row);
            const float* base = tile + r * pitch_in + x4;
            float acc[FAST_X] = {};
            window4(acc, mw, taps_x, [&](size_t i, float (&v)[FAST_X]) {
                const float4 q = *reinterpret_cast<const float4*>(base + i);
                v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
            });
#pragma unroll
            for (int i = 0; i < FAST_X; ++i) mid[r * SEP_TX + x4 + i] = acc[i];
        }
        __syncthreads();
        for (size_t k = t; k < (SEP_TY / FAST_Y) * SEP_TX; k += SEP_THREADS) {
            const size_t x = k % SEP_TX, y4 = FAST_Y * (k / SEP_TX);
            float acc[FAST_X] = {};
            window4(acc, mh, taps_y, [&](size_t i, float (&v)[FAST_X]) {
#pragma unroll
                for (int d = 0; d < FAST_X; ++d) v[d] = mid[(y4 + i + d) * SEP_TX + x];
            });
            const size_t gx = x0 + x;
#pragma unroll
            for (int i = 0; i < FAST_X; ++i) {
                const size_t gy = y0 + y4 + i;
                if (gx < width && gy < height) output[gy * pitch + gx] = acc[i];
            }
        }
        __syncthreads();
    }
}

// ---- Tensor cores for large masks (kernels-gpu/src/conv/tensor2d.rs) ----
//
// Per mma.m16n8k8: A = the data (16 output rows x 8 inputs), B = a banded
// Toeplitz block of one mask row (8 inputs x 8 output columns), summed
// over the mask's rows and S = ceil((mw + 7) / 8) steps. Each lane keeps a
// mask row's S fragments in registers; a data fragment is loaded and split
// once and meets every step that uses it (tile k at step q reads the
// columns of tile k + 1 at step q - 1), one ldmatrix.x4 per fragment.
// f32 accuracy from three products
// of split operands, the two small ones accumulated apart; a tile with an
// infinite or NaN output is computed again with plain FMAs. Two tile
// buffers: the next tile arrives by cp.async (16 or 8 bytes per copy when
// the rows' alignment allows) while the current one is computed. The host passes the
// mask table (coalesce_kernels::conv::tensor2d::t2_mask_table).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define T2_WARPS 4
#define T2_THREADS (32 * T2_WARPS)
#define T2_NT 8
#define T2_TX (8 * T2_NT)
#define T2_TY (16 * T2_WARPS)

__device__ __forceinline__ void mma_tf32(float (&acc)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void split_tf32(float x, unsigned& head, unsigned& rest) {
    head = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    rest = __float_as_uint(x - __uint_as_float(head));
}

__device__ __forceinline__ bool non_finite(float x) { return (__float_as_uint(x) & 0x7f800000u) == 0x7f800000u; }

template <bool PRECISE, int S>
__device__ __forceinline__ void tensor2d(Image img, float* output, const float* mask, size_t mw, size_t mh,
                                         size_t lx, size_t ly, const float* table) {
    extern __shared__ __align__(16) float smem[];
    constexpr size_t cols = 8 * (T2_NT + S), tp = cols + 4;  // t2_cols, t2_pitch
    const size_t t = threadIdx.x, lane = t % 32, warp = t / 32, g = lane / 4, tq = lane % 4;
    const size_t rows = T2_TY + mh - 1, table_floats = mh * S * 128, buf_floats = rows * tp;
    for (size_t i = t; 4 * i < table_floats; i += T2_THREADS)
        copy16((unsigned)__cvta_generic_to_shared(smem + 4 * i), table + 4 * i, true);
    commit_group();
    const size_t base = ((size_t)img.p / 4) % 4 + 4 - lx % 4;
    const size_t vec = (img.pitch % 4 == 0 && base % 4 == 0) ? 4 : (img.pitch % 2 == 0 && base % 2 == 0) ? 2 : 1;
    const size_t tiles_x = (img.width + T2_TX - 1) / T2_TX;
    const size_t tiles = tiles_x * ((img.height + T2_TY - 1) / T2_TY);
    const size_t span_x = T2_TX + mw - 1;
    auto x0_of = [&](size_t b) { return (long long)((b % tiles_x) * T2_TX); };
    auto y0_of = [&](size_t b) { return (long long)((b / tiles_x) * T2_TY); };
    auto interior = [&](size_t b) {
        const long long ox = x0_of(b) - (long long)lx, oy = y0_of(b) - (long long)ly;
        return ox >= 0 && oy >= 0 && (size_t)ox + cols <= img.width && (size_t)oy + rows <= img.height;
    };
    auto prefetch = [&](size_t b, float* dst) {
        const size_t ox = (size_t)(x0_of(b) - (long long)lx), oy = (size_t)(y0_of(b) - (long long)ly);
        for (size_t r = warp; r < rows; r += T2_THREADS / 32) {
            const float* src = img.p + (oy + r) * img.pitch + ox;
            for (size_t c = vec * lane; c < cols; c += 32 * vec) {
                const unsigned d = (unsigned)__cvta_generic_to_shared(dst + r * tp + c);
                if (vec == 4) {
                    copy16(d, src + c, true);
                } else if (vec == 2) {
                    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(d), "l"(src + c) : "memory");
                } else {
                    copy_f32(d, src + c, true);
                }
            }
        }
    };
    const size_t m = lane / 8, rr = lane % 8;
    const uint4* b_base = reinterpret_cast<const uint4*>(smem) + lane;
    // Two tile buffers for rows of up to 9 taps (S = 2), one above
    // (t2_double_buffered).
    constexpr bool DOUBLE = S <= 2;
    size_t b = blockIdx.x, cur = 0;
    if (DOUBLE && b < tiles && interior(b)) prefetch(b, smem + table_floats);
    commit_group();
    while (b < tiles) {
        const size_t next = b + gridDim.x;
        if (DOUBLE) {
            if (next < tiles && interior(next)) prefetch(next, smem + table_floats + (cur ^ 1) * buf_floats);
        } else if (interior(b)) {
            prefetch(b, smem + table_floats);
        }
        commit_group();
        float* tile = smem + table_floats + cur * buf_floats;
        if (DOUBLE) {
            wait_group<1>();
        } else {
            wait_group<0>();
        }
        const long long x0 = x0_of(b), y0 = y0_of(b), ox = x0 - (long long)lx, oy = y0 - (long long)ly;
        if (!interior(b)) {
            for (size_t r = warp; r < rows; r += T2_THREADS / 32)
                for (size_t c = lane; c < cols; c += 32)
                    tile[r * tp + c] = c < span_x ? img.fetch(ox + (long long)c, oy + (long long)r) : 0.0f;
        }
        __syncthreads();
        const unsigned a_base =
            (unsigned)__cvta_generic_to_shared(tile + (16 * warp + rr + 8 * (m & 1)) * tp + 4 * (m >> 1));
        float big[T2_NT][4] = {}, small[T2_NT][4] = {};
        for (size_t mr = 0; mr < mh; ++mr) {
            uint4 bq[S];
#pragma unroll
            for (int q = 0; q < S; ++q) bq[q] = b_base[32 * (mr * S + q)];
            const unsigned row = a_base + (unsigned)(4 * mr * tp);
#pragma unroll
            for (int p = 0; p < T2_NT + S - 1; ++p) {
                unsigned x[4];
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                             : "r"(row + 32 * p));
                unsigned xh[4], xl[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    if (PRECISE) {
                        split_tf32(__uint_as_float(x[e]), xh[e], xl[e]);
                    } else {
                        xh[e] = x[e];
                    }
                }
#pragma unroll
                for (int q = 0; q < S; ++q) {
                    const int k = p - q;
                    if (k >= 0 && k < T2_NT) {
                        mma_tf32(big[k], xh, bq[q].x, bq[q].y);
                        if (PRECISE) {
                            mma_tf32(small[k], xl, bq[q].x, bq[q].y);
                            mma_tf32(small[k], xh, bq[q].z, bq[q].w);
                        }
                    }
                }
            }
        }
        bool bad = false;
#pragma unroll
        for (int k = 0; k < T2_NT; ++k)
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                if (PRECISE) big[k][v] += small[k][v];
                bad |= non_finite(big[k][v]);
            }
        auto inside = [&](long long x, long long y) {
            return x >= 0 && (size_t)x < img.width && (size_t)y < img.height;
        };
        if (__syncthreads_or(bad)) {
            for (size_t o = t; o < T2_TX * T2_TY; o += T2_THREADS) {
                const size_t cx = o % T2_TX, cy = o / T2_TX;
                const long long gx = x0 + (long long)cx, gy = y0 + (long long)cy;
                if (inside(gx, gy)) {
                    float acc = 0.0f;
                    for (size_t j = 0; j < mh; ++j)
                        for (size_t i = 0; i < mw; ++i) acc = fmaf(tile[(cy + j) * tp + cx + i], mask[j * mw + i], acc);
                    output[(size_t)gy * img.pitch + (size_t)gx] = acc;
                }
            }
        } else {
            const long long gy = y0 + (long long)(16 * warp + g);
#pragma unroll
            for (int k = 0; k < T2_NT; ++k) {
                const long long gx = x0 + (long long)(8 * k + 2 * tq);
                const long long dy[4] = {0, 0, 8, 8}, dx[4] = {0, 1, 0, 1};
#pragma unroll
                for (int v = 0; v < 4; ++v)
                    if (inside(gx + dx[v], gy + dy[v]))
                        output[(size_t)(gy + dy[v]) * img.pitch + (size_t)(gx + dx[v])] = big[k][v];
            }
        }
        __syncthreads();
        if (DOUBLE) cur ^= 1;
        b = next;
    }
    wait_group<0>();
}

#define TENSOR2D_KERNEL(name, precise, s, THREADS, BLOCKS)                                                 \
    extern "C" __global__ void LAUNCH_BOUNDS(THREADS, BLOCKS) name(CONV2D_PARAMS, const float* table) {     \
        grid_dependency_wait();                                                                             \
        tensor2d<precise, s>(IMAGE, output, mask, mw, mh, left_x, left_y, table);                           \
    }
TENSOR2D_KERNEL(conv2d_tensor_s2_f32, true, 2, 128, 3)
TENSOR2D_KERNEL(conv2d_tensor_s3_f32, true, 3, 128, 3)
TENSOR2D_KERNEL(conv2d_tensor_s4_f32, true, 4, 128, 3)
TENSOR2D_KERNEL(conv2d_tensor_tf32_s2_f32, false, 2, 128, 4)
TENSOR2D_KERNEL(conv2d_tensor_tf32_s3_f32, false, 3, 128, 4)
TENSOR2D_KERNEL(conv2d_tensor_tf32_s4_f32, false, 4, 128, 4)
#endif

// ---- Streamed separable filters (kernels-gpu/src/conv/sepstream.rs) ----
//
// A row pass then a column pass in one kernel, a window of 2H + 1 taps per
// axis known at compile time. Each block (one warp) owns SEPS_STRIP output
// columns, 4 per lane, and walks its band of `rows` output rows (seps_task).
// Input rows of the strip, PAD = seps_pad(H) columns either side, arrive by
// cp.async in a ring of SEPS_DEPTH rows, SEPS_DEPTH - 1 ahead (16-byte
// copies; 4 scalar ones from the mapped columns at the edges). Each lane
// writes its 4 row-pass values to its own 16 bytes of a ring of
// T = seps_ring(H) intermediate rows, and after every SEPS_CHUNK rows
// computes that many output rows from the last seps_reach(H) of them, read
// in runs of seps_run(H) rows that do not wrap. Taps by value: row taps at
// 0 ... 2H, column taps at SEPS_MAX_TAPS ... SEPS_MAX_TAPS + 2H. Outputs
// that come out infinite or NaN are computed again with the mask's own
// taps (mw, mh, lx, ly). Parameters: (input, output, width, height, pitch,
// rows, mode, mw, mh, lx, ly, taps); blocks of 32 threads, shared memory
// seps_shared_bytes(H) = (T * SEPS_STRIP + SEPS_DEPTH * seps_line(H)) * 4.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define SEPS_STRIP 128
#define SEPS_CHUNK 8
#define SEPS_DEPTH 8
// 2 * SEPS_MAX_HALF + 1: taps per axis in the parameter (SEPS_PARAM_BYTES
// = 2 * SEPS_MAX_TAPS * 4).
#define SEPS_MAX_TAPS 41
typedef Taps<2 * SEPS_MAX_TAPS> SepsTaps;

__host__ __device__ constexpr int seps_pad(int h) { return (h + 3) / 4 * 4; }
__host__ __device__ constexpr int seps_line(int h) { return SEPS_STRIP + 2 * seps_pad(h); }
__host__ __device__ constexpr int seps_reach(int h) { return SEPS_CHUNK + 2 * h; }
// Blocks per SM of 228 KiB (1 KiB reserved each, at most 16) with a ring of
// `ring` rows; the ring is the reach rounded up to a multiple of 8 where
// that costs no block, else the reach; runs of 8, 4 or 2 rows.
__host__ __device__ constexpr int seps_blocks_per_sm(int ring, int h) {
    return 228 * 1024 / ((ring * SEPS_STRIP + SEPS_DEPTH * seps_line(h)) * 4 + 1024) < 16
               ? 228 * 1024 / ((ring * SEPS_STRIP + SEPS_DEPTH * seps_line(h)) * 4 + 1024)
               : 16;
}
__host__ __device__ constexpr int seps_ring(int h) {
    return seps_blocks_per_sm((seps_reach(h) + 7) / 8 * 8, h) == seps_blocks_per_sm(seps_reach(h), h)
               ? (seps_reach(h) + 7) / 8 * 8
               : seps_reach(h);
}
// The kernels whose odd bands walk up (seps_flips in sepstream.rs).
__host__ __device__ constexpr bool seps_flips(int h) { return h == 7 || h == 8; }
__host__ __device__ constexpr int seps_run(int h) { return seps_ring(h) % 8 == 0 ? 8 : seps_ring(h) % 4 == 0 ? 4 : 2; }

// The launch's arguments (Args).
struct SepsArgs {
    const float* input;
    float* output;
    unsigned width, height;
    size_t pitch;
    unsigned rows, mode, mw, mh, lx, ly;
};

// The row a position maps to (-1: zeros), for positions up to H past
// either end; positions further below take zeros (map_row).
__device__ __forceinline__ int seps_map_row(int y, int height, int half, unsigned mode) {
    if (0 <= y && y < height) return y;
    if (y >= height + half || y < -half) return -1;
    return map_index32(y, height, mode);
}

// Copies columns c ... c + 3 of `line` to shared address dst: one 16-byte
// copy when all four lie inside the row (`inside`), else one per column
// from the mapped columns m (-1: zeros); zeros when not `live`.
__device__ __forceinline__ void seps_copy(unsigned dst, const float* line, int c, bool inside, const int (&m)[4],
                                          bool live) {
    if (inside) {
        copy16(dst, line + c, live);
    } else {
#pragma unroll
        for (int e = 0; e < 4; e++) copy_f32(dst + 4 * e, line + (m[e] < 0 ? 0 : m[e]), live && m[e] >= 0);
    }
}

// One output computed from the input with the mask's own taps (exact):
// each row pass in tap order, then the column taps in order.
__device__ __forceinline__ float seps_exact(const SepsArgs& a, const float* taps, unsigned half, int x, int y) {
    const int w = (int)a.width, h = (int)a.height;
    float acc = 0.0f;
    for (unsigned k = 0; k < a.mh; k++) {
        const int ry = map_index32(y - (int)a.ly + (int)k, h, a.mode);
        if (ry >= 0) {
            const float* line = a.input + (size_t)ry * a.pitch;
            float t = 0.0f;
            for (unsigned i = 0; i < a.mw; i++) {
                const int cx = map_index32(x - (int)a.lx + (int)i, w, a.mode);
                if (cx >= 0) t = fmaf(line[cx], taps[half - a.lx + i], t);
            }
            acc = fmaf(t, taps[SEPS_MAX_TAPS + half - a.ly + k], acc);
        }
    }
    return acc;
}

// The kernels (seps): K = 2H + 1 taps per axis, WIN = 4 + 2 * PAD floats
// of each lane's row window.
template <int H>
__device__ __forceinline__ void seps(const SepsArgs a, const float* taps) {
    constexpr int K = 2 * H + 1, PAD = seps_pad(H), LINE = seps_line(H), T = seps_ring(H), WIN = 4 + 2 * PAD;
    constexpr int REACH = seps_reach(H), RUN = seps_run(H);
    static_assert(H <= 20 && WIN <= 48 && T <= 48, "seps: window or ring too large");
    static_assert(T % RUN == 0 && SEPS_CHUNK % RUN == 0, "seps: runs must not wrap");
    const unsigned lane = threadIdx.x;
    // The task (seps_task); whole warps leave.
    const unsigned strips = (a.width + SEPS_STRIP - 1) / SEPS_STRIP;
    if (strips == 0 || a.height == 0 || a.rows == 0) return;
    const unsigned band = blockIdx.x / strips;
    if (band >= a.height / a.rows + (a.height % a.rows != 0)) return;
    // Odd bands of the flipping kernels walk up (seps_flips): rows y0 ... y_end
    // counted from the image's last row, the column taps reversed.
    const bool flip = seps_flips(H) && (band & 1) != 0;
    const unsigned b0 = band * a.rows;
    const unsigned b_end = a.height - b0 < a.rows ? a.height : b0 + a.rows;
    const unsigned y0 = flip ? a.height - b_end : b0, y_end = flip ? a.height - b0 : b_end;
    const unsigned strip_i = blockIdx.x % strips;
    // This lane's 16 bytes of intermediate row 0 (rows SEPS_STRIP floats
    // apart), and input row 0 of the ring (rows LINE floats apart).
    float4* const t_at = reinterpret_cast<float4*>(conv2d_smem) + lane;
    float* const in_ring = conv2d_smem + T * SEPS_STRIP;
    const unsigned in_at = (unsigned)__cvta_generic_to_shared(in_ring);
    const int w = (int)a.width, hgt = (int)a.height;
    // The lane's copies: columns c0 ... c0 + 3 of the staged line, and
    // c1 ... c1 + 3 for the first PAD / 2 lanes.
    const int x_strip = (int)(strip_i * SEPS_STRIP);
    const int c0 = x_strip - PAD + 4 * (int)lane, c1 = c0 + SEPS_STRIP;
    const bool second = lane < (unsigned)(PAD / 2);
    const bool in0 = c0 >= 0 && c0 + 4 <= w, in1 = c1 >= 0 && c1 + 4 <= w;
    int m0[4] = {-1, -1, -1, -1}, m1[4] = {-1, -1, -1, -1};
    if (__ballot_sync(0xffffffffu, !in0 || (second && !in1)) != 0) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            m0[e] = map_index32(c0 + e, w, a.mode);
            m1[e] = map_index32(c1 + e, w, a.mode);
        }
    }
    const unsigned chunks = (y_end - y0 + SEPS_CHUNK - 1) / SEPS_CHUNK;
    // Intermediate rows: row n is input row y0 - H + n.
    const unsigned total = chunks * SEPS_CHUNK + 2 * H;
    // Issues input row n into its ring slot (zeros past `total`), as one group.
    auto issue = [&](unsigned n) {
        const unsigned slot = in_at + (n % SEPS_DEPTH) * (LINE * 4);
        const int yl = (int)y0 - H + (int)n;
        const int ry = n < total ? seps_map_row(flip ? hgt - 1 - yl : yl, hgt, H, a.mode) : -1;
        const bool live = ry >= 0;
        const float* line = a.input + (size_t)(ry < 0 ? 0 : ry) * a.pitch;
        seps_copy(slot + 16 * lane, line, c0, in0, m0, live);
        if (second) seps_copy(slot + 16 * (lane + 32), line, c1, in1, m1, live);
        commit_group();
    };
#pragma unroll
    for (unsigned j = 0; j < SEPS_DEPTH - 1; j++) issue(j);
    const int x_out = x_strip + 4 * (int)lane;
    const bool writes = x_out < w, whole = x_out + 4 <= w;
    float* out = a.output + (size_t)(flip ? hgt - 1 - (int)y0 : (int)y0) * a.pitch + x_out;
    const ptrdiff_t ostride = flip ? -(ptrdiff_t)a.pitch : (ptrdiff_t)a.pitch;
    // Row n of the intermediate goes to slot n mod T; each column pass reads
    // its rows from slot `first` on (a multiple of RUN).
    unsigned n = 0, slot_t = 0, first = 0, y = y0, steps = REACH;
    // The wide windows hold their row taps in registers (through a shuffle,
    // so that ptxas does not read the parameter again in the loop).
    constexpr bool hoist = H >= 15;
    float rt[K];
#pragma unroll
    for (int j = 0; j < K; j++) rt[j] = hoist ? __shfl_xor_sync(0xffffffffu, taps[j], 0) : 0.0f;
    // The flipping kernels hold their column taps in registers, reversed on
    // the bands that walk up.
    float ct[K];
#pragma unroll
    for (int k = 0; k < K; k++)
        ct[k] = seps_flips(H)
                    ? __shfl_xor_sync(0xffffffffu, flip ? taps[SEPS_MAX_TAPS + K - 1 - k] : taps[SEPS_MAX_TAPS + k], 0)
                    : 0.0f;
    for (;;) {
        // The row pass of `steps` input rows (the first chunk needs its 2H
        // rows above too).
        for (unsigned s = 0; s < steps; s++) {
            wait_group<SEPS_DEPTH - 2>();
            __syncwarp();
            // Into the slot of row n - 1, which every lane has read.
            issue(n + SEPS_DEPTH - 1);
            const float4* src = reinterpret_cast<const float4*>(in_ring + (n % SEPS_DEPTH) * LINE) + lane;
            float win[WIN];
#pragma unroll
            for (int q = 0; q < WIN / 4; q++) {
                const float4 v = src[q];
                win[4 * q] = v.x;
                win[4 * q + 1] = v.y;
                win[4 * q + 2] = v.z;
                win[4 * q + 3] = v.w;
            }
            // Two chains per output (even and odd taps), summed at the end.
            float t[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float even = win[e + PAD - H] * (hoist ? rt[0] : taps[0]);
                float odd = win[e + PAD - H + 1] * (hoist ? rt[1] : taps[1]);
#pragma unroll
                for (int j = 2; j < K; j++) {
                    const float m = hoist ? rt[j] : taps[j];
                    if (j % 2) odd = fmaf(win[e + PAD - H + j], m, odd);
                    else even = fmaf(win[e + PAD - H + j], m, even);
                }
                t[e] = even + odd;
            }
            t_at[slot_t * (SEPS_STRIP / 4)] = make_float4(t[0], t[1], t[2], t[3]);
            n++;
            slot_t = slot_t + 1 == (unsigned)T ? 0 : slot_t + 1;
        }
        steps = SEPS_CHUNK;
        // The column pass: intermediate rows n - REACH ... n - 1 sit at slots
        // first, first + 1, ... (mod T), in runs of RUN rows that do not
        // wrap; output row y + r takes rows r ... r + 2H.
        float acc[SEPS_CHUNK][4];
        const float4* run_at = t_at;
#pragma unroll
        for (int q = 0; q < REACH; q++) {
            if (q % RUN == 0) {
                const unsigned at = first + q;
                run_at = t_at + (at >= (unsigned)T ? at - T : at) * (SEPS_STRIP / 4);
            }
            const float4 v4 = run_at[(q % RUN) * (SEPS_STRIP / 4)];
            const float v[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
            for (int r = 0; r < SEPS_CHUNK; r++) {
                const int k = q - r;
                if (k >= 0 && k < K) {
                    const float m = seps_flips(H) ? ct[k] : taps[SEPS_MAX_TAPS + k];
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[r][e] = k == 0 ? v[e] * m : fmaf(v[e], m, acc[r][e]);
                }
            }
        }
        // Bit 4r + e: output (r, e) came out infinite or NaN (o - o is
        // NaN), inside the image.
        unsigned bad = 0;
#pragma unroll
        for (int r = 0; r < SEPS_CHUNK; r++) {
            const bool live = y + r < y_end;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const bool inside = live && x_out + e < w;
                bad |= (unsigned)((acc[r][e] - acc[r][e]) != 0.0f && inside) << (4 * r + e);
            }
            if (live) {
                float* p = out + r * ostride;
                if (whole) {
                    *reinterpret_cast<float4*>(p) = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
                } else if (writes) {
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        if (x_out + e < w) p[e] = acc[r][e];
                }
            }
        }
        // The rare path, one output at a time.
        while (bad != 0) {
            const unsigned b = __ffs(bad) - 1;
            bad &= bad - 1;
            const unsigned r = b / 4, e = b % 4;
            const int yo = flip ? hgt - 1 - (int)(y + r) : (int)(y + r);
            out[(ptrdiff_t)r * ostride + e] = seps_exact(a, taps, H, x_out + (int)e, yo);
        }
        first = first + SEPS_CHUNK < (unsigned)T ? first + SEPS_CHUNK : first + SEPS_CHUNK - T;
        y += SEPS_CHUNK;
        if (y >= y_end) return;
        out += SEPS_CHUNK * ostride;
    }
}

#define SEPS_PARAMS                                                                                          \
    const float *input, float *output, unsigned width, unsigned height, size_t pitch, unsigned rows,          \
        unsigned mode, unsigned mw, unsigned mh, unsigned lx, unsigned ly, const __grid_constant__ SepsTaps taps
#define SEPS_ARGS SepsArgs{input, output, width, height, pitch, rows, mode, mw, mh, lx, ly}, taps.v

extern "C" __global__ void LAUNCH_BOUNDS(32, 16) conv2d_seps_f32_h1(SEPS_PARAMS) { grid_dependency_wait(); seps<1>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 16) conv2d_seps_f32_h2(SEPS_PARAMS) { grid_dependency_wait(); seps<2>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 16) conv2d_seps_f32_h3(SEPS_PARAMS) { grid_dependency_wait(); seps<3>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 16) conv2d_seps_f32_h4(SEPS_PARAMS) { grid_dependency_wait(); seps<4>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 16) conv2d_seps_f32_h5(SEPS_PARAMS) { grid_dependency_wait(); seps<5>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 16) conv2d_seps_f32_h6(SEPS_PARAMS) { grid_dependency_wait(); seps<6>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 13) conv2d_seps_f32_h7(SEPS_PARAMS) { grid_dependency_wait(); seps<7>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 13) conv2d_seps_f32_h8(SEPS_PARAMS) { grid_dependency_wait(); seps<8>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 16) conv2d_seps_f32_h10(SEPS_PARAMS) { grid_dependency_wait(); seps<10>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 16) conv2d_seps_f32_h12(SEPS_PARAMS) { grid_dependency_wait(); seps<12>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 9) conv2d_seps_f32_h15(SEPS_PARAMS) { grid_dependency_wait(); seps<15>(SEPS_ARGS); }
extern "C" __global__ void LAUNCH_BOUNDS(32, 7) conv2d_seps_f32_h20(SEPS_PARAMS) { grid_dependency_wait(); seps<20>(SEPS_ARGS); }
#endif
