//! Constant memory: module-level arrays in the `.const` state space, written
//! by the host by name (cust's `Module::get_global`, the Rust form of
//! `cudaMemcpyToSymbol`) and read on the device through the constant cache,
//! which broadcasts one address to a whole warp in a single transaction.
//!
//! Declare with [`constant_array!`](crate::constant_array); read with the
//! generated `get`. Reads are `ld.const` through inline PTX; with a
//! warp-uniform index ptxas turns them into constant-bank operands or `LDC`,
//! never `LDG` (checked by the host's SASS tests).

use core::arch::asm;

/// Element types that can live in a constant array.
pub trait ConstElem: Copy {
    /// Loads the element at the constant-space address `addr`.
    ///
    /// # Safety
    /// `addr` must be a constant-space address inside a declared array,
    /// aligned for `Self`.
    unsafe fn ld_const(addr: u64) -> Self;
}

macro_rules! const_elem {
    ($($t:ty => $ptx:literal, $class:ident;)*) => {$(
        impl ConstElem for $t {
            #[inline(always)]
            unsafe fn ld_const(addr: u64) -> Self {
                let v: $t;
                // SAFETY: forwarded to the caller's contract.
                unsafe {
                    asm!(
                        concat!("ld.const.", $ptx, " {v}, [{a}];"),
                        v = out($class) v, a = in(reg64) addr,
                        options(readonly, nostack, preserves_flags, pure),
                    );
                }
                v
            }
        }
    )*};
}

const_elem! {
    f32 => "f32", reg32;
    u32 => "u32", reg32;
    i32 => "s32", reg32;
    f64 => "f64", reg64;
    u64 => "u64", reg64;
}

/// Declares a constant-memory array and a zero-sized handle to read it.
///
/// ```ignore
/// coalesce_kernels::constant_array!(pub MASK: [f32; 16384], align 4, "f32");
/// let w = MASK::get(j); // ld.const.f32
/// ```
///
/// The PTX symbol has the Rust name (`MASK` above); the host writes it with
/// `Gpu::write_symbol::<f32>("MASK", …)`. The element type's PTX name and
/// alignment are spelled out because `global_asm!` needs literals.
#[macro_export]
macro_rules! constant_array {
    ($(#[$meta:meta])* $vis:vis $name:ident: [$t:ty; $len:literal], align $align:literal, $ptx:literal) => {
        ::core::arch::global_asm!(concat!(
            ".visible .const .align ", stringify!($align), " .", $ptx, " ",
            stringify!($name), "[", stringify!($len), "];"
        ));

        $(#[$meta])*
        #[allow(non_camel_case_types)]
        $vis struct $name;

        impl $name {
            /// Number of elements.
            pub const LEN: usize = $len;

            /// The symbol's constant-space base address.
            #[inline(always)]
            pub fn base() -> u64 {
                let a: u64;
                // SAFETY: takes the address of a symbol; no memory access.
                unsafe {
                    ::core::arch::asm!(
                        concat!("mov.u64 {a}, ", stringify!($name), ";"),
                        a = out(reg64) a,
                        options(pure, nomem, nostack, preserves_flags),
                    );
                }
                a
            }

            /// Element `i` (the index is clamped into bounds, so an
            /// out-of-range read returns the last element instead of
            /// reading outside the array).
            #[inline(always)]
            pub fn get(i: usize) -> $t {
                let i = if i < $len { i } else { $len - 1 };
                let addr = Self::base() + (i * ::core::mem::size_of::<$t>()) as u64;
                // SAFETY: `addr` lies inside the declared array and is
                // aligned for the element type.
                unsafe { <$t as $crate::dev::constant::ConstElem>::ld_const(addr) }
            }
        }
    };
}
