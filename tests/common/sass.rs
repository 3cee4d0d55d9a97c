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

/// Kernel `kernel`'s reads of its last parameter (the mask of the
/// constant-mask convolutions, passed by value), from its bank-0 operands:
/// those whose immediate offset falls in that parameter, and every read
/// through a register (`c[0x0][R5+0x160]`: only an array passed by value
/// is indexed at run time, and `ptxas` may fold the array's own offset
/// into the register, so the immediate alone does not place it).
pub fn last_param_reads(c: &Compiled, kernel: &str) -> Vec<coalesce::inspect::BankRead> {
    use coalesce::inspect::{param_bank_start, param_offsets};
    let text = ptx::text(c.arch).expect("compiled from an embedded PTX");
    let sizes = ptx::entry_params(text)
        .into_iter()
        .find(|(name, _)| name == kernel)
        .map(|(_, sizes)| sizes)
        .unwrap_or_else(|| panic!("sm_{}: {kernel} is not in the PTX", c.arch));
    let (Some(&last), Some(&size)) = (param_offsets(&sizes).last(), sizes.last()) else { return vec![] };
    let start = param_bank_start(c.arch);
    let last = start + last..start + last + size as u32;
    c.kernel(kernel)
        .unwrap_or_else(|| panic!("sm_{}: {kernel} has no SASS", c.arch))
        .iter()
        .flat_map(|i| i.bank0_reads())
        .filter(|r| last.contains(&r.offset) || (r.register && r.offset >= start))
        .collect()
}
