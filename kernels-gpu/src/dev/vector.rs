//! Vector (64- and 128-bit) global-memory access, and the arithmetic that
//! decides where in a range vector access is legal.
//!
//! A vector access must be aligned to its own size (8 or 16 bytes): the
//! lesson's `reinterpret_cast<int2*>(d_in + 1)` is the classic mistake. A
//! range whose start is not aligned is therefore split into a scalar *head*
//! up to the first aligned address, an aligned vector *body*, and a scalar
//! *tail* ([`split`]). Host and kernels both call [`split`], so the launch
//! plan and the kernel agree by construction.
//!
//! The loads and stores are inline PTX (`ld.global.v2.u32`,
//! `ld.global.v4.u32`, …): the width is then a property of the source, not a
//! guess about the optimizer, and the host's SASS tests confirm `LDG.E.64`
//! / `LDG.E.128`.

/// How a run of `n` 32-bit words splits for vectors of `VEC_WORDS` words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// Scalar words before the first vector-aligned address.
    pub head: usize,
    /// Whole vectors in the aligned middle.
    pub body: usize,
    /// Scalar words after the last whole vector.
    pub tail: usize,
}

/// Splits a copy of `n` 32-bit words from byte address `src` to `dst` for
/// vectors of `vec_words` words (1, 2 or 4).
///
/// Returns `None` when no vector access is legal on both sides: the two
/// addresses differ modulo the vector size (or are not even 4-byte aligned),
/// so aligning one misaligns the other. Otherwise `head + body·vec_words +
/// tail == n` and `src + 4·head`, `dst + 4·head` are both vector-aligned.
#[inline(always)]
pub const fn split(src: usize, dst: usize, n: usize, vec_words: usize) -> Option<Split> {
    let vec_bytes = vec_words * 4;
    if !src.is_multiple_of(4) || src % vec_bytes != dst % vec_bytes {
        return None;
    }
    let mut head = ((vec_bytes - src % vec_bytes) % vec_bytes) / 4;
    if head > n {
        head = n;
    }
    let rest = n - head;
    Some(Split { head, body: rest / vec_words, tail: rest % vec_words })
}

/// Two 32-bit words moved as one 64-bit access (CUDA's `int2`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct U32x2(pub [u32; 2]);

/// Four 32-bit words moved as one 128-bit access (CUDA's `int4`).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct U32x4(pub [u32; 4]);

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{U32x2, U32x4};
    use core::arch::asm;

    /// A unit of global-memory access: one 32-bit word, or a 64- or 128-bit
    /// vector of words. Generic copy loops are written once over it.
    pub trait VecAccess: Copy + Default {
        /// 32-bit words per access.
        const WORDS: usize;
        /// One global load.
        ///
        /// # Safety
        /// `p` must be valid and aligned to `4 · WORDS` bytes.
        unsafe fn load(p: *const Self) -> Self;
        /// One global store.
        ///
        /// # Safety
        /// `p` must be valid, writable and aligned to `4 · WORDS` bytes.
        unsafe fn store(p: *mut Self, v: Self);
    }

    impl VecAccess for u32 {
        const WORDS: usize = 1;
        #[inline(always)]
        unsafe fn load(p: *const Self) -> Self {
            // SAFETY: forwarded to the caller's contract.
            unsafe { p.read() }
        }
        #[inline(always)]
        unsafe fn store(p: *mut Self, v: Self) {
            // SAFETY: forwarded to the caller's contract.
            unsafe { p.write(v) }
        }
    }

    impl VecAccess for U32x2 {
        const WORDS: usize = 2;
        #[inline(always)]
        unsafe fn load(p: *const Self) -> Self {
            // SAFETY: forwarded to the caller's contract.
            unsafe { load_v2(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut Self, v: Self) {
            // SAFETY: forwarded to the caller's contract.
            unsafe { store_v2(p, v) }
        }
    }

    impl VecAccess for U32x4 {
        const WORDS: usize = 4;
        #[inline(always)]
        unsafe fn load(p: *const Self) -> Self {
            // SAFETY: forwarded to the caller's contract.
            unsafe { load_v4(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut Self, v: Self) {
            // SAFETY: forwarded to the caller's contract.
            unsafe { store_v4(p, v) }
        }
    }

    /// One 64-bit global load (`ld.global.v2.u32`, SASS `LDG.E.64`).
    ///
    /// # Safety
    /// `p` must be a valid, 8-byte-aligned pointer to global memory.
    #[inline(always)]
    pub unsafe fn load_v2(p: *const U32x2) -> U32x2 {
        let (a, b): (u32, u32);
        // SAFETY: the caller guarantees a valid aligned global address.
        unsafe {
            asm!(
                "ld.global.v2.u32 {{{a}, {b}}}, [{p}];",
                a = out(reg32) a, b = out(reg32) b, p = in(reg64) p,
                options(readonly, nostack, preserves_flags),
            );
        }
        U32x2([a, b])
    }

    /// One 64-bit global store (`st.global.v2.u32`, SASS `STG.E.64`).
    ///
    /// # Safety
    /// `p` must be a valid, writable, 8-byte-aligned pointer to global memory.
    #[inline(always)]
    pub unsafe fn store_v2(p: *mut U32x2, v: U32x2) {
        // SAFETY: the caller guarantees a valid aligned global address.
        unsafe {
            asm!(
                "st.global.v2.u32 [{p}], {{{a}, {b}}};",
                p = in(reg64) p, a = in(reg32) v.0[0], b = in(reg32) v.0[1],
                options(nostack, preserves_flags),
            );
        }
    }

    /// One 128-bit global load (`ld.global.v4.u32`, SASS `LDG.E.128`).
    ///
    /// # Safety
    /// `p` must be a valid, 16-byte-aligned pointer to global memory.
    #[inline(always)]
    pub unsafe fn load_v4(p: *const U32x4) -> U32x4 {
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: the caller guarantees a valid aligned global address.
        unsafe {
            asm!(
                "ld.global.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];",
                a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                p = in(reg64) p,
                options(readonly, nostack, preserves_flags),
            );
        }
        U32x4([a, b, c, d])
    }

    /// One 128-bit global store (`st.global.v4.u32`, SASS `STG.E.128`).
    ///
    /// # Safety
    /// `p` must be a valid, writable, 16-byte-aligned pointer to global memory.
    #[inline(always)]
    pub unsafe fn store_v4(p: *mut U32x4, v: U32x4) {
        // SAFETY: the caller guarantees a valid aligned global address.
        unsafe {
            asm!(
                "st.global.v4.u32 [{p}], {{{a}, {b}, {c}, {d}}};",
                p = in(reg64) p,
                a = in(reg32) v.0[0], b = in(reg32) v.0[1], c = in(reg32) v.0[2], d = in(reg32) v.0[3],
                options(nostack, preserves_flags),
            );
        }
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;

#[cfg(test)]
mod tests {
    use super::{Split, split};

    #[test]
    fn aligned_start_has_no_head() {
        assert_eq!(split(256, 512, 10, 4), Some(Split { head: 0, body: 2, tail: 2 }));
    }

    #[test]
    fn document_offset_by_one_word_is_peeled() {
        // d_in + 1 with int4: three scalar words reach the next 16-byte boundary.
        assert_eq!(split(256 + 4, 512 + 4, 11, 4), Some(Split { head: 3, body: 2, tail: 0 }));
    }

    #[test]
    fn different_residues_refuse_vectors() {
        assert_eq!(split(256 + 4, 512 + 8, 100, 4), None);
        assert_eq!(split(256 + 4, 512 + 8, 100, 2), None);
        assert_eq!(split(256 + 4, 512 + 12, 100, 2).map(|s| s.head), Some(1));
        assert_eq!(split(256 + 2, 512 + 2, 100, 1), None);
    }

    #[test]
    fn parts_always_sum_to_n_and_align() {
        for vec in [1usize, 2, 4] {
            for off in 0..8usize {
                for n in 0..40usize {
                    let (s, d) = (1024 + 4 * off, 4096 + 4 * off);
                    let p = split(s, d, n, vec).unwrap();
                    assert_eq!(p.head + p.body * vec + p.tail, n);
                    assert!(p.head < vec.max(1));
                    assert!(p.tail < vec);
                    if p.body > 0 {
                        assert_eq!((s + 4 * p.head) % (4 * vec), 0);
                        assert_eq!((d + 4 * p.head) % (4 * vec), 0);
                    }
                }
            }
        }
    }
}
