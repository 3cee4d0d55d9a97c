//! Shared memory: static arrays declared per module and the dynamic
//! (launch-sized) window, read and written with real `ld.shared` /
//! `st.shared` instructions.
//!
//! Why inline PTX: a generic pointer to shared memory (`cvta.shared`) works
//! with ordinary Rust loads, but ptxas then emits generic `LD.E`/`ST.E`,
//! which go through address translation. Addressing the shared window
//! directly (32-bit addresses from `mov.u32 a, SYMBOL;`) gives `LDS`/`STS`;
//! the host's SASS tests check it.

use core::arch::asm;

/// Element types that can be moved to and from shared memory.
pub trait SharedElem: Copy {
    /// Loads from shared-window address `addr`.
    ///
    /// # Safety
    /// `addr` must lie inside a shared array of this block, aligned for `Self`.
    unsafe fn ld_shared(addr: u32) -> Self;
    /// Stores to shared-window address `addr`.
    ///
    /// # Safety
    /// As [`SharedElem::ld_shared`].
    unsafe fn st_shared(addr: u32, v: Self);
}

macro_rules! shared_elem {
    ($($t:ty => $ptx:literal, $class:ident;)*) => {$(
        impl SharedElem for $t {
            #[inline(always)]
            unsafe fn ld_shared(addr: u32) -> Self {
                let v: $t;
                // SAFETY: forwarded to the caller's contract.
                unsafe {
                    asm!(
                        concat!("ld.shared.", $ptx, " {v}, [{a}];"),
                        v = out($class) v, a = in(reg32) addr,
                        options(readonly, nostack, preserves_flags),
                    );
                }
                v
            }
            #[inline(always)]
            unsafe fn st_shared(addr: u32, v: Self) {
                // SAFETY: forwarded to the caller's contract.
                unsafe {
                    asm!(
                        concat!("st.shared.", $ptx, " [{a}], {v};"),
                        a = in(reg32) addr, v = in($class) v,
                        options(nostack, preserves_flags),
                    );
                }
            }
        }
    )*};
}

shared_elem! {
    f32 => "f32", reg32;
    u32 => "u32", reg32;
    i32 => "s32", reg32;
    f64 => "f64", reg64;
    u64 => "u64", reg64;
}

/// Stores `v`'s bits (`S` of 1, 2, 4 or 8 bytes) at shared-window address
/// `addr`: a value of a generic storage type, by its size.
///
/// # Safety
/// `addr` inside this block's shared memory, aligned for `S`.
#[inline(always)]
pub unsafe fn st_raw<S: Copy>(addr: u32, v: S) {
    const { assert!(matches!(core::mem::size_of::<S>(), 1 | 2 | 4 | 8)) };
    // SAFETY: same size (each arm); the caller's contract.
    unsafe {
        match core::mem::size_of::<S>() {
            1 => {
                let b = core::mem::transmute_copy::<S, u8>(&v) as u16;
                asm!("st.shared.u8 [{a}], {v};", a = in(reg32) addr, v = in(reg16) b,
                     options(nostack, preserves_flags));
            }
            2 => {
                let h = core::mem::transmute_copy::<S, u16>(&v);
                asm!("st.shared.u16 [{a}], {v};", a = in(reg32) addr, v = in(reg16) h,
                     options(nostack, preserves_flags));
            }
            4 => u32::st_shared(addr, core::mem::transmute_copy::<S, u32>(&v)),
            _ => u64::st_shared(addr, core::mem::transmute_copy::<S, u64>(&v)),
        }
    }
}

/// A typed view of shared memory starting at a shared-window address.
#[derive(Clone, Copy)]
pub struct Shared<T> {
    base: u32,
    _t: core::marker::PhantomData<T>,
}

impl<T: SharedElem> Shared<T> {
    /// A view starting at shared-window address `base`.
    ///
    /// # Safety
    /// `base` must be aligned for `T` and the elements later accessed must
    /// lie inside shared memory this block owns.
    #[inline(always)]
    pub const unsafe fn from_addr(base: u32) -> Self {
        Self { base, _t: core::marker::PhantomData }
    }

    /// The shared-window address of element `i` (for vector accesses in
    /// inline PTX).
    #[inline(always)]
    pub fn addr_of(self, i: usize) -> u32 {
        self.base + (i * core::mem::size_of::<T>()) as u32
    }

    /// Element `i`.
    ///
    /// # Safety
    /// `i` must be inside the array; no other thread may be writing it
    /// without a barrier in between.
    #[inline(always)]
    pub unsafe fn read(self, i: usize) -> T {
        // SAFETY: forwarded to the caller's contract.
        unsafe { T::ld_shared(self.base + (i * core::mem::size_of::<T>()) as u32) }
    }

    /// Sets element `i`.
    ///
    /// # Safety
    /// As [`Shared::read`].
    #[inline(always)]
    pub unsafe fn write(self, i: usize, v: T) {
        // SAFETY: forwarded to the caller's contract.
        unsafe { T::st_shared(self.base + (i * core::mem::size_of::<T>()) as u32, v) }
    }
}

core::arch::global_asm!(".extern .shared .align 16 .b8 COALESCE_DYNAMIC_SMEM[];");

/// The block's dynamic shared memory (the launch's `shared_mem_bytes`), as
/// an array of `T`.
///
/// # Safety
/// Accesses must stay inside the bytes the launch requested.
#[inline(always)]
pub unsafe fn dynamic<T: SharedElem>() -> Shared<T> {
    let a: u32;
    // SAFETY: takes the symbol's address; no memory access.
    unsafe {
        asm!("mov.u32 {a}, COALESCE_DYNAMIC_SMEM;", a = out(reg32) a, options(pure, nomem, nostack, preserves_flags));
        Shared::from_addr(a)
    }
}

/// Declares a static shared array (module-level item) and a zero-sized
/// handle whose `view()` returns a [`Shared`] view of it.
///
/// ```ignore
/// coalesce_kernels::shared_array!(TILE: [f32; 256], align 16, "f32");
/// let tile = TILE::view();
/// unsafe { tile.write(t, x) };
/// ```
///
/// Every kernel that references the array gets its bytes as static shared
/// memory (ptxas reports them per kernel).
#[macro_export]
macro_rules! shared_array {
    ($(#[$meta:meta])* $name:ident: [$t:ty; $len:literal], align $align:literal, $ptx:literal) => {
        ::core::arch::global_asm!(concat!(
            ".shared .align ", stringify!($align), " .", $ptx, " ",
            stringify!($name), "[", stringify!($len), "];"
        ));

        $(#[$meta])*
        #[allow(non_camel_case_types)]
        struct $name;

        impl $name {
            /// Number of elements.
            #[allow(dead_code)]
            const LEN: usize = $len;

            /// A typed view of the array.
            #[inline(always)]
            fn view() -> $crate::dev::shared::Shared<$t> {
                let a: u32;
                // SAFETY: takes the symbol's address (no memory access);
                // the symbol is declared above with this element type.
                unsafe {
                    ::core::arch::asm!(
                        concat!("mov.u32 {a}, ", stringify!($name), ";"),
                        a = out(reg32) a,
                        options(pure, nomem, nostack, preserves_flags),
                    );
                    $crate::dev::shared::Shared::<$t>::from_addr(a)
                }
            }
        }
    };
}
