//! Arrays passed by value in a kernel's parameter space: each launch
//! carries its own copy, so launches on any stream, from any thread,
//! never share it (CUDA C++'s `__grid_constant__` parameters).
//!
//! Kernel parameters live in constant bank 0 (`c[0x0][…]` in SASS), read
//! through the same constant cache as `__constant__` arrays (bank 3): one
//! address per warp is a broadcast, and a tap at a fixed offset becomes a
//! constant-bank operand or a uniform load (`ULDC`).
//!
//! rustc passes a by-value aggregate parameter as an LLVM value, and
//! indexing it at run time makes LLVM copy all of it into local memory
//! first. So the kernels declare the parameter ([`ParamBytes`]) but never
//! read it as a Rust value: [`param_base!`](crate::param_base) takes the
//! parameter's address in the `.param` space by its PTX name
//! (`<kernel>_param_<index>`, the names LLVM gives kernel parameters), and
//! [`ParamElem::ld_param`] reads elements at that address plus an offset
//! (`ld.param` with a register address, which PTX allows for kernel
//! parameters). With a uniform or constant offset `ptxas` reads them as
//! `c[0x0][offset]`; the host's SASS tests check that no kernel copies a
//! parameter into local memory.
//!
//! A kernel names its parameter with [`param_symbol!`](crate::param_symbol)
//! (a zero-sized type whose [`ParamSymbol::base`] takes the address afresh
//! where it is used): each read is then the symbol plus an offset, as a
//! `__constant__` array's reads are, instead of a pointer LLVM carries
//! through a loop (which cost the 1D `tiled_l2` kernel about 5%).

use core::arch::asm;

/// A kernel parameter of `N` bytes, 8-byte aligned, declared in a kernel's
/// signature and read only through [`param_base!`](crate::param_base).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct ParamBytes<const N: usize>(pub [u8; N]);

/// Element types read from the parameter space.
pub trait ParamElem: Copy {
    /// Loads the element at `.param`-space address `addr`.
    ///
    /// # Safety
    /// `addr` lies inside a parameter of this kernel, aligned for `Self`.
    unsafe fn ld_param(addr: u64) -> Self;
}

macro_rules! param_elem {
    ($($t:ty => $ptx:literal, $class:ident;)*) => {$(
        impl ParamElem for $t {
            #[inline(always)]
            unsafe fn ld_param(addr: u64) -> Self {
                let v: $t;
                // SAFETY: forwarded to the caller's contract.
                unsafe {
                    asm!(
                        concat!("ld.param.", $ptx, " {v}, [{a}];"),
                        v = out($class) v, a = in(reg64) addr,
                        options(readonly, nostack, preserves_flags, pure),
                    );
                }
                v
            }
        }
    )*};
}

param_elem! {
    f32 => "f32", reg32;
    u32 => "u32", reg32;
    f64 => "f64", reg64;
}

/// A kernel parameter known by name: [`ParamSymbol::base`] is its
/// `.param`-space address (see [`param_symbol!`](crate::param_symbol)).
pub trait ParamSymbol: Copy {
    /// The parameter's address (`mov.u64 r, <kernel>_param_<index>;`).
    fn base() -> u64;
}

/// Declares a zero-sized type `$ty` implementing [`ParamSymbol`] for
/// parameter `$index` of kernel `$kernel`. Use it inside that kernel's
/// body only.
#[macro_export]
macro_rules! param_symbol {
    ($ty:ident = $kernel:ident, $index:literal) => {
        #[derive(Clone, Copy)]
        struct $ty;

        impl $crate::dev::param::ParamSymbol for $ty {
            #[inline(always)]
            fn base() -> u64 {
                $crate::param_base!($kernel, $index)
            }
        }
    };
}

/// The `.param`-space address of parameter `$index` (0-based) of kernel
/// `$kernel`, as a `u64`: `mov.u64 r, <kernel>_param_<index>;`. Use it only
/// inside that kernel's body.
#[macro_export]
macro_rules! param_base {
    ($kernel:ident, $index:literal) => {{
        let a: u64;
        // SAFETY: takes the address of one of this kernel's parameters; no
        // memory access.
        unsafe {
            ::core::arch::asm!(
                concat!("mov.u64 {a}, ", stringify!($kernel), "_param_", stringify!($index), ";"),
                a = out(reg64) a,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        a
    }};
}
