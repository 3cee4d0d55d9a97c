//! What the compiler emitted for the texture kernels, checked without a
//! GPU (each embedded PTX assembled with `ptxas`, disassembled with
//! `cuobjdump`):
//!
//! * every texture kernel reads through the texture unit (`TEX`, bindless:
//!   the handle is a kernel parameter) and the convolution and resize
//!   kernels read the image no other way: the constant-mask convolutions
//!   and the resize kernel have no global load at all, the `_gm_`
//!   convolutions only the mask's;
//! * the constant-mask convolutions read the mask from their last
//!   parameter (constant bank 0);
//! * the blocked convolution stores four outputs at once (`STG.E.128`);
//! * no texture kernel has a stack frame, spills or local memory.
//!
//! Tools as in `tests/sass.rs`; absent tools print one skip line unless
//! `COALESCE_REQUIRE_SASS_TOOLS=1`.

mod common;

use coalesce::inspect::Access;
use common::sass::compiled;

const KERNELS: [&str; 6] = [
    "tex_fetch_2d",
    "tex_conv2d_f32",
    "tex_conv2d_gm_f32",
    "tex_conv2d_blocked_f32",
    "tex_conv2d_blocked_gm_f32",
    "tex_resize_f32",
];

#[test]
fn texture_kernels_fetch_through_the_texture_unit() {
    for c in compiled("texture_kernels_fetch_through_the_texture_unit") {
        for k in KERNELS {
            let sass = c.kernel(k).unwrap_or_else(|| panic!("sm_{}: {k} is not in the module", c.arch));
            assert!(sass.iter().any(|i| i.base() == "TEX"), "sm_{} {k}: no TEX instruction", c.arch);
        }
        let loads = |k: &str| {
            c.kernel(k).unwrap().iter().filter(|i| i.global_access().is_some_and(|a| a.0 == Access::Load)).count()
        };
        for k in ["tex_conv2d_f32", "tex_conv2d_blocked_f32", "tex_resize_f32"] {
            assert_eq!(loads(k), 0, "sm_{} {k}: global loads besides the texture", c.arch);
        }
        for k in ["tex_conv2d_gm_f32", "tex_conv2d_blocked_gm_f32", "tex_fetch_2d"] {
            assert!(loads(k) > 0, "sm_{} {k}: its mask or coordinates should come from global memory", c.arch);
        }
    }
}

#[test]
fn constant_masks_come_from_the_constant_bank() {
    for c in compiled("constant_masks_come_from_the_constant_bank") {
        for k in ["tex_conv2d_f32", "tex_conv2d_blocked_f32"] {
            let taps = common::sass::last_param_reads(&c, k);
            assert!(!taps.is_empty(), "sm_{} {k}: the mask is not read from its parameter", c.arch);
        }
    }
}

#[test]
fn blocked_convolution_stores_four_outputs_at_once() {
    for c in compiled("blocked_convolution_stores_four_outputs_at_once") {
        for k in ["tex_conv2d_blocked_f32", "tex_conv2d_blocked_gm_f32"] {
            assert!(c.global_widths(k).contains(&(Access::Store, 128)), "sm_{} {k}: {:?}", c.arch, c.global_widths(k));
        }
    }
}

#[test]
fn no_stack_spills_or_local_memory() {
    for c in compiled("no_stack_spills_or_local_memory") {
        for k in KERNELS {
            let r = c.resources_of(k).unwrap_or_else(|| panic!("sm_{}: no resources for {k}", c.arch));
            println!("sm_{} {:<26} {:>3} regs", c.arch, r.name, r.registers);
            assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "sm_{} {k}", c.arch);
            let local = c.kernel(k).unwrap().iter().any(|i| i.base() == "LDL" || i.base() == "STL");
            assert!(!local, "sm_{} {k}: local memory", c.arch);
        }
    }
}
