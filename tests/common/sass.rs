//! The embedded PTX, assembled with `ptxas` and disassembled with
//! `cuobjdump` once per test binary, for the SASS checks (no GPU needed).
//!
//! Tools: `$COALESCE_SASS_TOOLS`, `.tools/sass/bin`, `/usr/local/cuda/bin`
//! or `PATH`. If absent, a test prints one skip line, unless
//! `COALESCE_REQUIRE_SASS_TOOLS=1` (CI), which makes absence a failure. An
//! architecture the found `ptxas` cannot target (CUDA 13 and sm_70) is
//! skipped the same way.

use std::io::Write as _;

use coalesce::inspect::{Compiled, Tools};
use coalesce::{Error, ptx};

/// Every embedded architecture the tools support, assembled once.
pub fn compiled(test: &str) -> Vec<Compiled> {
    static ONCE: std::sync::OnceLock<Vec<Compiled>> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| assemble(test)).clone()
}

fn assemble(test: &str) -> Vec<Compiled> {
    let skip = |why: String| {
        assert!(!Tools::required(), "{test}: COALESCE_REQUIRE_SASS_TOOLS is set but {why}");
        let _ = writeln!(std::io::stderr(), "{test}: skipped: {why}");
    };
    let Some(tools) = Tools::find() else {
        skip("ptxas/cuobjdump not found (set COALESCE_SASS_TOOLS or run scripts/setup-build-machine.sh)".into());
        return vec![];
    };
    let mut out = Vec::new();
    for arch in ptx::archs() {
        match tools.compile(ptx::text(arch).expect("listed arch"), arch) {
            Ok(c) => out.push(c),
            Err(Error::ToolArch { message, .. }) => skip(format!("this ptxas cannot assemble sm_{arch}: {message}")),
            Err(e) => panic!("{test}: sm_{arch}: {e}"),
        }
    }
    out
}

/// Asserts that kernel `r.name` of `c` has no stack frame, no spills and
/// no local-memory access, or, for a kernel listed in
/// `coalesce_kernels::conv::ENTRY_SPILLS`, at most its spill bytes with no
/// local-memory access (`LDL`/`STL`) inside an innermost loop (the hot
/// loops stay in registers).
pub fn assert_spills_allowed(c: &Compiled, r: &coalesce::inspect::KernelResources) {
    let sass = c.kernel(&r.name).unwrap_or_else(|| panic!("sm_{}: {} not in the SASS", c.arch, r.name));
    let local: Vec<&coalesce::inspect::Instr> = sass.iter().filter(|i| matches!(i.base(), "LDL" | "STL")).collect();
    let allowance = coalesce_kernels::conv::ENTRY_SPILLS.iter().find(|(n, _)| *n == r.name).map(|&(_, b)| b);
    let Some(bytes) = allowance else {
        assert_eq!(
            (r.stack_frame, r.spill_stores, r.spill_loads),
            (0, 0, 0),
            "sm_{} {}: stack / spills",
            c.arch,
            r.name
        );
        assert!(local.is_empty(), "sm_{} {}: local-memory accesses {local:?}", c.arch, r.name);
        return;
    };
    assert!(
        r.spill_stores <= bytes,
        "sm_{} {}: {} spill-store bytes, over its {bytes}",
        c.arch,
        r.name,
        r.spill_stores
    );
    let loops = coalesce::inspect::innermost_loops(sass);
    assert!(!loops.is_empty(), "sm_{} {}: no loop found in the SASS", c.arch, r.name);
    let hot: Vec<_> = local.iter().filter(|i| loops.iter().any(|&(a, b)| a <= i.address && i.address <= b)).collect();
    assert!(
        hot.is_empty(),
        "sm_{} {}: local-memory accesses inside innermost loops {loops:x?}: {hot:?}",
        c.arch,
        r.name
    );
}
